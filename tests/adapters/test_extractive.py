"""The built-in extractive summariser (app/adapters/summarisers/builtin.py)."""

from datetime import UTC, datetime

import pytest

from app.adapters.summarisers.base import EventText, Summary
from app.adapters.summarisers.builtin import BUILTIN_SUMMARISER_NAME, summarise_extractive


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


# Meeting-by-meeting prose: nothing a compacted memory needs, varied so dedup alone
# cannot remove it.
PROSE = [
    "The session opened with a round of introductions for the two new people on the call.",
    "There was a long back and forth about the layout of the slides for the review.",
    "Someone shared their screen and walked through the dashboard page by page.",
    "The conversation drifted to the office move and the coffee machine for a while.",
    "People compared notes on the conference they had attended the week before.",
    "The screen share froze twice and the group waited for the connection to recover.",
    "A few minutes went to small talk about holidays and the weather in the region.",
    "The group reviewed the agenda and reordered the topics to fit the time slot.",
    "Several people talked over each other while the notes were being taken.",
    "The meeting ran a little long and the last topic was covered quickly.",
]

FACTS = {
    1: "Priya Raman from Acme said her team is frustrated with the slow onboarding.",
    3: "We agreed to run a two-week pilot with the Acme support team.",
    5: "The pilot reduced ticket handling time by 18%.",
    7: "Acme approved the annual contract at $45,000, signed by Priya Raman.",
    8: "The kickoff deadline is 2024-03-31.",
    10: "We decided to move Acme to quarterly billing starting in Q3.",
    12: "Priya Raman prefers email over calls for status updates.",
}


def realistic_events() -> list[EventText]:
    events = []
    for i in range(14):
        prose = " ".join(PROSE[(i + k) % len(PROSE)] for k in range(6))
        parts = ["Hi all, thanks for joining.", prose]
        if i in FACTS:
            parts.append(f"- {FACTS[i]}")
        parts += ["Good call.", "Thanks everyone!"]
        events.append(
            EventText(
                occurred_at=at(f"2024-{1 + i // 4:02d}-{1 + 7 * (i % 4):02d}T15:00:00"),
                kind="call_summary" if i % 3 else "email",
                body="\n\n".join(parts),
                source="call",
            )
        )
    return events


def summarise(events: list[EventText], **kw: int) -> Summary:
    return summarise_extractive(events, scope_label="client:acme", period_label="2024-H1", **kw)


def test_is_deterministic() -> None:
    events = realistic_events()
    first = summarise(events)
    assert summarise(list(events)) == first
    assert summarise(list(reversed(events))) == first  # order comes from occurred_at


def test_keeps_planted_facts_verbatim_and_is_3x_shorter() -> None:
    events = realistic_events()
    summary = summarise(events)
    input_chars = sum(len(e.body) for e in events)

    assert len(summary.body) * 3 <= input_chars
    for fact in FACTS.values():
        assert fact in summary.body
    assert "$45,000" in summary.body and "2024-03-31" in summary.body
    assert "Priya Raman" in summary.body and "We decided to move Acme" in summary.body


def test_drops_filler_and_prose() -> None:
    body = summarise(realistic_events()).body
    for filler in ("Thanks everyone", "Good call", "Hi all", "thanks for joining"):
        assert filler not in body
    assert "coffee machine" not in body


def test_layout_title_dates_and_footer() -> None:
    events = realistic_events()
    summary = summarise(events)
    assert summary.title == "client:acme: 2024-H1 summary (14 events)"
    lines = summary.body.splitlines()
    assert lines[-1] == f"_Summarised by {BUILTIN_SUMMARISER_NAME} from 14 events._"
    bullets = [line for line in lines if line.startswith("- ")]
    dates = [line[2:12] for line in bullets]
    assert dates == sorted(dates)
    assert "- 2024-02-22 · call_summary: Acme approved the annual contract" in summary.body


def test_near_duplicates_kept_once_but_different_numbers_kept() -> None:
    events = [
        EventText(at("2024-01-01"), "note", "The price is $10,000 per year for Acme.", None),
        EventText(at("2024-01-02"), "note", "The price is $10,000 per year for Acme!", None),
        EventText(at("2024-01-03"), "note", "The price is $12,000 per year for Acme.", None),
    ]
    body = summarise(events).body
    assert body.count("$10,000") == 1
    assert "$12,000" in body


