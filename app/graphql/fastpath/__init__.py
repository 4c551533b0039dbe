"""Every short cut around Strawberry and graphql-core, each module one of them, all behind
one switch (Settings.graphql_fast_path). docs/fast-paths.md lists what each replaces, the
private names it touches (pinned in pyproject.toml), its equivalence test and its gain.
"""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import strawberry
from strawberry.extensions import SchemaExtension

from app.graphql.fastpath.executor import PlannedExecutionContext

S = TypeVar("S", bound=strawberry.Schema)


def build(
    schema_class: type[S],
    query: Any,
    mutation: Any,
    extensions: Sequence[Callable[[], SchemaExtension]],
) -> S:
    """`schema_class(query=, mutation=, extensions=)` with the short cuts installed."""
    return schema_class(
        query=query,
        mutation=mutation,
        extensions=list(extensions),
        execution_context_class=PlannedExecutionContext,
    )
