"""Long user-assistant chats with labelled questions, generated (seeded, no LLM, no network).

Usage: .venv/bin/python -m bench.longconv [--tokens 100000] [--seed N] [--anchor YYYY-MM-DD]
       [--out FILE]   # writes the chat and its questions as JSON; prints a summary

Design (what makes the set hard, and why it is hard to overfit; the text itself is in
bench/longconv_text.py):

- **One user, one assistant, months of sessions.** Sessions are dated over 300 days (500
  for the 500K chat) before the anchor, the first day of the month the bench runs in, so
  most of the history is older than the compactor's 90 days. Each session has one of
  fourteen topics (travel, cooking, fitness, finance, code, pets, work, health, home,
  garden, reading, family, learning, gadgets) and 1-5 exchanges; sessions are added until
  the bodies ("User: ..." / "Assistant: ...") reach the target in the product's own token
  estimate (`app/tokens.py`).
- **Short user turns, long assistant turns.** A user turn: an optional greeting, 1-2 facts
  in passing, sometimes a remark naming the user's people, a request (median ~240
  characters). An assistant turn: Markdown sections from the topic's headings, advice lines,
  lines written in the questions' own words ("the hotel I'd recommend", "what the vet
  said", "a race in March") and general lines, with the exchange's focus (the city, the
  pet, the project) and the user's people named in them, sometimes an itinerary, a table or
  a code block; log-normal length (median ~3,400 characters, some over 8,000). They never
  hold an answer: they are the distractors a ranking that favours long, word-rich items
  packs first.
- **Facts.** ~60 kinds, each with several statement and question templates worded apart
  ("Vet visit for Pickle. Turns out it's ..." -> "What health problem turned up for Pickle
  recently?"). Values come from combinatorial banks (hotels, restaurants, dishes, people,
  amounts, dates, products, libraries...) and are drawn once per chat. About a fifth of the
  evidence is the assistant's: a recommendation inside a long answer beside alternatives
  of the same kind ("Which hotel did you recommend for Porto?", "What were the alternatives
  you mentioned?"). A question names its instance by a key (a restaurant, a race) or, when
  it is the kind's only instance that month, by the month alone ("What dish did I rave
  about after eating out in March 2026?").
- **Hard distractors.** Keys come back in later turns without the answer ("We walked past
  Fig & Olive again last night"), each time with a long assistant answer about them; the
  subject of an assistant recommendation comes back the same way; other people's facts
  mirror the user's own on the same key ("my sister ran the Lisbon 10K as well, in
  0:52:10"), and are asked about too.
- **Facts that change.** Profile facts (manager, rent, gym, diet...) and instance facts (a
  project's launch date, a flight, a room's paint) are restated with a new value sessions
  later, once or twice; the question asks the current value, its evidence is every
  statement (oldest first) and `older` holds the superseded ones, so the bench can check
  that the newer statement comes first.
- **Categories.** single-session-user, single-session-assistant, multi-session (every
  instance of a series or of a year: the dishes cooked for the supper club, the races run
  in 2026), temporal (the kind's one instance in a named month; which of two events came
  first) and knowledge-update. Each question keeps its evidence turn ids ("S12:3": session
  12, turn 3) and its gold answer(s), each verbatim in an evidence turn; a question whose
  answer is also in another turn is dropped, except temporal and multi-session ones whose
  answers are keys said again later (`unique` false: the bench leaves them out of
  answer-in-context). About 300 questions at 100K tokens and 600 at 500K are kept, spread
  over the categories.

The same seed, target and anchor give the same chat byte for byte (random.Random only;
no set iteration feeds the output).
"""

import argparse
import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from app.tokens import estimate_tokens
from bench.longconv_text import (
    ALT_ASKS,
    BANKS,
    BLOCKS,
    CHATTER,
    CLOSERS,
    ECHO,
    ECHO_ROLE,
    FIRST,
    FOLLOWUPS,
    GENERAL,
    GREETINGS,
    HEDGES,
    KINDS,
    MONTHS,
    NEWS,
    OPENERS,
    PARTS,
    PETNAMES,
    REVISITS,
    TAILS,
    TOPICS,
    Kind,
    checklist,
    words,
)
from bench.retrieval_measures import normalise

