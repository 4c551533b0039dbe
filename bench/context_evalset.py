"""Generates the context loader's labelled multi-session set (deterministic, seeded).

Usage: .venv/bin/python -m bench.context_evalset [--out PATH] [--seed N]
Writes tests/fixtures/context_eval/conversations.json (MIT, the project's own; see the
README beside it): agency-client chat over a year, one scope per conversation, with planted
facts, distractors and pleasantries, and questions whose gold answer is verbatim in the
evidence turn(s) and in no other turn of the conversation.
"""

import argparse
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

SEED = 20261201
NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)  # the evaluation's fixed 'now'
START = datetime(2025, 6, 2, tzinfo=UTC)
CONVERSATIONS = 10
TRAIN = 6  # conversations 0..5 train, the rest held out (tuning never sees them)
SESSIONS = 38
OUT = Path(__file__).resolve().parents[1] / "tests/fixtures/context_eval/conversations.json"

FIRST = (
    "Dana Sam Elena Raj Mark Priya Tomas Lena Kofi Jordan Amara Felix Ines Marco Yuki Nadia "
    "Omar Hanna Lucas Greta Ivo Rosa Bram Zofia Theo Maren Kwame Lotte Pavel Sofia"
).split()
LAST = (
    "Whitfield Okafor Brooks Patel Olsen Natarajan Reyes Fischer Mensah Lee Diallo Novak "
    "Moreau Castell Tanaka Haddad Lindqvist Rossi Vermeer Kowalski Andersen Silva Dubois "
    "Hartmann Quist Ferreira Byrne Ionescu Sato Mbeki"
).split()
CLIENTS = (
    "Harbor Bikes, Quill Tea, Northwind Outdoor, Fernleaf Skincare, Copperpot Foods, "
    "Atlas Luggage, Bluefin Swim, Marlow Coffee, Juniper Pets, Tessel Home"
).split(", ")
PROJECTS = (
    "Falcon Heron Osprey Kestrel Marlin Pelican Lynx Otter Condor Puffin Bison Ibis "
    "Wren Badger Stork Gannet"
).split()
DELIVERABLES = (
    "brochure, launch video, landing page, podcast series, trade show booth, catalogue, "
    "influencer kit, email sequence, product shoot, billboard run"
).split(", ")
VENDORS = (
    "Lumen Press, Northgate Print, Bright Pixel Studio, Kiln Films, Saltbox Media, "
    "Arrowroot Labs, Copperline Audio, Meridian Displays, Fieldnote Creative, "
    "Tallgrass Digital, Vantage Booths, Redwing Photo, Oakum Signs, Parcel & Pine, "
    "Stillwater Sound, Greyfield Events, Hollow Reed Studio, Brightwater Web"
).split(", ")
ROLES = (
    "head of retention, partnerships lead, growth analyst, brand director, "
    "e-commerce manager, creative producer, head of paid social, CRM specialist, "
    "operations coordinator, community manager"
).split(", ")
VENUES = (
    "the Old Granary, Pier 9 Warehouse, the Glasshouse Loft, Hotel Aurelia rooftop, "
    "the Foundry Hall, Canal Street Studios, the Riverside Pavilion, Mill Lane Barn"
).split(", ")
OFFICES = ("Leeds, Porto, Ghent, Tallinn, Utrecht, Bilbao, Aarhus, Graz").split(", ")
STREETS = (
    "Wharf Road, Linden Lane, Castle Quay, Mercer Street, Orchard Row, Harbour Walk, "
    "Tanner Street, Abbey Mews"
).split(", ")
BREEDS = (
    "greyhound, dachshund, border collie, whippet, beagle, corgi, vizsla, labradoodle, "
    "basenji, schnauzer"
).split(", ")
PET_NAMES = ("Biscuit, Pepper, Juno, Moss, Ziggy, Olive, Bruno, Tilly, Rolo").split(", ")
RACES = (
    "Lisbon half marathon, Berlin marathon, Ironman Barcelona, Dublin 10K, "
    "Rotterdam marathon, Ride London 100, Swim Serpentine, Copenhagen half"
).split(", ")
TRIPS = ("Kyoto, Marrakesh, Reykjavik, Oaxaca, Hanoi, Cape Town, Tbilisi, Valparaiso").split(", ")
INSTRUMENTS = ("cello, banjo, ukulele, saxophone, harp, accordion, trumpet, oboe").split(", ")
METRICS = {"CPA": "${:.2f}", "ROAS": "{:.2f}x", "signups": "{:,} signups"}
PLEASANTRIES = [
    "Morning {f}! Hope the weekend was good.",
    "Thanks {f}, talk soon.",
    "Great, cheers {f}.",
    "Ha, fair enough.",
    "Sounds good to me.",
    "Perfect, thank you!",
    "Sorry, running two minutes late.",
    "Coffee first, then the deck.",
    "Have a good evening {f}!",
    "Appreciate it, {f}.",
    "All good on my side.",
    "Nice one.",
    "Let me check and come back to you.",
    "Speak Thursday then.",
    "Quick one before the call, {f}.",
    "Yes, makes sense.",
    "Thanks for the patience {f}.",
]
FILLER = [
    "The {p} {d} is on track, no blockers this week.",
    "Can we move the {p} check-in to Thursday afternoon?",
    "{f} wants a fresh draft of the {p} {d} before the review.",
    "Budget review for {p} is next week, I'll bring the numbers.",
    "The {d} feedback from {f} is in the shared folder.",
    "We still need sign-off on the {p} {d} copy.",
    "{p} numbers look steady, nothing unusual this week.",
    "Reminder: the {p} {d} assets are due at the end of the month.",
    "I spoke to {f} about the {d}; they're happy with the direction.",
    "Vendor shortlist for the {p} {d} is getting long.",
    "Invoices for {p} went out yesterday.",
    "The {p} report had a typo on page two, fixed now.",
    "{f} asked whether the {d} could launch a week earlier.",
    "Let's keep the {p} budget flat until the next review.",
    "Good call from {f} on the {p} targeting.",
    "The contract for the {d} needs a second read.",
    "New creative for {p} goes live on Monday.",
    "Can someone send {f} the {p} timeline?",
    "The {p} launch event invitations go out next week.",
    "{f} asked about the dress code for the {p} launch event.",
    "Catering for the {p} launch event is still open.",
    "The {o} office team says hello, {f}.",
    "Printer in the {o} office is broken again.",
]


