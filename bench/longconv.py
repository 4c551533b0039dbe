"""Long user-assistant chats with labelled questions, generated (seeded, no LLM, no network).

Usage: .venv/bin/python -m bench.longconv [--set long100k|long500k | --tokens 100000]
       [--seed N] [--anchor YYYY-MM-DD] [--out FILE]   # JSON list of chats; prints a summary

The sets are a proxy for an outside held-out set of long chats (100,000 and 500,000 tokens,
user turns of ~220 characters, assistant turns of ~3,700, a fifth of the evidence in
assistant turns, a tenth of the questions about a changed fact) on which a plain bm25
packed into 4,000 tokens finds all of a question's evidence for 19% of questions. They are
built to fail lexical ranking the way real chats do, not against any one ranking: the
mechanisms below are what real long chats with an assistant look like, and their knobs
(the constants after CATEGORIES) were set only by reading the bm25 baseline's rate, never the
product's. The text itself is in bench/longconv_text.py.

Shape:

- **Sets of users.** long100k is six users' chats of 100,000 tokens (60 questions each),
  long500k two of 500,000 (315 each): a 100,000-token chat holds about a hundred questions'
  worth of news, and several users make the figures less one life's accident. Tokens are
  the product's own estimate (`app/tokens.py`) of the bodies ("User: ..." / "Assistant:
  ..."). Sessions are dated over 300 days (480 for 500K) before the anchor, the first day
  of the month the bench runs in, so most of the history is older than the compactor's 90
  days.
- **A life of a few storylines.** Each user talks mostly about five of fourteen topics
  (seven over 500K), and within a topic about one or two ongoing subjects: a city being
  planned and visited, the dog, a project at work, a room being redone, a language being
  learnt. A session follows one subject for 2-6 exchanges, its news is mostly about that
  subject, and later sessions come back to it. So the words of a question ("our trip to
  Porto", "Pickle", "the bathroom") are in dozens of turns, long answers among them, and
  lexical overlap alone does not single out the evidence.
- **Short user turns, long answers that echo them.** A user turn: a greeting or follow-up,
  0-2 pieces of news, a remark or two of context naming the user's people, a request
  (median ~245 characters). A third of the turns with news tell it inside a few sentences
  of background, and some paste a long note of the user's own for tidying, the news deep
  inside: user facts in passing inside longer turns. An assistant turn: Markdown sections
  from the topic's headings and advice lines, in the words users ask in ("where to stay",
  "what the vet said", "what it cost"), naming the subject a few times, the people the
  user named, and acknowledging the news by its name ("Thanks for the update on the
  Budapest 10K."); log-normal length around 3,700 characters (most 2,400-5,800, as a model
  writes them). A pick (a hotel, a library, an exercise) sits inside one of its sections;
  no answer otherwise holds an answer.
- **Questions as a user asks them weeks later.** A question names its subject by a
  description more often than by its rare name (NAMED_SHARE): by the recurring person,
  place, pet or room ("What did the vet find when I took my dog in?"), or by when it was
  said ("in early March 2026"), and it is phrased apart from the sentence holding the
  answer ("Back from the clinic with Pickle: a cracked claw" -> "What was wrong with my
  dog in mid May 2026?"); a wording that fits two instances is dropped. Most come with a
  lead-in or a reason ("Remind me: ...", "... Tomas asked me and I blanked."), common words
  that long answers share.

Categories (each question keeps its evidence turn ids, "S12:3" = session 12, turn 3, oldest
first, and its gold answers, each verbatim in an evidence turn):

- **single-session-user** (12%): one user statement, about the user or someone they know.
  Hard because the statement is short, often inside background, and shares at most the
  recurring subject with the question, while the subject's other turns and its long
  answers share more of the question's words.
- **single-session-assistant** (20%): a pick inside a long answer, or the alternatives
  named beside it. Hard because every answer of the subject's sessions talks around the
  same words and is as long: ranking has to tell one 3,700-character answer from its
  neighbours.
- **multi-session** (40%): every instance of a kind over a period or a series ("Which
  restaurants did I try in 2026?", "What did the repairs cost in total?" - the parts of a
  sum or a count are its answers), a comparison of two ("Which trip cost us more?"), a
  rundown of everything said about a subject ("Catch me up on Pickle"), or two facts about
  the same subject from different sessions ("Which hotel did you recommend for Porto, and
  where did we end up staying?"). All of 2-6 turns from different sessions must be packed.
- **temporal** (16%): the kind's one instance at a named time ("Which band did I see live
  in late May 2026?": nothing in the text says when; the turn's date does), or the order
  of two or three events.
- **knowledge-update** (12%): a fact restated with a new value sessions later (the
  manager, the rent, a flight, a launch date), or a recommendation the assistant revised
  when the user came back ("Given that, I'd switch to ..."). The question asks the current
  value; the evidence is every statement, `older` the superseded ones, so the bench can
  check that the newer statement comes first.

About half of the questions need two or more turns, and a fifth of the evidence turns are
the assistant's, as in the held-out set. Answers said in another turn than the evidence
drop the question, except temporal and multi-session ones whose answers are names said
again (`unique` false: the bench leaves them out of answer-in-context).

The same seed, set and anchor give the same chats byte for byte (random.Random only; no
set iteration feeds the output).
"""