SEED = 20261206
CATEGORIES = (
    "single-session-user",
    "single-session-assistant",
    "multi-session",
    "temporal",
    "knowledge-update",
)
# Shares of the questions kept per category (the rest are dropped, deterministically).
SHARES = {
    "single-session-user": 0.30,
    "single-session-assistant": 0.22,
    "multi-session": 0.08,
    "temporal": 0.18,
    "knowledge-update": 0.22,
}


# ---------------------------------------------------------------------------- the records


@dataclass(frozen=True, slots=True)
class Turn:
    id: str
    role: str  # "user" | "assistant"
    at: str  # ISO 8601, UTC
    text: str

    @property
    def body(self) -> str:
        return f"{'User' if self.role == 'user' else 'Assistant'}: {self.text}"


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    category: str
    question: str
    answers: tuple[str, ...]  # every one verbatim in an evidence turn
    evidence: tuple[str, ...]  # turn ids, oldest first
    older: tuple[str, ...] = ()  # knowledge-update: the superseded statements' turns
    older_answers: tuple[str, ...] = ()
    unique: bool = True  # the answers are in no turn but the evidence


@dataclass(frozen=True, slots=True)
class Chat:
    id: str
    anchor: str
    seed: int
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Chat":
        turns = tuple(Turn(**t) for t in data["turns"])
        questions = tuple(
            Question(
                q["id"],
                q["category"],
                q["question"],
                tuple(q["answers"]),
                tuple(q["evidence"]),
                tuple(q["older"]),
                tuple(q["older_answers"]),
                q["unique"],
            )
            for q in data["questions"]
        )
        return Chat(data["id"], data["anchor"], data["seed"], turns, questions)


# ---------------------------------------------------------------------------- the builder


@dataclass
class Fact:
    kind: Kind
    slots: dict[str, str]
    turn: str
    session: int
    chain: list["Fact"] = field(default_factory=list)  # the first fact's: itself + updates
    alts: list[str] = field(default_factory=list)  # an assistant pick's other options