@dataclass
class Turn:
    id: str
    at: datetime
    body: str


@dataclass
class Fact:
    """Planted turns (placed in sessions by `when`) and the questions they answer."""

    turns: list[tuple[int, str]]  # (session index, body)
    questions: list[dict[str, Any]] = field(default_factory=list)  # evidence as turn indexes


class Conversation:
    def __init__(self, index: int, rng: random.Random) -> None:
        self.index, self.rng = index, rng
        self.client = CLIENTS[index]
        names = rng.sample(FIRST, 7)
        self.people = [f"{f} {ln}" for f, ln in zip(names, rng.sample(LAST, 7), strict=True)]
        self.projects = rng.sample(PROJECTS, 4)
        self.vendors = rng.sample(VENDORS, len(VENDORS))
        self.used: set[str] = set()
        start = START + timedelta(days=rng.randint(0, 20))
        span = (NOW - timedelta(days=1) - start).days
        days = sorted(rng.sample(range(span), SESSIONS))
        self.sessions = [
            start + timedelta(days=d, hours=rng.randint(8, 15), minutes=rng.choice((0, 15, 30)))
            for d in days
        ]
        self.facts: list[Fact] = []

    def first(self, person: str) -> str:
        return person.split()[0]

    def unique(self, make: Callable[[], str]) -> str:
        for _ in range(1000):
            value = make()
            if value not in self.used:
                self.used.add(value)
                return value
        raise RuntimeError("no unique value left")

    def amount(self) -> str:
        rng = self.rng
        return self.unique(lambda: f"${rng.randint(12, 98)},{rng.randint(1, 99) * 10:03d}")

    def session(self, lo: datetime | None = None, hi: datetime | None = None) -> int:
        pick = [
            i
            for i, s in enumerate(self.sessions)
            if (lo is None or s >= lo) and (hi is None or s < hi)
        ]
        return self.rng.choice(pick)

    def speaker(self) -> str:
        return self.rng.choice(self.people[:4])