import argparse
import json
import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from app.tokens import estimate_tokens
from bench.longconv_text import (
    ACKS,
    ALT_ASKS,
    ASK_LEADS,
    ASK_REASONS,
    BANKS,
    BLOCKS,
    CHATTER,
    CITIES,
    CLOSERS,
    CONTEXT_LEADS,
    CURRENCY,
    ECHO,
    ECHO_ROLE,
    FIRST,
    FOLLOWUP_ASKS,
    FOLLOWUPS,
    GENERAL,
    GREETINGS,
    HEDGES,
    KINDS,
    LINKS,
    MONTHS,
    NEWS,
    OPENERS,
    ORDER_THREE,
    PARTS,
    PASTE_ASKS,
    PETNAMES,
    PICK_UPDATE_ASKS,
    REVISE_ASKS,
    REVISED,
    REVISITS,
    RUNDOWNS,
    STORIES,
    STORYLINES,
    TAILS,
    TOPICS,
    Kind,
    checklist,
    racetime,
    words,
)
from bench.retrieval_measures import normalise

SEED = 20261206
# The generated sets: tokens per chat, chats, questions per chat. A 100,000-token chat holds
# about a hundred questions' worth of news: a set is several users' chats.
SETS = {"long100k": (100_000, 6, 60), "long500k": (500_000, 2, 315)}
CATEGORIES = (
    "single-session-user",
    "single-session-assistant",
    "multi-session",
    "temporal",
    "knowledge-update",
)
# Shares of the questions kept per category (the rest are dropped, deterministically).
SHARES = {
    "single-session-user": 0.12,
    "single-session-assistant": 0.20,
    "multi-session": 0.40,
    "temporal": 0.16,
    "knowledge-update": 0.12,
}
FRAMED_SHARE = 0.7  # questions with a lead-in or a reason (half each, independently)
TRIO_SHARE = 0.8  # order questions over three events rather than two, where there are three
GROUP_MIN = 2  # instances a list, a total or a rundown gathers at least (pairs: compare, link)
NAMED_SHARE = 0.1  # questions that name their subject when a description would also do
TASK_SHARE = 0.2  # exchanges where the user only asks about the topic, with no news
REVISE_SHARE = 0.35  # revisits of a recommendation where the user's plans changed
PASTE_SHARE = 0.15  # user turns with news that paste a long note of theirs to tidy up
STORY_SHARE = 0.35  # user turns that give a few sentences of background around the news
MAIN_TOPICS = 5  # the subjects a user mostly talks about (two more over 500K tokens)
SIDE_WEIGHT = 0.12  # the weight of the other topics, beside a main one's
TOPIC_SPREAD = 0.5  # sigma of the log-normal weight of each topic in one chat
CONTEXT_SHARE = 0.25  # answer sentences that start from a person the user's turn named
ANSWER_CHARS = 3350  # the median of the log-normal target length of an assistant answer
ANSWER_SPREAD = 0.35  # its sigma: most answers 2,400-5,800 characters, as a model writes them


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


