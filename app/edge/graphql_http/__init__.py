"""GraphQL over HTTP and the websocket at /graphql: Strawberry's view bound to the leased
tenant database (view), what a request carries (request), the offline GraphiQL page
(graphiql), the websocket's subscriptions, queries and mutations and its limits (websocket,
socket_operations, socket_limits), and the fenced short path of a POSTed operation
(fastpath, on with JET_GRAPHQL_FAST_PATH)."""