def test_respects_max_chars() -> None:
    summary = summarise(realistic_events(), max_chars=500)
    assert len(summary.body) <= 500
    assert "$45,000" in summary.body  # the highest-scoring facts go first


def test_only_filler_still_gives_a_body() -> None:
    events = [EventText(at("2024-01-01"), "chat", "Thanks everyone! Good call.", None)]
    summary = summarise(events)
    assert "No decisions" in summary.body


def test_long_title_is_one_line_and_capped() -> None:
    summary = summarise_extractive(realistic_events(), scope_label="x\n" * 300, period_label="2024")
    assert "\n" not in summary.title and len(summary.title) <= 200


def test_no_events_or_no_room_is_an_error() -> None:
    with pytest.raises(ValueError, match="no events"):
        summarise([])
    with pytest.raises(ValueError, match="max_chars"):
        summarise(realistic_events(), max_chars=100)


def test_abbreviations_and_decimals_do_not_split_sentences() -> None:
    text = "Dr. Lee approved a 3.5% raise for Acme Inc. on Jan. 5 after e.g. two reviews."
    events = [EventText(at("2024-01-05"), "decision", f"Hello team.\n\n{text}", None)]
    assert text in summarise(events).body


# A chat as LoCoMo's are: each turn a reply to the other speaker, then news of one's own.
CITIES = (
    "Lisbon Porto Valencia Bruges Krakow Tallinn Ljubljana Bergen Galway Aarhus Salzburg "
    "Bologna Seville Utrecht Gdansk Turku Graz Malaga Ghent Riga"
).split()
REPLIES = [
    "Wow, that sounds like such a great trip, you must be so excited about {}?",
    "Have you ever thought about going back to {} with your whole family?",
    "You always find the most beautiful places, {} looks amazing in your photos!",
]


def chat_fact(i: int) -> str:
    return f"I spent {i + 2} days in {CITIES[i]} and bought a ceramic jug for my mother."


def chat_events() -> list[EventText]:
    events = []
    for i in range(len(CITIES)):
        who = ("Dana", "Sam")[i % 2]
        reply = REPLIES[i % len(REPLIES)].format(CITIES[i - 1])
        body = f"{who}: {reply} {chat_fact(i)}"
        events.append(
            EventText(at(f"2024-05-{1 + i // 10:02d}T10:{i:02d}:00"), "utterance", body, None)
        )
    return events


def test_a_chat_keeps_each_speakers_own_statements_over_replies_and_questions() -> None:
    events = chat_events()
    body = summarise(events).body
    for i in range(len(CITIES)):
        assert chat_fact(i) in body, i
    assert "Have you ever thought" not in body


def test_a_sentence_keeps_its_speaker() -> None:
    body = "Dana: Thanks so much! I moved to Lisbon in March 2023 with my partner."
    events = [EventText(at("2024-05-01T10:00"), "utterance", body, None)]
    assert "Dana: I moved to Lisbon in March 2023 with my partner." in summarise(events).body


def test_one_line_per_day_and_kind() -> None:
    said = [
        ("2024-05-01T10:00", "Dana: I adopted a puppy named Biscuit."),
        ("2024-05-01T10:01", "Sam: I ran my first 10k race in 52 minutes."),
        ("2024-05-02T09:00", "Dana: I start at Acme on June 3."),
    ]
    events = [EventText(at(when), "utterance", body, None) for when, body in said]
    lines = summarise(events).body.splitlines()
    assert lines[:2] == [
        "- 2024-05-01 · utterance: Dana: I adopted a puppy named Biscuit. "
        "Sam: I ran my first 10k race in 52 minutes.",
        "- 2024-05-02 · utterance: Dana: I start at Acme on June 3.",
    ]


def test_keeps_at_most_two_thirds_of_a_long_input() -> None:
    events = chat_events() * 3  # every sentence a fact: more than the bound allows
    input_chars = sum(len(e.body) for e in events)
    for max_chars in (300, 1800, 100_000):
        body = summarise(events, max_chars=max_chars).body
        assert len(body) <= min(max_chars, input_chars * 2 // 3)
