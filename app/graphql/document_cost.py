"""Refuses a document whose validation would cost more than a bound, before validation.

graphql-core's rules (and the depth limiter) re-walk a fragment at every spread, and field
merging compares same-named fields pairwise; this walk is linear in the document (each
fragment summarised once) and runs first, so no document costs more than a bounded amount.
"""

from collections import Counter
from dataclasses import dataclass, field

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    Node,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
    VariableDefinitionNode,
)

from app.services.limits import (
    GRAPHQL_MAX_ALIASES,
    GRAPHQL_MAX_DIRECTIVES,
    GRAPHQL_MAX_FIELD_PAIRS,
    GRAPHQL_MAX_FIELDS,
    GRAPHQL_MAX_FRAGMENTS,
    GRAPHQL_MAX_OPERATIONS,
    GRAPHQL_MAX_SPREADS,
    GRAPHQL_MAX_VALUES,
    GRAPHQL_MAX_VARIABLES,
)

# Sizes are capped just past the largest limit so that a fan-out's sums stay small numbers.
_CAP = max(GRAPHQL_MAX_FIELDS, GRAPHQL_MAX_FIELD_PAIRS) + 1


@dataclass(slots=True)
class _Summary:
    """A selection set with its spreads expanded: how many fields, and per response name at
    its top level, how many fields share it and how many fields lie below them."""

    fields: int = 0
    names: Counter[str] = field(default_factory=Counter)
    below: Counter[str] = field(default_factory=Counter)
    nested: int = 0  # field-merging comparisons below the top level, weighted

    def add(self, other: "_Summary") -> None:
        self.grow(other.fields)
        self.names.update(other.names)
        self.below.update(other.below)
        self.nested = min(self.nested + other.nested, _CAP)

    @property
    def pairs(self) -> int:
        """Field-merging comparisons of the whole selection set, weighted by what each
        pair compares below it (a pair of leaves counts 1)."""
        total = self.nested
        for name, count in self.names.items():
            if count > 1:
                total += count * (count - 1) // 2 * (1 + self.below[name] // count)
        return total

    def grow(self, fields: int) -> None:
        # Stops the walk as soon as the document is over the limit, so that merging the
        # names of a wide fan-out never costs more than the limit's worth.
        self.fields += fields
        if self.fields > GRAPHQL_MAX_FIELDS:
            raise _OverLimit


class _OverLimit(Exception):
    pass


