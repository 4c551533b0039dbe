"""HTTP short cuts around Strawberry's view and starlette, used only with the GraphQL fast
path on (Settings.graphql_fast_path); docs/fast-paths.md lists them."""