class Builder:
    """Generates one chat: sessions of exchanges until the token target is reached."""

    def __init__(self, name: str, target_tokens: int, seed: int, anchor: date) -> None:
        self.name, self.target, self.seed, self.anchor = name, target_tokens, seed, anchor
        self.rng = random.Random(f"{seed}:{name}:{target_tokens}")
        self.used: set[str] = set()
        self.turns: list[Turn] = []
        self.session_of: list[int] = []  # per turn
        self.facts: list[Fact] = []
        self.pending: list[tuple[int, Fact]] = []  # (due session, the chain's first fact)
        self.mentions: list[tuple[int, Fact]] = []  # (due session, a fact whose key recurs)
        self.keys: dict[str, list[str]] = {}
        self.done_once: set[str] = set()
        self.planned_cities: list[str] = []
        self.series_count: Counter[tuple[str, str]] = Counter()
        self.tokens = 0
        self.cast = self._cast()

    def _cast(self) -> dict[str, list[str]]:
        r = self.rng
        names = r.sample(FIRST, 18)
        pets = r.sample(PETNAMES, r.randint(1, 2))
        birds = words("Heron, Osprey, Kestrel, Marlin, Pelican, Lynx, Bison, Ibis, Condor, Puffin")
        cast = {
            "partner": names[:1],
            "sister": names[1:2],
            "kid": names[2 : 2 + r.randint(1, 2)],
            "friend": names[4:10],
            "coworker": names[10:16],
            "pet": pets,
            "project": [f"Project {b}" for b in r.sample(birds, 5)],
            "club": [
                "the supper club",
                "the Friday dinner crew",
                "the neighbours' potluck",
                "the climbing group's barbecue",
            ],
            "bed": [
                "the raised bed",
                "the shady border",
                "the balcony pots",
                "the front garden",
                "the allotment",
            ],
            "bookclub": ["my book club", "the office book club", "the library reading group"],
            "giftee": [names[0], names[1], "Mum", "Dad", names[4], names[5]],
        }
        for values in cast.values():
            self.used.update(normalise(v) for v in values)
        return cast

    # -- values

    def draw(self, bank: str) -> str | None:
        for _ in range(60):
            value = str(BANKS[bank](self.rng))
            n = normalise(value)
            if n not in self.used:
                self.used.add(n)
                return value
        return None

    def fill(self, kind: Kind) -> dict[str, str] | None:
        """The slots of a new instance of `kind`, or None when it cannot be made."""
        r = self.rng
        if kind.once and kind.name in self.done_once:
            return None
        taken = self.keys.setdefault(kind.name, [])
        slots: dict[str, str] = {}
        order = sorted(kind.slots, key=lambda s: s != kind.key)  # the key first
        for name in order:
            spec = kind.slots[name]
            if spec.startswith(("part:", "cast:", "key:")):
                if spec.startswith("key:"):  # another person's fact about the user's own key
                    pool = self.keys.get(spec[4:], [])
                elif spec.startswith("part:"):
                    pool = PARTS[spec[5:]]
                else:
                    pool = self.cast[spec[5:]]
                if name == kind.key and spec == "part:city" and self.planned_cities:
                    fresh = [c for c in self.planned_cities if c not in taken]
                    if fresh and r.random() < 0.7:
                        pool = fresh
                options = [v for v in pool if name != kind.key or v not in taken]
                if name == kind.series:  # a series grows to 2-5 instances, then rests
                    counts = [self.series_count[(kind.name, v)] for v in options]
                    growing = [v for v, c in zip(options, counts, strict=True) if 0 < c < 5]
                    room = [v for v, c in zip(options, counts, strict=True) if c < 5]
                    options = growing if growing and r.random() < 0.75 else room
                    if not options:
                        return None
                if not options:
                    return None
                slots[name] = r.choice(options)
            else:
                value = self.draw(spec)
                if value is None:
                    return None
                slots[name] = value
        if kind.key:
            taken.append(slots[kind.key])
        if kind.once:
            self.done_once.add(kind.name)
        if kind.series:
            self.series_count[(kind.name, slots[kind.series])] += 1
        if kind.name in ("trip_pick", "flight") and slots.get("city"):
            self.planned_cities.append(slots["city"])
        return slots

    # -- turns

    def add_turn(self, session: int, role: str, text: str) -> str:
        n = sum(1 for s in self.session_of if s == session) + 1
        turn = Turn(f"S{session}:{n}", role, "", text)
        self.turns.append(turn)
        self.session_of.append(session)
        self.tokens += estimate_tokens(turn.body)
        return turn.id

    def candidates(self, topic: str, roles: Sequence[str]) -> list[Kind]:
        return [k for k in KINDS if k.topic == topic and k.role in roles]

    def exchange(self, session: int, first: bool, topic: str) -> None:
        r = self.rng
        parts = [r.choice(GREETINGS) if first else r.choice(FOLLOWUPS).strip()]
        planted: list[tuple[Fact, str]] = []  # (fact, its sentence) for the user turn
        due = [p for p in self.pending if p[0] <= session]
        if due and r.random() < 0.85:
            self.pending.remove(due[0])
            first_fact = due[0][1]
            update = self.update(first_fact)
            if update is not None:
                planted.append(update)
        focus = ""
        mention = [m for m in self.mentions if m[0] <= session]
        if mention and r.random() < 0.8:
            self.mentions.remove(mention[0])
            fact = mention[0][1]
            about = fact.kind.focus.format(**fact.slots)
            said = r.choice(fact.kind.mentions or REVISITS)
            parts.append(said.format(focus=about, **fact.slots))
            focus = (fact.kind.mention_focus or fact.kind.focus).format(**fact.slots)
        for _ in range(r.choice((1, 1, 2, 2, 2))):
            pool = self.candidates(topic, ("user", "other"))
            if r.random() < 0.25:
                pool = [k for k in KINDS if k.role in ("user", "other")]
            made = self.new_fact(pool)
            if made is not None:
                planted.append(made)
        pick_kind, pick_slots = None, None
        if r.random() < 0.7:
            recs = self.candidates(topic, ("assistant",))
            r.shuffle(recs)
            for kind in recs:
                pick_slots = self.fill(kind)
                if pick_slots is not None:
                    pick_kind = kind
                    break
        for fact, sentence in planted:
            parts.append(r.choice(NEWS) + sentence if fact.kind.topic != topic else sentence)
        if r.random() < 0.2:
            parts.append(self.chatter(topic))
        if pick_kind is not None and pick_slots is not None:
            focus = pick_kind.focus.format(**pick_slots)
            parts.append(r.choice(pick_kind.request).format(**pick_slots))
        else:
            focus = focus or self.focus(topic, [f for f, _ in planted])
            parts.append(r.choice(TOPICS[topic].requests).format(k=focus))
        user_text = " ".join(p for p in parts if p)
        user_turn = self.add_turn(session, "user", user_text[0].upper() + user_text[1:])
        for fact, _ in planted:
            fact.turn = user_turn
        pick = None
        alts: list[str] = []
        if pick_kind is not None and pick_slots is not None:
            pick = r.choice(pick_kind.says).format(**pick_slots)
            for _ in range(r.randint(1, 3)):
                alt = self.draw(pick_kind.alts)
                if alt is not None:
                    alts.append(alt)
        text = self.answer(topic, focus, pick, alts)
        turn = self.add_turn(session, "assistant", text)
        if pick_kind is not None and pick_slots is not None:
            fact = Fact(pick_kind, pick_slots, turn, session, alts=alts)
            fact.chain = [fact]
            if r.random() < 0.85:  # the same subject again later, without the pick
                self.mentions.append((session + r.randint(1, self.gap()), fact))
            self.facts.append(fact)

    def chatter(self, topic: str) -> str:
        """A passing remark on the topic that names the user's people and things."""
        r = self.rng
        names = {role: r.choice(values) for role, values in self.cast.items()}
        return r.choice(CHATTER[topic]).format(**names)

    def focus(self, topic: str, facts: Sequence[Fact]) -> str:
        for fact in facts:
            if fact.kind.topic == topic and fact.kind.focus:
                return fact.kind.focus.format(**fact.slots)
        return self.rng.choice(TOPICS[topic].focuses)

    def new_fact(self, pool: Sequence[Kind]) -> tuple[Fact, str] | None:
        """A new fact of one of the kinds in `pool` (series kinds twice as likely)."""
        weighted = [k for k in pool for _ in range(2 if k.series else 1)]
        self.rng.shuffle(weighted)
        anywhere = [k for k in KINDS if k.role in ("user", "other")]
        self.rng.shuffle(anywhere)
        for kind in weighted + anywhere:
            if kind.skip and self.rng.random() < kind.skip:
                continue
            slots = self.fill(kind)
            if slots is not None:
                break
        else:
            return None
        fact = Fact(kind, slots, "", self.session)
        fact.chain = [fact]
        self.facts.append(fact)
        if kind.changes:
            self.pending.append((self.session + self.gap(), fact))
        if kind.mentions and self.rng.random() < 0.85:
            for _ in range(self.rng.randint(1, 3)):
                self.mentions.append((self.session + self.rng.randint(1, self.gap()), fact))
        return fact, self.rng.choice(kind.says).format(**slots)

    def gap(self) -> int:
        """Sessions until a changed fact's next statement: a few to many."""
        return self.rng.randint(3, max(6, self.expected_sessions // 3))

    def update(self, first: Fact) -> tuple[Fact, str] | None:
        kind = first.kind
        value = self.draw(kind.slots[kind.changes])
        if value is None:
            return None
        latest = first.chain[-1]
        slots = {**latest.slots, kind.changes: value}
        fact = Fact(kind, slots, "", self.session)
        first.chain.append(fact)
        if len(first.chain) < 3 and self.rng.random() < 0.25:
            self.pending.append((self.session + self.gap(), first))
        sentence = self.rng.choice(kind.updates).format(old=latest.slots[kind.changes], **slots)
        return fact, sentence

    def answer(self, topic: str, focus: str, pick: str | None, alts: Sequence[str]) -> str:
        """A long Markdown answer on `topic` about `focus`, holding `pick` if given."""
        r = self.rng
        spec = TOPICS[topic]
        length = min(9800, max(900, r.lognormvariate(math.log(3000), 0.55)))
        lines = list(spec.lines) * 2 + list(ECHO[topic]) * 2 + list(GENERAL)
        r.shuffle(lines)
        pool = iter(lines)
        people = self.cast.get(ECHO_ROLE.get(topic, "partner"), self.cast["partner"])

        def sentence() -> str:
            line = next(pool, None) or r.choice(spec.lines)
            hedge = r.choice(HEDGES)
            line = hedge + line[0].lower() + line[1:] if hedge and line[0] != "{" else line
            return (line + r.choice(TAILS)).format(k=focus, m=r.choice(MONTHS), n=r.choice(people))

        out = [f"{r.choice(OPENERS)} {sentence()}"]
        size = len(out[0])
        heads = list(spec.heads)
        r.shuffle(heads)
        sections: list[str] = []
        block = BLOCKS.get(topic, checklist)
        while size < length:
            head = heads[len(sections) % len(heads)]
            if r.random() < 0.5:
                body = " ".join(sentence() for _ in range(r.randint(2, 5)))
            else:
                body = "\n".join(f"- {sentence()}" for _ in range(r.randint(3, 6)))
            if r.random() < 0.18:
                body += "\n\n" + block(r, focus)
            section = f"### {head}\n\n{body}"
            sections.append(section)
            size += len(section)
        if pick is not None:
            where = r.randrange(len(sections)) if sections else 0
            extra = pick
            if alts:
                names = ", ".join(alts[:-1]) + (" and " if len(alts) > 1 else "") + alts[-1]
                extra += f" Other options worth a look: {names}, though each has a catch."
            if sections:
                sections[where] += "\n\n" + extra
            else:
                out.append(extra)
        out.extend(sections)
        out.append(r.choice(CLOSERS))
        return "\n\n".join(out)

    # -- the chat

    @property
    def expected_sessions(self) -> int:
        return max(12, round(self.target / 3300))

    def build(self) -> Chat:
        r = self.rng
        topics = list(TOPICS)
        last = ""
        self.session = 0
        while self.tokens < self.target:
            self.session += 1
            topic = r.choice([t for t in topics if t != last])
            last = topic
            for i in range(r.choice((1, 2, 2, 3, 3, 3, 4, 4, 5))):
                self.exchange(self.session, i == 0, topic)
        self.date_turns()
        return Chat(
            self.name,
            self.anchor.isoformat(),
            self.seed,
            tuple(self.turns),
            tuple(self.select(self.validate(self.questions()))),
        )

    def span_days(self) -> int:
        return 300 if self.target <= 150_000 else 480

    def date_turns(self) -> None:
        """Session dates spread over span_days before the anchor; turns minutes apart."""
        r = self.rng
        sessions = self.session
        end = datetime(self.anchor.year, self.anchor.month, self.anchor.day, tzinfo=UTC)
        start = end - timedelta(days=self.span_days())
        days = sorted(r.sample(range(self.span_days() - 3), min(sessions, self.span_days() - 3)))
        while len(days) < sessions:  # more sessions than days: some days hold two
            days.append(days[-1])
        days.sort()
        self.session_start = {}
        for s in range(1, sessions + 1):
            self.session_start[s] = start + timedelta(
                days=days[s - 1], hours=r.randint(7, 20), minutes=r.randint(0, 59)
            )
        at: dict[int, datetime] = dict(self.session_start)
        dated = []
        for turn, s in zip(self.turns, self.session_of, strict=True):
            step = timedelta(minutes=1 if turn.role == "assistant" else r.randint(2, 9))
            at[s] += step
            dated.append(
                Turn(turn.id, turn.role, at[s].isoformat().replace("+00:00", "Z"), turn.text)
            )
        self.turns = dated

    def year(self, fact: Fact) -> int:
        return self.session_start[fact.session].year

    def month(self, fact: Fact) -> str:
        when = self.session_start[fact.session]
        return f"{MONTHS[when.month - 1]} {when.year}"

    def questions(self) -> list[Question]:
        r = self.rng
        out: list[Question] = []

        def ask(
            category: str,
            template: str,
            answers: Sequence[str],
            chain: Sequence[Fact],
            older: Sequence[Fact] = (),
            older_answers: Sequence[str] = (),
            extra: dict[str, str] | None = None,
        ) -> None:
            slots = {**chain[-1].slots, **(extra or {})}
            evidence = tuple(dict.fromkeys(f.turn for f in chain))
            out.append(
                Question(
                    "",
                    category,
                    template.format(**slots),
                    tuple(answers),
                    evidence,
                    tuple(f.turn for f in older),
                    tuple(older_answers),
                )
            )

        firsts = [f for f in self.facts if f.chain and f.chain[0] is f]
        per_month = Counter((f.kind.name, self.month(f)) for f in firsts)
        for fact in firsts:
            kind = fact.kind
            if len(fact.chain) > 1:
                newest = fact.chain[-1]
                ask(
                    "knowledge-update",
                    r.choice(kind.update_asks),
                    [newest.slots[kind.changes]],
                    fact.chain,
                    fact.chain[:-1],
                    [f.slots[kind.changes] for f in fact.chain[:-1]],
                )
                continue
            category = (
                "single-session-assistant" if kind.role == "assistant" else "single-session-user"
            )
            month = self.month(fact)
            alone = per_month[(kind.name, month)] == 1
            for slot, templates in kind.asks.items():
                if alone and slot in kind.vague and r.random() < 0.75:
                    ask(
                        category,
                        r.choice(kind.vague[slot]),
                        [fact.slots[slot]],
                        [fact],
                        extra={"month": month},
                    )
                else:
                    ask(category, r.choice(templates), [fact.slots[slot]], [fact])
            if len(fact.alts) >= 2:
                ask(
                    category,
                    r.choice(ALT_ASKS),
                    fact.alts,
                    [fact],
                    extra={"focus": kind.focus.format(**fact.slots)},
                )
        by_month: dict[tuple[str, str, str], list[Fact]] = {}
        for fact in firsts:
            if fact.kind.when:
                series = fact.slots.get(fact.kind.series, "")
                by_month.setdefault((fact.kind.name, series, self.month(fact)), []).append(fact)
        for (_, _, month), group in by_month.items():
            if len(group) == 1:
                fact = group[0]
                ask(
                    "temporal",
                    r.choice(fact.kind.when),
                    [fact.slots[fact.kind.when_slot]],
                    [fact],
                    extra={"month": month},
                )
        for kind in KINDS:
            if kind.order:
                facts = [f for f in firsts if f.kind is kind]
                r.shuffle(facts)
                for a, b in zip(facts[::2], facts[1::2], strict=False):
                    if abs(a.session - b.session) < 2:
                        continue
                    early, late = sorted((a, b), key=lambda f: f.session)
                    shown = [early, late] if r.random() < 0.5 else [late, early]
                    ask(
                        "temporal",
                        r.choice(kind.order),
                        [early.slots[kind.order_slot]],
                        [early, late],
                        extra={
                            "a": shown[0].slots[kind.order_slot],
                            "b": shown[1].slots[kind.order_slot],
                        },
                    )
            if kind.all_asks:
                groups: dict[str, list[Fact]] = {}
                for f in firsts:
                    if f.kind is kind:
                        by = f.slots[kind.series] if kind.series else str(self.year(f))
                        groups.setdefault(by, []).append(f)
                for by, group in groups.items():
                    sessions = {f.session for f in group}
                    if 2 <= len(group) <= 5 and len(sessions) >= 2:
                        extra = {kind.series: by} if kind.series else {"year": by}
                        ask(
                            "multi-session",
                            r.choice(kind.all_asks),
                            [f.slots[kind.all_slot] for f in group],
                            group,
                            extra=extra,
                        )
        return out

    def validate(self, questions: Sequence[Question]) -> list[Question]:
        """Keeps the questions whose every answer is in an evidence turn and, but for
        temporal and multi-session ones (whose answers may be names said again later: then
        `unique` is false), in no other turn; one question per wording."""
        texts = {t.id: f" {normalise(t.body)} " for t in self.turns}
        kept: list[Question] = []
        seen: set[str] = set()
        for q in questions:
            evidence = set(q.evidence)
            needles = [f" {normalise(a)} " for a in q.answers]
            if q.question in seen or not all(
                any(n in texts[e] for e in q.evidence) for n in needles
            ):
                continue
            unique = not any(n in texts[t] for n in needles for t in texts if t not in evidence)
            if unique or q.category in ("temporal", "multi-session"):
                seen.add(q.question)
                kept.append(replace(q, unique=unique))
        return kept

    def select(self, questions: Sequence[Question]) -> list[Question]:
        """About `SHARES` of the question target per category, chosen at random; a category
        with fewer questions leaves its room to the others."""
        r = self.rng
        target = 320 if self.target <= 150_000 else 600
        supply = {c: sum(q.category == c for q in questions) for c in CATEGORIES}
        caps = {c: min(supply[c], round(target * SHARES[c])) for c in CATEGORIES}
        for c in CATEGORIES:  # hand the room left over to the categories with more
            caps[c] = min(supply[c], caps[c] + target - sum(caps.values()))
        out: list[Question] = []
        for category in CATEGORIES:
            pool = [q for q in questions if q.category == category]
            cap = caps[category]
            if len(pool) > cap:
                keep = set(r.sample(range(len(pool)), cap))
                pool = [q for i, q in enumerate(pool) if i in keep]
            out.extend(pool)
        out.sort(key=lambda q: _turn_order(q.evidence[-1]))
        return [replace(q, id=f"{self.name}-q{i:04d}") for i, q in enumerate(out, 1)]


def _turn_order(turn_id: str) -> tuple[int, int]:
    s, t = turn_id[1:].split(":")
    return int(s), int(t)


def generate(name: str, tokens: int, seed: int = SEED, anchor: date | None = None) -> Chat:
    """One chat of about `tokens` tokens (the product's estimate), dated before `anchor`
    (default: the first day of the current month, UTC)."""
    if anchor is None:
        today = datetime.now(UTC).date()
        anchor = today.replace(day=1)
    return Builder(name, tokens, seed, anchor).build()


def summary(chat: Chat) -> str:
    users = [len(t.text) for t in chat.turns if t.role == "user"]
    helpers = [len(t.text) for t in chat.turns if t.role == "assistant"]
    tokens = sum(estimate_tokens(t.body) for t in chat.turns)
    cats = {c: sum(q.category == c for q in chat.questions) for c in CATEGORIES}
    ev = [e for q in chat.questions for e in q.evidence]
    roles = {t.id: t.role for t in chat.turns}
    share = sum(roles[e] == "assistant" for e in ev) / max(1, len(ev))
    return (
        f"{chat.id}: {len(chat.turns)} turns, {tokens:,} tokens, {chat.turns[0].at[:10]} to "
        f"{chat.turns[-1].at[:10]}; user turns median {_median(users)} chars, assistant "
        f"median {_median(helpers)} (max {max(helpers)}, {sum(h > 8000 for h in helpers)} over "
        f"8,000); {len(chat.questions)} questions {cats}; evidence turns from the assistant "
        f"{share:.0%}"
    )


def _median(values: Sequence[int]) -> int:
    s = sorted(values)
    return s[len(s) // 2] if s else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--anchor", type=date.fromisoformat, default=None)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    chat = generate(f"long{args.tokens // 1000}k", args.tokens, args.seed, args.anchor)
    print(summary(chat))
    if args.out:
        args.out.write_text(json.dumps(chat.to_json(), indent=1) + "\n")


if __name__ == "__main__":
    main()
