"""The documented limits: part of the API contract (README "Limits"), enforced by services."""

EVENT_BODY_MAX_BYTES = 65_536
ENTRY_SUMMARY_MAX_BYTES = 32_768
TITLE_MAX_CHARS = 200
KIND_MAX_CHARS = 64
REF_MAX_CHARS = 200  # scopeRef, source, sourceRef, idempotencyKey
TAGS_MAX = 20
TAG_MAX_CHARS = 64
SEARCH_MAX_CHARS = 1_000
PAGE_MAX = 100
BATCH_MAX = 1_000
FUTURE_SKEW_HOURS = 24  # occurredAt may be at most this far in the future
# Values in one filter list (kinds, sources, tags): a list is bound as one parameter, so
# the cap bounds the work of one request, not the statement's size.
FILTER_VALUES_MAX = 100

# GraphQL operations (enforced by the schema's extensions, app/graphql/schema.py): bounds on
# the work one document can ask for. Introspection fields do not count towards the depth.
GRAPHQL_MAX_DEPTH = 10  # nested selections; the deepest useful query here is about 6
GRAPHQL_MAX_ALIASES = 20  # per document; each alias can be a separate search
GRAPHQL_MAX_TOKENS = 5_000  # lexical tokens of a document (GraphiQL's introspection: ~180)