def _q(kind: str, question: str, answer: str, evidence: list[int]) -> dict[str, Any]:
    return {"type": kind, "question": question, "answer": answer, "evidence": evidence}


def plant(c: Conversation) -> None:
    """The facts of one conversation: 12 single-hop, 8 multi-hop, 12 temporal, 8 open-domain."""
    rng, f = c.rng, c.first
    pairs = [(p, d) for p in c.projects for d in rng.sample(DELIVERABLES, 5)]
    rng.shuffle(pairs)
    vendors = iter(c.vendors)
    # Single-hop: budgets, vendors, purchase orders and roles, each with unasked siblings.
    for i, (p, d) in enumerate(pairs[:16]):
        approver = rng.choice(c.people[:4])
        kind = i % 4
        if kind == 0:
            amt = c.amount()
            body = f"{approver}: Approved: the {p} {d} budget is {amt}, signed off this morning."
            ask = f"What budget did {f(approver)} approve for the {p} {d}?"
            q = _q("single-hop", ask, amt, [0])
        elif kind == 1:
            v, other = next(vendors), next(vendors)
            c.used.update((v, other))
            body = f"{approver}: We're going with {v} for the {d} on {p}; {other} quoted too high."
            q = _q("single-hop", f"Which vendor was chosen for the {d} on {p}?", v, [0])
        elif kind == 2:
            po = c.unique(lambda: f"PO-{rng.randint(10000, 99999)}")
            body = f"{approver}: Purchase order for the {p} {d} is {po}, quote it on invoices."
            q = _q("single-hop", f"What is the purchase order number for the {p} {d}?", po, [0])
        else:
            person, role = rng.choice(c.people[4:]), c.unique(lambda: rng.choice(ROLES))
            body = f"{approver}: From next month {person} takes over as our {role}."
            q = _q(
                "single-hop",
                f"What new position is {f(person)} {person.split()[1]} taking on?",
                role,
                [0],
            )
        c.facts.append(Fact([(c.session(), body)], [q] if i < 12 else []))
    # Multi-hop: who leads which project, then something about that project (or office).
    leads = rng.sample(c.people[:6], 4)
    venues = rng.sample(VENUES, 4)
    for p, lead, venue in zip(c.projects, leads, venues, strict=True):
        c.used.add(venue)
        a = (c.session(), f"{c.speaker()}: {lead} will lead {p} from here on.")
        b = (c.session(), f"{c.speaker()}: The {p} launch event is booked at {venue}, 120 guests.")
        q = _q(
            "multi-hop", f"Where is the launch event of the project {f(lead)} leads?", venue, [0, 1]
        )
        c.facts.append(Fact([a, b], [q]))
    offices = rng.sample(OFFICES, 4)
    for person, office in zip(rng.sample(c.people[:6], 4), offices, strict=True):
        street = c.unique(lambda: f"{rng.randint(2, 98)} {rng.choice(STREETS)}")
        a = (c.session(), f"{person}: Quick news, I'm relocating to our {office} office.")
        b = (c.session(), f"{c.speaker()}: The {office} office moved, new address is {street}.")
        q = _q(
            "multi-hop",
            f"What is the address of the office {f(person)} relocated to?",
            street,
            [0, 1],
        )
        c.facts.append(Fact([a, b], [q]))
    # Temporal: monthly figures whose month is only in occurredAt, 'last month', 'latest'.
    months = sorted({(s.year, s.month) for s in c.sessions})
    for p, metric in zip(c.projects[:3], METRICS, strict=False):
        series: list[tuple[int, str]] = []
        for y, m in months:
            lo = datetime(y, m, 1, tzinfo=UTC)
            hi = (lo + timedelta(days=32)).replace(day=1)
            value = c.unique(partial(_metric, rng, metric))
            series.append(
                (
                    c.session(lo, hi),
                    f"{c.speaker()}: {p} {metric} for the month came in at {value}.",
                )
            )
            c.facts.append(Fact([series[-1]]))
            label = lo.strftime("%B %Y")
            c.facts[-1].questions.append(
                _q("temporal", f"What was the {metric} figure of {p} in {label}?", value, [0])
            )
        # Mid-month check-ins of the same figure (never asked): without the month, the
        # series is too long for a small budget. None after the last report ('latest').
        for s in range(series[-1][0]):
            value = c.unique(partial(_metric, rng, metric))
            check = f"{c.speaker()}: {p} {metric} check-in, {value} so far this month."
            c.facts.append(Fact([(s, check)]))
        # Keep three month questions a series; the last month's is also asked as 'last month'.
        monthly = [
            fa
            for fa in c.facts
            if fa.questions
            and "in " in fa.questions[0]["question"]
            and f" figure of {p} in " in fa.questions[0]["question"]
        ]
        last = monthly[-1]
        keep = set(map(id, rng.sample(monthly[:-1], 2)))
        for fa in monthly[:-1]:
            if id(fa) not in keep:
                fa.questions.clear()
        q = last.questions[0]
        if months[-1] == (NOW.year, NOW.month - 1) and rng.random() < 0.5:
            q["question"] = f"What {metric} did {p} report last month?"
        else:
            q["question"] = f"What is the latest {metric} of {p}?"
    for s in rng.sample(range(SESSIONS), 3):
        v = next(vendors)
        c.used.add(v)
        day = f"the {_ordinal(c.sessions[s].day)} of {c.sessions[s]:%B}"
        body = f"{c.speaker()}: Signed the framework agreement with {v} today, {day}."
        q = _q("temporal", f"When did we sign the framework agreement with {v}?", day, [0])
        c.facts.append(Fact([(s, body)], [q]))
    # Open-domain: personal facts asked in other words than the turn used.
    asked = 0
    for person in c.people[:6]:
        first = f(person)
        personal = [
            (
                f"{person}: Sorry, {rng.choice(PET_NAMES)} the "
                f"{c.unique(lambda: rng.choice(BREEDS))} chewed my charger again.",
                f"What breed is {first}'s dog?",
            ),
            (
                f"{person}: Legs are sore, the "
                f"{c.unique(lambda: rng.choice(RACES))} is in six weeks.",
                f"What event is {first} training for?",
            ),
            (
                f"{person}: I'll be offline next week, flying to "
                f"{c.unique(lambda: rng.choice(TRIPS))} for my brother's wedding.",
                f"Which city is {first} visiting for a family event?",
            ),
            (
                f"{person}: Started learning the "
                f"{c.unique(lambda: rng.choice(INSTRUMENTS))} in the evenings, the neighbours "
                "are thrilled.",
                f"Which musical hobby did {first} pick up?",
            ),
        ]
        for body, question in personal:
            gold = _gold_of(body)
            pick = asked < 8 and rng.random() < 0.4
            qs = [_q("open-domain", question, gold, [0])] if pick else []
            asked += len(qs)
            c.facts.append(Fact([(c.session(), body)], qs))


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _metric(rng: random.Random, metric: str) -> str:
    if metric == "CPA":
        return METRICS[metric].format(rng.uniform(8, 95))
    if metric == "ROAS":
        return METRICS[metric].format(rng.uniform(1.2, 7.5))
    return METRICS[metric].format(rng.randint(1200, 48000))


