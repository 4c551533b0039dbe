"""What a REST operation documents, declared beside its handler with @operation: its query
and body models, the ids in its path, the request headers it reads, its answers and the
problems it may answer. app/edge/rest/openapi.py makes the OpenAPI document of these and of
the route table; nothing here runs on a request."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.edge.rest.models import QueryModel

H = TypeVar("H", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Answer:
    """A successful answer: `body` is a Noun (response_models.py), a response model, a tuple
    of them (one of), any other type pydantic documents, or None for no content; `headers`
    are response headers besides X-Request-Id (components/headers of the document)."""

    description: str
    body: Any = None
    headers: tuple[str, ...] = ()
    media: str = "application/json"


@dataclass(frozen=True, slots=True)
class Operation:
    operation_id: str
    summary: str
    answers: Mapping[int, Answer]
    # Besides those every route may answer, and those of a body or a query (openapi.py).
    problems: tuple[int, ...] = ()
    description: str | None = None
    query: type[QueryModel] | None = None
    body: Any = None  # a request model, or a tuple of them (one of)
    path: Mapping[str, str] = field(default_factory=dict)  # parameter → its id kind (app.ids)
    headers: tuple[str, ...] = ()  # request headers it reads (documented in openapi.py)


OPERATIONS: dict[Callable[..., Any], Operation] = {}


def operation(
    operation_id: str,
    summary: str,
    answers: Mapping[int, Answer],
    *,
    problems: tuple[int, ...] = (),
    description: str | None = None,
    query: type[QueryModel] | None = None,
    body: Any = None,
    path: Mapping[str, str] | None = None,
    headers: tuple[str, ...] = (),
) -> Callable[[H], H]:
    """Record what the decorated handler documents; the handler itself is left as it is."""
    declared = Operation(
        operation_id,
        summary,
        answers,
        problems,
        description,
        query,
        body,
        dict(path or {}),
        headers,
    )

    def register(handler: H) -> H:
        OPERATIONS[handler] = declared
        return handler

    return register
