"""The compaction prompt and the LLM answer parser (app/adapters/summarisers/gateway.py)."""

import pytest

from app.adapters.summarisers.base import Summary
from app.adapters.summarisers.gateway import build_compaction_messages, parse_llm_summary
from tests.adapters.test_extractive import FACTS, realistic_events


def test_compaction_messages() -> None:
    events = realistic_events()
    messages = build_compaction_messages(
        list(reversed(events)), scope_label="client:acme", period_label="2024-H1"
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    for rule in ("strategic decision", "relationship dynamic", "recurring pattern", "verbatim"):
        assert rule in system.replace("exactly as written", "verbatim")
    assert "it was discussed that" in system and "first line is a title" in system
    assert "client:acme" in user and "2024-H1" in user
    first, last = events[0].occurred_at.isoformat(), events[-1].occurred_at.isoformat()
    assert user.index(f"at={first}") < user.index(f"at={last}")  # oldest first
    assert FACTS[7] in user and user.count("<event ") == len(events)


GOOD_BODY = "- Acme approved $45,000 on 2024-02-22.\n- Priya Raman prefers email."


@pytest.mark.parametrize(
    ("answer", "title"),
    [
        (f"Acme: 2024-H1\n\n{GOOD_BODY}", "Acme: 2024-H1"),
        (f"# Acme: 2024-H1\n\n{GOOD_BODY}", "Acme: 2024-H1"),
        (f"## Title: Acme: 2024-H1\n{GOOD_BODY}", "Acme: 2024-H1"),
        (f"Title: **Acme: 2024-H1**\n\n{GOOD_BODY}\n", "Acme: 2024-H1"),
        (f"\n\n```markdown\nAcme: 2024-H1\n\n{GOOD_BODY}\n```\n", "Acme: 2024-H1"),
    ],
)
def test_parse_accepts_good_answers(answer: str, title: str) -> None:
    assert parse_llm_summary(answer) == Summary(title=title, body=GOOD_BODY)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty"),
        ("  \n\t\n ", "empty"),
        (f"#\n\n{GOOD_BODY}", "no usable title"),
        (f"Title:   \n\n{GOOD_BODY}", "no usable title"),
        ("x" * 201 + f"\n\n{GOOD_BODY}", "title too long"),
        ("Acme: 2024-H1\n\n   \n", "body is empty"),
        ("Acme: 2024-H1", "body is empty"),
        ("Acme: 2024-H1\n\n" + "y" * 20001, "body too long"),
    ],
)
def test_parse_rejects_unusable_answers(answer: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_llm_summary(answer)


def test_parse_limits_are_configurable() -> None:
    with pytest.raises(ValueError, match="title too long"):
        parse_llm_summary(f"A long title\n\n{GOOD_BODY}", max_title=5)
    assert parse_llm_summary("T\n\nshort", max_body=5).body == "short"