_GOLD = re.compile("|".join(re.escape(x) for x in (*BREEDS, *RACES, *TRIPS, *INSTRUMENTS)))


def _gold_of(body: str) -> str:
    found = _GOLD.search(body)
    assert found is not None
    return found.group(0)


def build(c: Conversation) -> tuple[list[Turn], list[dict[str, Any]]]:
    """Sessions of pleasantries, filler and the planted turns, in time order."""
    rng = c.rng
    planted: dict[int, list[tuple[int, int, str]]] = {}
    for fi, fact in enumerate(c.facts):
        for ti, (s, body) in enumerate(fact.turns):
            planted.setdefault(s, []).append((fi, ti, body))
    turns: list[Turn] = []
    where: dict[tuple[int, int], str] = {}
    for s, start in enumerate(c.sessions):
        bodies: list[tuple[tuple[int, int] | None, str]] = [(None, _chat(c, PLEASANTRIES))]
        middle: list[tuple[tuple[int, int] | None, str]]
        middle = [((fi, ti), body) for fi, ti, body in planted.get(s, [])]
        middle += [
            (None, _chat(c, FILLER if rng.random() < 0.6 else PLEASANTRIES))
            for _ in range(rng.randint(6, 10))
        ]
        rng.shuffle(middle)
        bodies += middle + [(None, _chat(c, PLEASANTRIES))]
        at = start
        for key, body in bodies:
            tid = f"c{c.index:02d}-t{len(turns) + 1:04d}"
            turns.append(Turn(tid, at, body))
            if key is not None:
                where[key] = tid
            at += timedelta(minutes=rng.randint(1, 6))
    questions = []
    for fi, fact in enumerate(c.facts):
        for q in fact.questions:
            q = dict(q, evidence=[where[(fi, ti)] for ti in q["evidence"]])
            _check(turns, q)
            questions.append(q)
    return turns, questions