def document_cost_errors(document: DocumentNode) -> list[GraphQLError]:
    """The limit errors of a document (empty when it is within every bound)."""
    definitions = document.definitions
    fragments = {d.name.value: d for d in definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [d for d in definitions if isinstance(d, OperationDefinitionNode)]
    directives, spreads, aliases, variables, values = _written(document)
    if aliases > GRAPHQL_MAX_ALIASES:
        # The same words as the alias rule (MaxAliasesLimiter), before validation runs it.
        return [GraphQLError(f"{aliases} aliases found. Allowed: {GRAPHQL_MAX_ALIASES}")]
    checks = (
        (len(fragments), GRAPHQL_MAX_FRAGMENTS, "fragment definitions"),
        (len(operations), GRAPHQL_MAX_OPERATIONS, "operations"),
        (directives, GRAPHQL_MAX_DIRECTIVES, "directives"),
        (spreads, GRAPHQL_MAX_SPREADS, "fragment spreads"),
        (variables, GRAPHQL_MAX_VARIABLES, "variable definitions"),
        (values, GRAPHQL_MAX_VALUES, "literal values"),
    )
    for count, limit, what in checks:
        if count > limit:
            return [GraphQLError(f"The document has {count} {what}; the limit is {limit}.")]
    summaries: dict[str, _Summary] = {}
    total = _Summary()
    try:
        for name in _dependency_order(fragments):
            summaries[name] = _summarise(fragments[name].selection_set, summaries)
        for operation in operations:
            total.add(_summarise(operation.selection_set, summaries))
    except _OverLimit:
        return [
            GraphQLError(
                f"The document selects more than {GRAPHQL_MAX_FIELDS} fields once its "
                f"fragments are expanded; the limit is {GRAPHQL_MAX_FIELDS}."
            )
        ]
    if total.pairs > GRAPHQL_MAX_FIELD_PAIRS:
        return [
            GraphQLError(
                "The document selects the same response name too often in one selection "
                f"set (more than {GRAPHQL_MAX_FIELD_PAIRS} field comparisons); give the "
                "fields aliases or select each once."
            )
        ]
    return []


def _written(document: DocumentNode) -> tuple[int, int, int, int, int]:
    """Directives, fragment spreads, aliases, variable definitions and literal values
    (list items and object fields) as written, each counted once."""
    directives = spreads = aliases = variables = values = 0
    stack: list[Node] = [document]
    while stack:
        node = stack.pop()
        directives += len(getattr(node, "directives", None) or ())
        spreads += isinstance(node, FragmentSpreadNode)
        aliases += isinstance(node, FieldNode) and node.alias is not None
        variables += isinstance(node, VariableDefinitionNode)
        values += isinstance(node, ValueNode)
        for key in node.keys:
            value = getattr(node, key, None)
            if isinstance(value, Node):
                stack.append(value)
            elif isinstance(value, tuple | list):
                stack.extend(v for v in value if isinstance(v, Node))
    return directives, spreads, aliases, variables, values


def _spread_names(selection_set: SelectionSetNode) -> set[str]:
    names: set[str] = set()
    stack = [selection_set]
    while stack:
        for selection in stack.pop().selections:
            if isinstance(selection, FragmentSpreadNode):
                names.add(selection.name.value)
            elif isinstance(selection, FieldNode | InlineFragmentNode) and selection.selection_set:
                stack.append(selection.selection_set)
    return names


def _dependency_order(fragments: dict[str, FragmentDefinitionNode]) -> list[str]:
    """Fragments, each after those it spreads. A cycle is left out (its spreads count as
    empty here); validation's NoFragmentCycles rule reports it."""
    uses = {n: _spread_names(f.selection_set) & fragments.keys() for n, f in fragments.items()}
    order: list[str] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done
    for start in fragments:
        if state.get(start):
            continue
        stack = [(start, iter(sorted(uses[start])))]
        state[start] = 1
        while stack:
            name, pending = stack[-1]
            nxt = next((u for u in pending if not state.get(u)), None)
            if nxt is None:
                stack.pop()
                state[name] = 2
                order.append(name)
            else:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(uses[nxt]))))
    return order


def _summarise(root: SelectionSetNode, fragments: dict[str, _Summary]) -> _Summary:
    """Post-order over nested selection sets (iterative: nesting can be ~200 deep)."""
    done: dict[int, _Summary] = {}
    stack: list[tuple[SelectionSetNode, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if not children_done:
            stack.append((node, True))
            stack.extend(
                (s.selection_set, False)
                for s in node.selections
                if isinstance(s, FieldNode | InlineFragmentNode) and s.selection_set is not None
            )
            continue
        summary = _Summary()
        for selection in node.selections:
            if isinstance(selection, FieldNode):
                key = (selection.alias or selection.name).value
                child = done.pop(id(selection.selection_set), None)
                below = child.fields if child else 0
                summary.grow(1 + below)
                summary.names[key] += 1
                summary.below[key] += below
                if child:
                    summary.nested = min(summary.nested + child.pairs, _CAP)
            elif isinstance(selection, InlineFragmentNode):
                summary.add(done.pop(id(selection.selection_set)))
            elif isinstance(selection, FragmentSpreadNode):
                known = fragments.get(selection.name.value)
                if known is not None:
                    summary.add(known)
        done[id(node)] = summary
    return done[id(root)]
