"""The document cost bound: what it refuses, what it lets through, and that its walk
agrees with a brute-force expansion on generated fragment graphs."""

from graphql import get_introspection_query, parse
from hypothesis import given, settings
from hypothesis import strategies as st

from app.graphql.document_cost import document_cost_errors
from app.graphql.schema import schema
from app.services.limits import (
    GRAPHQL_MAX_DIRECTIVES,
    GRAPHQL_MAX_FIELDS,
    GRAPHQL_MAX_FRAGMENTS,
    GRAPHQL_MAX_OPERATIONS,
    GRAPHQL_MAX_VALUES,
    GRAPHQL_MAX_VARIABLES,
)


def fan_out(levels: int) -> str:
    """Each fragment spreads the next twice: 2**levels fields from a tiny document."""
    fragments = [f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(levels)]
    return "query Q { ...F0 }\n" + "\n".join(
        [*fragments, f"fragment F{levels} on Query {{ a: __typename }}"]
    )


def messages(document: str) -> list[str]:
    return [e.message for e in document_cost_errors(parse(document))]


def test_introspection_and_ordinary_documents_pass() -> None:
    assert messages(get_introspection_query(descriptions=True)) == []
    assert (
        messages(
            '{ memoryEvents(filter: {scope: ENTITY, scopeRef: "a"}) '
            "{ edges { node { id kind } } } }"
        )
        == []
    )


def test_fragment_fan_out_is_refused_before_validation() -> None:
    for levels in (10, 22, 29):
        assert messages(fan_out(levels)) == [
            f"The document selects more than {GRAPHQL_MAX_FIELDS} fields once its fragments "
            f"are expanded; the limit is {GRAPHQL_MAX_FIELDS}."
        ]


def test_repeated_unaliased_fields_are_refused() -> None:
    document = "{ " + " ".join('memoryEvent(id: "a") { id }' for _ in range(100)) + " }"
    assert "same response name too often" in messages(document)[0]
    # A few repeats, as fragments that overlap produce, are fine.
    assert messages("{ __typename " + " ".join("__typename" for _ in range(10)) + " }") == []


def test_each_written_limit_names_itself() -> None:
    cases = {
        "fragment definitions": (
            "{ __typename }\n"
            + "\n".join(
                f"fragment F{i} on Query {{ __typename }}" for i in range(GRAPHQL_MAX_FRAGMENTS + 1)
            ),
            GRAPHQL_MAX_FRAGMENTS,
        ),
        "operations": (
            "\n".join(f"query O{i} {{ __typename }}" for i in range(GRAPHQL_MAX_OPERATIONS + 1)),
            GRAPHQL_MAX_OPERATIONS,
        ),
        "directives": (
            "{ __typename "
            + " ".join("@include(if: true)" for _ in range(GRAPHQL_MAX_DIRECTIVES + 1))
            + " }",
            GRAPHQL_MAX_DIRECTIVES,
        ),
        "variable definitions": (
            "query Q("
            + " ".join(f"$v{i}: Int" for i in range(GRAPHQL_MAX_VARIABLES + 1))
            + ") { __typename }",
            GRAPHQL_MAX_VARIABLES,
        ),
        "literal values": (
            '{ memoryEvents(filter: {scope: ENTITY, scopeRef: "a", kinds: ['
            + ",".join('"k"' for _ in range(GRAPHQL_MAX_VALUES))
            + "]}) { edges { cursor } } }",
            GRAPHQL_MAX_VALUES,
        ),
    }
    for what, (document, limit) in cases.items():
        [message] = messages(document)
        assert what in message and f"the limit is {limit}" in message, (what, message)


def test_aliases_are_refused_with_the_alias_rules_words() -> None:
    document = "{ " + " ".join(f"a{i}: __typename" for i in range(900)) + " }"
    assert messages(document) == ["900 aliases found. Allowed: 20"]


def test_fragment_cycles_are_left_to_validation() -> None:
    document = "{ ...A }\nfragment A on Query { __typename ...B }\nfragment B on Query { ...A }"
    assert messages(document) == []
    result = schema._schema  # validation proper reports the cycle
    from graphql import specified_rules
    from strawberry.schema.schema import validate_document

    errors = validate_document(result, parse(document), tuple(specified_rules))
    assert any("Cannot spread fragment" in e.message for e in errors)


def brute_force_fields(
    fragments: dict[str, list[str | int]], selection: list[str | int], cap: int
) -> int:
    """Fields of a selection with every spread expanded by recursion (exponential, capped)."""
    total = 0
    for item in selection:
        if total > cap:
            break
        total += 1 if isinstance(item, int) else brute_force_fields(fragments, fragments[item], cap)
    return total


@st.composite
def fragment_graphs(draw: st.DrawFn) -> tuple[dict[str, list[str | int]], list[str | int]]:
    """A DAG of fragments: fragment i spreads only fragments j > i, plus some fields."""
    count = draw(st.integers(1, 12))
    fragments: dict[str, list[str | int]] = {}
    for i in reversed(range(count)):
        later = [f"F{j}" for j in range(i + 1, count)]
        items: list[str | int] = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 3)))]
        if later:
            items += draw(st.lists(st.sampled_from(later), max_size=4))
        fragments[f"F{i}"] = items or [0]
    root = draw(st.lists(st.sampled_from(list(fragments)), min_size=1, max_size=4))
    return fragments, list(root)


def render(fragments: dict[str, list[str | int]], root: list[str | int]) -> str:
    def selection(items: list[str | int]) -> str:
        # Distinct aliases would count against the alias limit; distinct introspection
        # fields keep each field's response name unique without aliases.
        names = iter(
            ("__typename", "__schema { description }", '__type(name: "Query") { name }') * 100
        )
        parts = [f"...{i}" if isinstance(i, str) else next(names) for i in items]
        return "{ " + " ".join(parts) + " }"

    body = "\n".join(f"fragment {n} on Query {selection(items)}" for n, items in fragments.items())
    return f"query Q {selection(root)}\n{body}"


@settings(max_examples=200, deadline=None)
@given(fragment_graphs())
def test_generated_fan_outs_are_bounded(
    graph: tuple[dict[str, list[str | int]], list[str | int]],
) -> None:
    fragments, root = graph
    document = render(fragments, root)
    expanded = brute_force_fields(
        {n: [x for x in items] for n, items in fragments.items()}, root, GRAPHQL_MAX_FIELDS
    )
    found = messages(document)
    if expanded > GRAPHQL_MAX_FIELDS:
        assert found, "a document over the field limit was let through"
    elif not found:
        # Accepted documents are ones whose expansion the walk measured within the limit.
        assert expanded <= GRAPHQL_MAX_FIELDS