def _chat(c: Conversation, templates: list[str]) -> str:
    rng = c.rng
    speaker = rng.choice(c.people[:4])
    other = rng.choice([p for p in c.people if p != speaker])
    text = rng.choice(templates).format(
        f=c.first(other),
        p=rng.choice(c.projects),
        d=rng.choice(DELIVERABLES),
        o=rng.choice(OFFICES),
    )
    return f"{speaker}: {text}"


def _check(turns: list[Turn], q: dict[str, Any]) -> None:
    """The gold answer is in the last evidence turn and in no turn outside the evidence."""
    gold = q["answer"].lower()
    by_id = {t.id: t for t in turns}
    if gold not in by_id[q["evidence"][-1]].body.lower():
        raise AssertionError(f"{q['question']!r}: answer not in its evidence")
    for t in turns:
        if t.id not in q["evidence"] and gold in t.body.lower():
            raise AssertionError(f"{q['question']!r}: answer also in {t.id}")


def generate(seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed)
    conversations: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for i in range(CONVERSATIONS):
        c = Conversation(i, random.Random(rng.random()))
        plant(c)
        turns, qs = build(c)
        split = "train" if i < TRAIN else "held-out"
        conversations.append(
            {
                "id": f"c{i:02d}",
                "client": c.client,
                "scope": "entity",
                "scope_ref": c.client.lower().replace(" ", "-"),
                "split": split,
                "turns": [
                    {"id": t.id, "at": t.at.strftime("%Y-%m-%dT%H:%M:%SZ"), "body": t.body}
                    for t in turns
                ],
            }
        )
        for q in qs:
            questions.append(
                {
                    "id": f"q{len(questions) + 1:04d}",
                    "conversation": f"c{i:02d}",
                    "split": split,
                    **q,
                }
            )
    return {
        "name": "context-eval",
        "version": 1,
        "seed": seed,
        "licence": "MIT",
        "now": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "conversations": conversations,
        "questions": questions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    data = generate(args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    by_type: dict[str, int] = {}
    for q in data["questions"]:
        by_type[q["type"]] = by_type.get(q["type"], 0) + 1
    turns = sum(len(c["turns"]) for c in data["conversations"])
    print(f"{args.out}: {turns} turns, {len(data['questions'])} questions {by_type}")


if __name__ == "__main__":
    main()
