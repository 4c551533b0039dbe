"""What the extractive summariser keeps of a chat (app/adapters/summarisers/builtin.py): the
once-said facts, not pleasantries that name someone, headers or the weekly templates."""

from datetime import UTC, datetime, timedelta

from app.adapters.summarisers.base import EventText
from app.adapters.summarisers.builtin import rare_words, summarise_extractive

START = datetime(2025, 9, 1, 9, tzinfo=UTC)
TEMPLATES = [
    "{who}: Budget review for Falcon is next week, I'll bring the numbers.",
    "{who}: Let's keep the Falcon budget flat until the next review.",
    "{who}: Reminder: the Falcon brochure assets are due at the end of the month.",
    "{who}: Thanks Elena, talk soon.",
    "{who}: Morning Raj! Hope the weekend was good.",
]
FACTS = [
    "Dana Whitfield: Purchase order for the Falcon brochure is PO-48213, quote it on invoices.",
    "Sam Okafor: We're going with Lumen Press for the Falcon catalogue.",
    "Raj Patel: Sorry, Biscuit the greyhound chewed my charger again.",
    "Elena Brooks: From next month Kofi Mensah takes over as our head of retention.",
]


def chat() -> list[EventText]:
    people = ["Dana Whitfield", "Sam Okafor", "Raj Patel", "Elena Brooks"]
    bodies = [TEMPLATES[i % len(TEMPLATES)].format(who=people[i % len(people)]) for i in range(120)]
    for i, fact in enumerate(FACTS):
        bodies[17 + 29 * i] = fact
    return [
        EventText(START + timedelta(hours=5 * i), "chat_turn", body, "chat")
        for i, body in enumerate(bodies)
    ]


def test_once_said_facts_outlast_weekly_templates() -> None:
    summary = summarise_extractive(chat(), scope_label="entity/acme", period_label="2025-09")
    for fact in FACTS:
        # a relative date is kept, with its absolute date added (against the event's date)
        said = fact.split(": ", 1)[1].replace("next month", "next month (2025-10)")
        assert said in summary.body
    assert "Thanks Elena, talk soon." not in summary.body
    assert "Hope the weekend was good." not in summary.body
    # The templates left are kept once, however many speakers said them.
    assert summary.body.count("Budget review for Falcon is next week") <= 1


def test_a_header_of_a_name_and_a_date_is_not_a_fact() -> None:
    events = [
        EventText(START, "call_summary", "Call with Dana — 2025-09-01\n\nAll fine.", "call"),
        EventText(START, "call_summary", "Dana approved the $45,000 budget.", "call"),
        EventText(START, "call_summary", "Call with Sam — 2025-09-02\n\nNothing new.", "call"),
    ]
    body = summarise_extractive(events, scope_label="x", period_label="y").body
    assert "Dana approved the $45,000 budget." in body
    assert "Call with" not in body


def test_rare_words_are_those_in_few_events() -> None:
    rare = rare_words(["the greyhound ran", "the budget", "the budget", "the budget"])
    assert "greyhound" in rare and "budget" not in rare and "the" not in rare


def test_summaries_are_tagged_with_the_names_that_recur() -> None:
    summary = summarise_extractive(chat(), scope_label="entity/acme", period_label="2025-09")
    assert set(summary.tags) <= {
        "Dana Whitfield",
        "Sam Okafor",
        "Raj Patel",
        "Elena Brooks",
        "Falcon",
        "Elena",
        "Raj",
        "Kofi Mensah",
        "Lumen Press",
    }
    assert "Dana Whitfield" in summary.tags and 0 < len(summary.tags) <= 5
    assert "Brooks" not in summary.tags  # a speaker's surname alone is not another name
    assert "Lumen Press" not in summary.tags  # said once: not a recurring name


def test_relative_dates_are_resolved_against_the_event() -> None:
    events = [
        EventText(datetime(2024, 3, 13, 9, tzinfo=UTC), "chat_turn", body, "chat")
        for body in [
            "Ana: I signed the lease for the Porto flat yesterday, 1,200 a month.",
            "Ana: Last week I booked the movers for 2 trucks.",
            "Ana: We moved in three days ago, the boxes are still everywhere.",
        ]
    ]
    body = summarise_extractive(events, scope_label="s", period_label="2024-03-13").body
    assert "yesterday (2024-03-12)" in body
    assert "Last week (week of 2024-03-04)" in body
    assert "three days ago (2024-03-10)" in body
