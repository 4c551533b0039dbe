"""The validation cache (app/graphql/fastpath/runner.py) answers what validate_document does,
keyed by the schema, the parse cache's document object and the rules, and bounded."""

import pytest
from graphql import parse, specified_rules
from graphql.validation import NoSchemaIntrospectionCustomRule
from strawberry.schema.schema import validate_document

from app.graphql.fastpath import runner
from app.graphql.schema import build_schema

RULES = tuple(specified_rules)


def test_same_results_as_validate_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_validated", {})
    schema = build_schema(fast_path=True)._schema
    good = parse("{ memoryEvents { edges { cursor } } }")
    bad = parse("{ memoryEvents { nope } }")
    introspect = parse("{ __schema { types { name } } }")
    for document in (good, bad, introspect):
        for rules in (RULES, (*RULES, NoSchemaIntrospectionCustomRule)):
            ours = runner.cached_validate(schema, document, rules)
            theirs = validate_document(schema, document, rules)
            assert [e.formatted for e in ours] == [e.formatted for e in theirs]
            assert runner.cached_validate(schema, document, rules) is ours  # cached
    assert runner.cached_validate(schema, bad, RULES)
    assert not runner.cached_validate(schema, introspect, RULES)
    assert runner.cached_validate(schema, introspect, (*RULES, NoSchemaIntrospectionCustomRule))
    # An equal document parsed again is another object: validated again, same answer.
    again = parse("{ memoryEvents { nope } }")
    assert [e.formatted for e in runner.cached_validate(schema, again, RULES)] == [
        e.formatted for e in runner.cached_validate(schema, bad, RULES)
    ]


def test_bounded_and_keeps_its_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_validated", {})
    monkeypatch.setattr(runner, "CACHE_SIZE", 3)
    schema = build_schema(fast_path=True)._schema
    for i in range(10):
        document = parse(f"{{ a{i}: memoryEvents {{ edges {{ cursor }} }} }}")
        assert runner.cached_validate(schema, document, RULES) == []
        assert len(runner._validated) <= 3
    for (schema_id, document_id, _rules), (s, d, _errors) in runner._validated.items():
        assert (schema_id, document_id) == (id(s), id(d))
