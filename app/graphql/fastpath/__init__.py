"""Every short cut around Strawberry and graphql-core, each module one of them, all behind
one switch (Settings.graphql_fast_path). docs/fast-paths.md lists what each replaces, the
private names it touches (pinned in pyproject.toml), its equivalence test and its gain.
"""

from collections.abc import Callable
from functools import cache
from typing import Any

import strawberry
from graphql import ASTValidationRule, GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.types import ExecutionContext

from app.graphql.fastpath import resolvers
from app.graphql.fastpath.prepared import PreparedExecutionContext
from app.graphql.fastpath.runner import OperationPolicy, PolicyExtensionsRunner


class PolicySchema(strawberry.Schema):
    """A schema whose per-operation work is its policy, run by `PolicyExtensionsRunner`
    instead of one Strawberry extension each (app/graphql/extensions.py)."""

    def __init__(self, *, policy: OperationPolicy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.policy = policy

    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        return PolicyExtensionsRunner(execution_context, extensions, self.policy)


@cache
def _fast_class(schema_class: type[strawberry.Schema]) -> type[PolicySchema]:
    return type(f"Policy{schema_class.__name__}", (PolicySchema, schema_class), {})


def build(
    schema_class: type[strawberry.Schema],
    query: Any,
    mutation: Any,
    *,
    scalar_overrides: dict[object, Any],
    subscription: Any = None,
    max_tokens: int,
    validation_rules: tuple[type[ASTValidationRule], ...],
    should_mask_error: Callable[[GraphQLError], bool],
) -> strawberry.Schema:
    """`schema_class(query=, mutation=)` with the short cuts, doing what the stock
    schema's `operation_extensions` do (app/graphql/extensions.py)."""
    policy = OperationPolicy(
        max_tokens=max_tokens,
        validation_rules=validation_rules,
        should_mask_error=should_mask_error,
    )
    schema = _fast_class(schema_class)(
        query=query,
        mutation=mutation,
        subscription=subscription,
        execution_context_class=PreparedExecutionContext,
        scalar_overrides=scalar_overrides,
        policy=policy,
    )
    resolvers.install(schema)  # this schema's graphql-core fields only
    return schema
