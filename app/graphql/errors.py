"""How an expected failure of a query reaches the client: a GraphQL error with
`extensions.code` and `extensions.field`, never masked."""

from graphql import GraphQLError

from app.errors import ExpectedError


class QueryError(GraphQLError):
    def __init__(self, exc: ExpectedError) -> None:
        super().__init__(exc.message, extensions={"code": exc.code.value, "field": exc.field})