# The cast roles whose names an answer repeats when the user named them.
PEOPLE = ("partner", "sister", "kid", "friend", "coworker", "pet", "project")


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

    def __init__(
        self, name: str, target_tokens: int, seed: int, anchor: date, questions: int
    ) -> None:
        self.name, self.target, self.seed, self.anchor = name, target_tokens, seed, anchor
        self.wanted = questions
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
        self.species: dict[str, str] = {}
        self.cast = self._cast()
        r = self.rng
        # A life has a few places it keeps coming back to, and a few subjects it talks about
        # far more than others.
        self.parts = {
            name: r.sample(list(values), min(len(values), 3 + self.expected_sessions // 40))
            for name, values in PARTS.items()
        }
        self.parts["city"] = r.sample(CITIES, max(3, self.expected_sessions // 12))
        self.story: tuple[str, str] | None = None  # the session's storyline: (spec, subject)
        self.revising: Fact | None = None  # a recommendation the next answer revises
        self.storylines = {
            topic: r.sample(pool, min(len(pool), 1 + self.expected_sessions // 50))
            for topic, (spec, _) in STORYLINES.items()
            for pool in [self.pool(spec)]
        }
        main = r.sample(list(TOPICS), MAIN_TOPICS if self.target <= 150_000 else MAIN_TOPICS + 2)
        self.topic_weight = {
            t: r.lognormvariate(0, TOPIC_SPREAD) * (1.0 if t in main else SIDE_WEIGHT)
            for t in TOPICS
        }
        self.currency = r.choice(("$", "€", "£"))

    def _cast(self) -> dict[str, list[str]]:
        r = self.rng
        names = r.sample(FIRST, 18)
        pets = r.sample(PETNAMES, r.randint(1, 2))
        self.species = {p: r.choice(("dog", "dog", "cat")) for p in pets}
        birds = words("Heron, Osprey, Kestrel, Marlin, Pelican, Lynx, Bison, Ibis, Condor, Puffin")
        cast = {
            "partner": names[:1],
            "sister": names[1:2],
            "kid": names[2 : 2 + r.randint(1, 2)],
            "friend": names[4:8],
            "coworker": names[10:16],
            "pet": pets,
            "project": [f"Project {b}" for b in r.sample(birds, 3)],
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

    def pool(self, spec: str) -> list[str]:
        """The chat's values for a `part:` or `cast:` slot."""
        kind, name = spec.split(":")
        return list(self.parts[name] if kind == "part" else self.cast[name])

    def people(self) -> dict[str, str]:
        """One of each of the user's people, for the placeholders of what the user says."""
        r, c = self.rng, self.cast
        return {
            "partner": c["partner"][0],
            "sister": c["sister"][0],
            "kid": r.choice(c["kid"]),
            "friend": r.choice(c["friend"]),
            "coworker": r.choice(c["coworker"]),
            "pet": r.choice(c["pet"]),
            "project": r.choice(c["project"]),
        }

    def say(self, template: str, slots: dict[str, str]) -> str:
        return template.format(**{**self.people(), **slots})

    # -- values

    def draw(self, bank: str, slots: dict[str, str] | None = None) -> str | None:
        """A value of `bank` not used yet in the chat (a race time fits the slots' race)."""
        for _ in range(60):
            if bank == "racetime":
                value = racetime(self.rng, (slots or {})["k"])
            else:
                value = str(BANKS[bank](self.rng)).replace(CURRENCY, self.currency)
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
                    pool = self.parts[spec[5:]]
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
                story = self.story
                if story and spec == story[0] and story[1] in options and r.random() < 0.85:
                    slots[name] = story[1]  # news about the subject the session is on
                else:
                    slots[name] = r.choice(options)
            else:
                value = self.draw(spec, slots)
                if value is None:
                    return None
                slots[name] = value
        if slots.get("p") in self.species:
            slots["pk"] = self.species[slots["p"]]
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

    def run_session(self, session: int, topic: str) -> None:
        """One session: a first request on a subject, then follow-ups on the same subject.
        Often the subject is one the user talked about before (a key said again)."""
        r = self.rng
        spec, named = STORYLINES[topic]
        subject = r.choice(self.storylines[topic])
        self.story = (spec, subject)
        focus, opening = named.format(s=subject), ""
        due = [m for m in self.mentions if m[0] <= session]
        if due and r.random() < 0.7:
            self.mentions.remove(due[0])
            fact = due[0][1]
            topic = fact.kind.topic
            about = fact.kind.focus.format(**fact.slots)
            lines = fact.kind.mentions or REVISITS
            if fact.kind.role == "assistant" and len(fact.chain) < 3 and r.random() < REVISE_SHARE:
                self.revising = fact  # the user is back: does the advice still hold?
                lines = REVISE_ASKS
            opening = self.say(r.choice(lines), {"focus": about, **fact.slots})
            focus = (fact.kind.mention_focus or fact.kind.focus).format(**fact.slots)
            spec = STORYLINES[topic][0]
            self.story = next(
                ((spec, fact.slots[n]) for n, x in fact.kind.slots.items() if x == spec), None
            )
        for i in range(r.choice((2, 2, 3, 3, 3, 4, 4, 5, 6))):
            focus = self.exchange(session, i == 0, topic, focus, opening)
            opening = ""

    def exchange(
        self, session: int, first: bool, topic: str, subject: str, opening: str = ""
    ) -> str:
        """One user turn and the assistant's answer; returns the session's subject."""
        r = self.rng
        opener = r.choice(GREETINGS) if first else r.choice(FOLLOWUPS).strip()
        said: list[str] = []  # what the user mentions, before the request
        recalled: list[str] = []  # keys said again (already said: safe to echo)
        planted: list[Fact] = []
        due = [p for p in self.pending if p[0] <= session]
        if due and r.random() < 0.85:
            self.pending.remove(due[0])
            update = self.update(due[0][1])
            if update is not None:
                planted.append(update[0])
                said.append(update[1])
        if opening:
            said.append(opening)
        mention = [m for m in self.mentions if m[0] <= session and m[1].kind.mentions]
        if mention and r.random() < 0.7:  # a key said again in passing
            self.mentions.remove(mention[0])
            fact = mention[0][1]
            said.append(self.say(r.choice(fact.kind.mentions), fact.slots))
            recalled.append(fact.slots[fact.kind.key])
        task = r.random() < TASK_SHARE  # a question about the subject, no news of the user's
        count = r.choice((1, 1, 1, 2) if first else (0, 1, 1, 1))
        for _ in range(0 if task else count):
            made = self.new_fact(topic)
            if made is not None:
                planted.append(made[0])
                prefix = r.choice(NEWS) if made[0].kind.topic != topic else ""
                said.append(prefix + made[1])
        pick_kind, pick_slots = None, None
        revised = self.revising if first else None
        self.revising = None
        if revised is not None:
            value = self.draw(revised.kind.slots["v"])
            if value is not None:
                pick_kind = revised.kind
                pick_slots = {
                    **revised.chain[-1].slots,
                    "v": value,
                    "old": revised.chain[-1].slots["v"],
                }
            else:
                revised = None
        elif not task and r.random() < (0.7 if first else 0.2):
            recs = self.candidates(topic, ("assistant",))
            r.shuffle(recs)
            for kind in recs:
                pick_slots = self.fill(kind)
                if pick_slots is not None:
                    pick_kind = kind
                    break
        pasted = ""
        if said and pick_kind is None and r.random() < PASTE_SHARE:
            # A note the user pastes for the assistant to tidy: the news deep inside it.
            topics = [topic, *r.sample(list(STORIES), 2)]
            note = [self.say(x, {}) for t in topics for x in r.sample(STORIES[t], 3)]
            r.shuffle(note)
            for line in said:
                note.insert(r.randint(0, len(note)), line)
            pasted = "\n\n" + " ".join(note)
            said = []
        elif r.random() < (STORY_SHARE if first else STORY_SHARE / 2):
            # A long turn: the news in passing, among a few sentences of background.
            story = [self.say(s, {}) for s in r.sample(STORIES[topic], r.randint(3, 6))]
            for line in said:
                story.insert(r.randint(0, len(story)), line)
            said = story
        else:  # a remark or two of context, as people write
            lines = CHATTER[topic] + STORIES[topic]
            for line in r.sample(lines, r.choice((0, 0, 1, 1, 2))):
                said.insert(r.randint(0, len(said)), self.say(line, {}))
        focus = subject
        if revised is not None:  # the opening asked already
            request = ""
        elif pick_kind is not None and pick_slots is not None:
            focus = pick_kind.focus.format(**pick_slots)
            request = self.say(r.choice(pick_kind.request), pick_slots)
        elif first:
            request = r.choice(TOPICS[topic].requests).format(k=focus)
        else:
            request = self.say(r.choice(FOLLOWUP_ASKS[topic]), {"k": focus})
        if pasted:
            request = self.say(r.choice(PASTE_ASKS), {}) + pasted
        user_text = " ".join(p for p in (opener, *said, request) if p)
        user_turn = self.add_turn(session, "user", user_text[0].upper() + user_text[1:])
        for fact in planted:
            fact.turn = user_turn
        pick = None
        alts: list[str] = []
        if revised is not None and pick_slots is not None:
            pick = r.choice(REVISED).format(**pick_slots)
        elif pick_kind is not None and pick_slots is not None:
            pick = r.choice(pick_kind.says).format(**pick_slots)
            for _ in range(r.randint(1, 3)):
                alt = self.draw(pick_kind.alts)
                if alt is not None:
                    alts.append(alt)
        news = recalled + [
            f.slots[f.kind.key]
            for f in planted
            if f.kind.key and f.kind.key not in {*f.kind.asks, *f.kind.described}
        ]
        text = self.answer(topic, focus, pick, alts, user_text, news)
        turn = self.add_turn(session, "assistant", text)
        if revised is not None and pick_slots is not None:
            slots = {k: v for k, v in pick_slots.items() if k != "old"}
            revised.chain.append(Fact(revised.kind, slots, turn, session))
        elif pick_kind is not None and pick_slots is not None:
            fact = Fact(pick_kind, pick_slots, turn, session, alts=alts)
            fact.chain = [fact]
            for _ in range(r.randint(1, 3)):  # the same subject again later, without the pick
                self.mentions.append((session + r.randint(1, self.gap()), fact))
            self.facts.append(fact)
        return subject

    def new_fact(self, topic: str) -> tuple[Fact, str] | None:
        """A new fact, most often on the session's topic (series kinds three times as likely), else
        on another topic the user talks about; and the sentence saying it."""
        r = self.rng
        if r.random() < 0.15:
            others = [t for t in TOPICS if t != topic]
            topic = r.choices(others, [self.topic_weight[t] for t in others])[0]
        pool = self.candidates(topic, ("user", "other"))
        spec = self.story[0] if self.story else ""
        weighted = [
            k
            for k in pool
            for _ in range((3 if k.series else 1) * (3 if spec in k.slots.values() else 1))
        ]
        r.shuffle(weighted)
        anywhere = [k for k in KINDS if k.role in ("user", "other")]
        r.shuffle(anywhere)
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
        if kind.mentions:
            for _ in range(self.rng.randint(3, 5)):
                self.mentions.append((self.session + self.rng.randint(1, self.gap()), fact))
        return fact, self.say(self.rng.choice(kind.says), slots)

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
        sentence = self.say(
            self.rng.choice(kind.updates), {"old": latest.slots[kind.changes], **slots}
        )
        return fact, sentence

    def answer(
        self,
        topic: str,
        focus: str,
        pick: str | None,
        alts: Sequence[str],
        asked: str = "",
        news: Sequence[str] = (),
    ) -> str:
        """A long Markdown answer on `topic` about `focus`, holding `pick` if given; it names
        the people the user's turn (`asked`) named, and first acknowledges the news the turn
        brought by its name (`news`: the race, the city, the room; never an answer)."""
        r = self.rng
        spec = TOPICS[topic]
        length = min(9800, max(900, r.lognormvariate(math.log(ANSWER_CHARS), ANSWER_SPREAD)))
        lines = list(spec.lines) * 2 + list(ECHO[topic]) * 2 + list(GENERAL)
        r.shuffle(lines)
        pool = iter(lines)
        people = self.cast.get(ECHO_ROLE.get(topic, "partner"), self.cast["partner"])
        named_there = [n for role in PEOPLE for n in self.cast[role] if n in asked]
        named_there += [c for c in self.parts["city"] if c in asked] + list(news)
        if named_there:
            people = named_there * 3 + list(people)

        named = [0, r.randint(2, 5)]  # the subject by name a few times, then "this"

        def sentence() -> str:
            line = next(pool, None) or r.choice(spec.lines)
            hedge = r.choice(HEDGES)
            if named_there and r.random() < CONTEXT_SHARE:  # back to what the user said
                hedge = r.choice(CONTEXT_LEADS).format(n=r.choice(named_there))
            line = hedge + line[0].lower() + line[1:] if hedge and line[0] != "{" else line
            line += r.choice(TAILS)
            k = focus
            if "{k}" in line:
                named[0] += 1
                k = focus if named[0] <= named[1] else r.choice(("this", "it", "all this"))
            return line.format(k=k, m=r.choice(MONTHS), n=r.choice(people))

        opener = r.choice(OPENERS)
        if news:
            opener = r.choice(ACKS).format(x=r.choice(news)) + " " + opener
        out = [f"{opener} {sentence()}"]
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
                extra += (
                    f" If that one is full or wrong for you, look at {names}; each has a catch."
                )
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
            others = [t for t in topics if t != last]
            topic = r.choices(others, [self.topic_weight[t] for t in others])[0]
            last = topic
            self.run_session(self.session, topic)
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

    def when(self, fact: Fact) -> str:
        """When the fact was said, as a user would put it: "early March 2026"."""
        at = self.session_start[fact.session]
        part = "early" if at.day <= 10 else "mid" if at.day <= 20 else "late"
        return f"{part} {MONTHS[at.month - 1]} {at.year}"

    def periods(self, facts: Sequence[Fact]) -> list[tuple[str, list[Fact]]]:
        """The facts grouped by calendar year ("in 2026"), a year with more than six split
        into runs of whole months ("between March and June 2026")."""
        by_year: dict[int, list[Fact]] = {}
        for f in sorted(facts, key=lambda f: f.session):
            by_year.setdefault(self.year(f), []).append(f)
        out: list[tuple[str, list[Fact]]] = []
        for year, group in by_year.items():
            if len(group) <= 6:
                out.append((f"in {year}", group))
                continue
            by_month: dict[int, list[Fact]] = {}
            for f in group:
                by_month.setdefault(self.session_start[f.session].month, []).append(f)
            run: list[int] = []
            for m in sorted(by_month):
                if run and sum(len(by_month[x]) for x in run) + len(by_month[m]) > 5:
                    out.append(self._run(year, run, by_month))
                    run = []
                run.append(m)
            if run:
                out.append(self._run(year, run, by_month))
        return out

    @staticmethod
    def _run(
        year: int, months: Sequence[int], by_month: dict[int, list[Fact]]
    ) -> tuple[str, list[Fact]]:
        facts = [f for m in months for f in by_month[m]]
        first, last = MONTHS[months[0] - 1], MONTHS[months[-1] - 1]
        period = f"in {first} {year}" if first == last else f"between {first} and {last} {year}"
        return period, facts

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
            evidence = tuple(sorted(dict.fromkeys(f.turn for f in chain), key=_turn_order))
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
        of_kind: dict[str, list[Fact]] = {}
        for f in firsts:
            of_kind.setdefault(f.kind.name, []).append(f)

        def alone(
            template: str, fact: Fact, by_month: bool = False, extra: dict[str, str] | None = None
        ) -> bool:
            """Whether the wording fits `fact` and no other instance of its kind."""

            def text(f: Fact) -> str:
                more = {"month": self.when(f)} if by_month else {}
                if extra:
                    more["focus"] = f.kind.focus.format(**f.slots)
                return template.format(**{**f.chain[-1].slots, **more})

            mine = text(fact)
            return all(text(f) != mine for f in of_kind[fact.kind.name] if f is not fact)

        for fact in firsts:
            kind = fact.kind
            if len(fact.chain) > 1:
                newest = fact.chain[-1]
                changes = kind.changes or "v"  # a recommendation revised: its pick
                about = {"focus": kind.focus.format(**fact.slots)}
                templates = kind.update_asks or PICK_UPDATE_ASKS
                options = [t for t in templates if alone(t, fact, extra=about)]
                if options:
                    ask(
                        "knowledge-update",
                        r.choice(options),
                        [newest.slots[changes]],
                        fact.chain,
                        fact.chain[:-1],
                        [f.slots[changes] for f in fact.chain[:-1]],
                        extra=about,
                    )
                continue
            category = (
                "single-session-assistant" if kind.role == "assistant" else "single-session-user"
            )
            month = self.when(fact)
            for slot in dict.fromkeys([*kind.asks, *kind.described]):
                named = [t for t in kind.asks.get(slot, ()) if alone(t, fact)]
                described = [
                    t for t in kind.described.get(slot, ()) if alone(t, fact, by_month=True)
                ]
                if described and (not named or r.random() >= NAMED_SHARE):
                    ask(
                        category,
                        r.choice(described),
                        [fact.slots[slot]],
                        [fact],
                        extra={"month": month},
                    )
                elif named:
                    ask(category, r.choice(named), [fact.slots[slot]], [fact])
            if len(fact.alts) >= 2 and r.random() < 0.35:
                ask(
                    category,
                    r.choice(ALT_ASKS),
                    fact.alts,
                    [fact],
                    extra={"focus": kind.focus.format(**fact.slots)},
                )
        for kind in KINDS:
            facts = of_kind.get(kind.name, [])
            if kind.when:
                for fact in facts:
                    if alone(kind.when[0], fact, by_month=True):
                        ask(
                            "temporal",
                            r.choice(kind.when),
                            [fact.slots[kind.when_slot]],
                            [fact],
                            extra={"month": self.when(fact)},
                        )
            shuffled = list(facts)
            r.shuffle(shuffled)
            if kind.order:  # events in pairs or threes: which came first, or their order
                rest = list(shuffled)
                while len(rest) >= 2:
                    size = 3 if len(rest) >= 3 and r.random() < TRIO_SHARE else 2
                    events = sorted(rest[:size], key=lambda f: f.session)
                    rest = rest[size:]
                    if any(b.session - a.session < 2 for a, b in pairwise(events)):
                        continue
                    shown = [f.slots[kind.order_slot] for f in r.sample(events, size)]
                    if size == 2:
                        template, answers = r.choice(kind.order), events[:1]
                    else:
                        template, answers = r.choice(ORDER_THREE), events
                    ask(
                        "temporal",
                        template,
                        [f.slots[kind.order_slot] for f in answers],
                        events,
                        extra=dict(zip("abc", shown, strict=False)),
                    )
            if kind.compare:
                name = kind.order_slot or kind.key
                r.shuffle(shuffled)
                for a, b in zip(shuffled[::2], shuffled[1::2], strict=False):
                    va, vb = (
                        _number(a.slots[kind.compare_slot]),
                        _number(b.slots[kind.compare_slot]),
                    )
                    if va == vb or a.session == b.session or a.slots[name] == b.slots[name]:
                        continue
                    top = a if va > vb else b
                    ask(
                        "multi-session",
                        r.choice(kind.compare),
                        [top.slots[name]],
                        sorted((a, b), key=lambda f: f.session),
                        extra={"a": a.slots[name], "b": b.slots[name]},
                    )
            for extra, group in self.groups(kind, facts):
                if len(group) < GROUP_MIN or len({f.session for f in group}) < 2:
                    continue
                if kind.all_asks:
                    ask(
                        "multi-session",
                        r.choice(kind.all_asks),
                        [f.slots[kind.all_slot] for f in group],
                        group,
                        extra=extra,
                    )
                if kind.sum_asks:
                    ask(
                        "multi-session",
                        r.choice(kind.sum_asks),
                        [f.slots[kind.sum_slot] for f in group],
                        group,
                        extra=extra,
                    )
        self.rundowns(firsts, ask)
        for link in LINKS:
            for a in of_kind.get(link.first, []):
                matches = [
                    b
                    for b in of_kind.get(link.second, [])
                    if all(a.slots[x] == b.slots[y] for x, y in link.on)
                ]
                if len(matches) != 1:
                    continue
                b = matches[0]
                if a.session == b.session or (link.after and b.session < a.session):
                    continue
                pair = (a, b)
                slots = {f"a_{k}": v for k, v in a.slots.items()}
                slots.update({f"b_{k}": v for k, v in b.slots.items()})
                ask(
                    "multi-session",
                    r.choice(link.asks),
                    [pair[i].slots[slot] for i, slot in link.answers],
                    sorted(pair, key=lambda f: f.session),
                    extra=slots,
                )
        return out

    def rundowns(self, firsts: Sequence[Fact], ask: Any) -> None:
        """A rundown of a recurring subject (a pet, a project, a friend, a city, a room): the
        current value of every fact about it, its evidence the turn of each; the last five
        facts ("since March 2026") when there are more."""
        about: dict[tuple[str, str], list[Fact]] = {}
        for fact in firsts:
            for slot, spec in fact.kind.slots.items():
                if spec in RUNDOWNS and "v" in fact.slots and slot != "v":
                    about.setdefault((spec, fact.slots[slot]), []).append(fact.chain[-1])
        for (spec, subject), facts in about.items():
            facts = sorted(facts, key=lambda f: f.session)
            since = ""
            if len(facts) > 5:
                cut = facts[-5]
                start = self.session_start[cut.session]
                facts = [f for f in facts if self.session_start[f.session] >= start.replace(day=1)]
                since = f" since {MONTHS[start.month - 1]} {start.year}"
            if not GROUP_MIN <= len(facts) <= 6 or len({f.session for f in facts}) < 2:
                continue
            ask(
                "multi-session",
                self.rng.choice(RUNDOWNS[spec]),
                [f.slots["v"] for f in facts],
                facts,
                extra={"s": subject, "since": since},
            )

    def groups(self, kind: Kind, facts: Sequence[Fact]) -> list[tuple[dict[str, str], list[Fact]]]:
        """The instances a multi-session question is about: a series' (up to 6), or a
        period's."""
        if not (kind.all_asks or kind.sum_asks):
            return []
        if kind.series:
            by: dict[str, list[Fact]] = {}
            for f in facts:
                by.setdefault(f.slots[kind.series], []).append(f)
            return [({kind.series: k}, g) for k, g in by.items() if len(g) <= 6]
        return [({"period": p}, g) for p, g in self.periods(facts)]

    def validate(self, questions: Sequence[Question]) -> list[Question]:
        """Keeps the questions whose every answer is in an evidence turn and, but for
        temporal and multi-session ones (whose answers may be names said again later: then
        `unique` is false), in no other turn; a wording asked twice is dropped (it fits two
        instances)."""
        texts = {t.id: f" {normalise(t.body)} " for t in self.turns}
        asked = Counter(q.question for q in questions)
        kept: list[Question] = []
        for q in questions:
            evidence = set(q.evidence)
            needles = [f" {normalise(a)} " for a in q.answers]
            if asked[q.question] > 1 or not all(
                any(n in texts[e] for e in q.evidence) for n in needles
            ):
                continue
            unique = not any(n in texts[t] for n in needles for t in texts if t not in evidence)
            if unique or q.category in ("temporal", "multi-session"):
                kept.append(replace(q, unique=unique))
        return kept

    def select(self, questions: Sequence[Question]) -> list[Question]:
        """About `SHARES` of the question target per category, chosen at random; a category
        with fewer questions leaves its room to the others."""
        r = self.rng
        target = self.wanted
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
        return [
            replace(q, id=f"{self.name}-q{i:04d}", question=self.frame(q.question))
            for i, q in enumerate(out, 1)
        ]

    def frame(self, question: str) -> str:
        """The question as a user asks it weeks later: often with a lead-in or a reason."""
        r = self.rng
        if r.random() < FRAMED_SHARE / 2:
            lead = r.choice([x for x in ASK_LEADS if x[:6].lower() != question[:6].lower()])
            question = lead + (
                question if lead.endswith(". ") else question[0].lower() + question[1:]
            )
        if r.random() < FRAMED_SHARE / 2:
            question += self.say(r.choice(ASK_REASONS), {})
        return question


def _number(value: str) -> float:
    """The number in a value ("€1,250", "83 out of 100", "1:52:07" in seconds)."""
    if re.fullmatch(r"\d+:\d\d:\d\d", value):
        h, m, s = (int(x) for x in value.split(":"))
        return float(h * 3600 + m * 60 + s)
    found = re.search(r"\d[\d,]*(?:\.\d+)?", value)
    return float(found.group().replace(",", "")) if found else 0.0


def _turn_order(turn_id: str) -> tuple[int, int]:
    s, t = turn_id[1:].split(":")
    return int(s), int(t)


def generate(
    name: str,
    tokens: int,
    seed: int = SEED,
    anchor: date | None = None,
    questions: int | None = None,
) -> Chat:
    """One chat of about `tokens` tokens (the product's estimate), dated before `anchor`
    (default: the first day of the current month, UTC), with about `questions` questions
    (default: 90 up to 150,000 tokens, else 630)."""
    if anchor is None:
        today = datetime.now(UTC).date()
        anchor = today.replace(day=1)
    wanted = questions or (90 if tokens <= 150_000 else 630)
    return Builder(name, tokens, seed, anchor, wanted).build()


def generate_set(name: str, seed: int = SEED, anchor: date | None = None) -> tuple[Chat, ...]:
    """The chats of the set `name` (see SETS): one user each, named NAME-1, NAME-2..."""
    tokens, count, questions = SETS[name]
    names = [name] if count == 1 else [f"{name}-{i}" for i in range(1, count + 1)]
    return tuple(generate(n, tokens, seed, anchor, questions) for n in names)


def summary(chat: Chat) -> str:
    users = [len(t.text) for t in chat.turns if t.role == "user"]
    helpers = [len(t.text) for t in chat.turns if t.role == "assistant"]
    tokens = sum(estimate_tokens(t.body) for t in chat.turns)
    cats = {c: sum(q.category == c for q in chat.questions) for c in CATEGORIES}
    ev = [e for q in chat.questions for e in q.evidence]
    roles = {t.id: t.role for t in chat.turns}
    share = sum(roles[e] == "assistant" for e in ev) / max(1, len(ev))
    asked = max(1, len(chat.questions))
    several = sum(len(q.evidence) > 1 for q in chat.questions) / asked
    return (
        f"{chat.id}: {len(chat.turns)} turns, {tokens:,} tokens, {chat.turns[0].at[:10]} to "
        f"{chat.turns[-1].at[:10]}; user turns median {_median(users)} chars, assistant "
        f"median {_median(helpers)} (max {max(helpers)}); {len(chat.questions)} questions "
        f"{cats}, {sum(bool(q.older) for q in chat.questions)} about a changed fact, "
        f"{several:.0%} with two or more evidence turns ({len(ev) / asked:.2f} a question); "
        f"evidence turns from the assistant {share:.0%}"
    )


def _median(values: Sequence[int]) -> int:
    s = sorted(values)
    return s[len(s) // 2] if s else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), help="a whole set (default: one chat)")
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--anchor", type=date.fromisoformat, default=None)
    parser.add_argument("--out", type=Path, help="the chats as JSON (a list)")
    args = parser.parse_args()
    if args.set:
        chats = generate_set(args.set, args.seed, args.anchor)
    else:
        chats = (generate(f"long{args.tokens // 1000}k", args.tokens, args.seed, args.anchor),)
    for chat in chats:
        print(summary(chat))
    if args.out:
        args.out.write_text(json.dumps([c.to_json() for c in chats], indent=1) + "\n")


if __name__ == "__main__":
    main()
