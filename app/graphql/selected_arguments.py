"""Arguments of the fields a mutation's answer selects, checked before the mutation writes:
one found bad only once the write is done would null what was written (the client loses its
id, and a retry writes it twice). Only what needs no database is checked here.
"""

from collections.abc import Iterable
from typing import Any

from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField

from app.errors import ExpectedError
from app.graphql.errors import QueryError
from app.services.entries import source_events_position


def check_selected_arguments(info: Any) -> None:
    """Raise the QueryError a selected field's arguments would raise once resolved."""
    _check(info.selected_fields)


def _check(selections: Iterable[SelectedField | FragmentSpread | InlineFragment]) -> None:
    for selection in selections:
        if isinstance(selection, SelectedField) and selection.name == "sourceEvents":
            # Strawberry gives a literal as its text (validation made it an Int) and a
            # variable's value as coerced: int() reads both.
            first = selection.arguments.get("first")
            try:
                source_events_position(
                    first=50 if first is None else int(first),
                    after=selection.arguments.get("after"),
                )
            except ExpectedError as exc:
                raise QueryError(exc.at("sourceEvents")) from None
        _check(selection.selections)
