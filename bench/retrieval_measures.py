"""What bench.retrieval_eval counts, as pure functions: evidence by id, answers in a text, the
newer statement first, and the two baselines (recency, plain FTS5 bm25) packed into a budget.

Nothing here talks to the service; tests/test_retrieval_eval.py holds each rule to small cases.
"""

import math
import re
import sqlite3
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from app.tokens import estimate_tokens

_PUNCT = str.maketrans({c: " " for c in string.punctuation + "\u2019\u2018\u201c\u201d\u2026"})
_ARTICLES = frozenset(("a", "an", "the"))


def normalise(text: str) -> str:
    """Lower case, punctuation as spaces, without the articles a/an/the, single spaces."""
    text = text.lower().translate(_PUNCT)
    return " ".join(w for w in text.split() if w not in _ARTICLES)


def contains(normalised_text: str, answer: str) -> bool:
    """Whether `answer` is in an already normalised text, as whole words."""
    needle = normalise(answer)
    return bool(needle) and f" {needle} " in f" {normalised_text} "


def answer_in(normalised_text: str, answers: Sequence[str]) -> bool:
    """Every one of the gold answers is in the text (one answer for most questions; every
    item for a list)."""
    return bool(answers) and all(contains(normalised_text, a) for a in answers)


def evidence_found(evidence: Sequence[str], present: Iterable[str]) -> tuple[bool, bool]:
    """(all, any) of a question's evidence turns among the turns `present`."""
    shown = set(present)
    hits = [e in shown for e in evidence]
    return all(hits) and bool(hits), any(hits)


def present_turns(
    event_ids: Iterable[str],
    entry_ids: Iterable[str],
    turn_of_event: Mapping[str, str],
    folded: Mapping[str, Sequence[str]] | None = None,
) -> set[str]:
    """The turns a context shows: its events' turns (strict), plus with `folded` (entry id ->
    the turns it folded) the turns of the summaries it packed (lenient)."""
    turns = {turn_of_event[e] for e in event_ids if e in turn_of_event}
    if folded is not None:
        for entry in entry_ids:
            turns.update(folded.get(entry, ()))
    return turns


def newer_first(
    newer: str,
    older: Sequence[str],
    position: Mapping[str, int | None],
    tie: Callable[[str, str], bool] | None = None,
) -> bool:
    """The newer statement's turn is present and before every older one that is present.

    `position` maps a turn to where its item stands in the context (None: absent); two turns
    in the same item (one summary) are ordered by `tie(newer, older)`."""
    at = position.get(newer)
    if at is None:
        return False
    for turn in older:
        other = position.get(turn)
        if other is None:
            continue
        if other < at or (other == at and not (tie is not None and tie(newer, turn))):
            return False
    return True


def positions_in(markdown: str, item_of_turn: Mapping[str, str]) -> dict[str, int | None]:
    """Each turn's position in the Markdown: where the id of the item that shows it (its
    event, or the summary that folded it) first appears; None when it does not."""
    out: dict[str, int | None] = {}
    for turn, item in item_of_turn.items():
        at = markdown.find(item)
        out[turn] = None if at < 0 else at
    return out


# ------------------------------------------------------------------------------ baselines


@dataclass(frozen=True, slots=True)
class BaseTurn:
    id: str
    kind: str
    header: str  # what the product's Markdown shows above an event, of the same length
    body: str


def render(turn: BaseTurn) -> str:
    return f"### {turn.header}\n\n{turn.body}\n\n"


HEADING = "## Recent events\n\n"


@dataclass
class Packed:
    turns: list[str] = field(default_factory=list)
    markdown: str = ""
    tokens: int = 0


def pack(ranked: Iterable[BaseTurn], budget: int) -> Packed:
    """Whole items in rank order, each that still fits (first fit), counted with the product's
    token estimate the way it counts its own Markdown: one piece at a time."""
    out = Packed(tokens=estimate_tokens(HEADING))
    parts = [HEADING]
    for turn in ranked:
        text = render(turn)
        cost = estimate_tokens(text)
        if out.tokens + cost <= budget:
            out.turns.append(turn.id)
            parts.append(text)
            out.tokens += cost
    if not out.turns:
        return Packed()
    out.markdown = "".join(parts)
    return out


_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(question: str) -> str:
    """The question's words, each quoted, OR-ed: plain bm25 over any of them."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
    return " OR ".join(f'"{w}"' for w in words)


class Bm25:
    """A plain SQLite FTS5 table of one conversation's turns (porter + unicode61), ranked by
    bm25: the baseline the product's ranking is compared with."""

    def __init__(self, turns: Sequence[BaseTurn]) -> None:
        self.turns = {t.id: t for t in turns}
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='porter')")
        self.db.executemany("INSERT INTO t VALUES (?, ?)", [(t.id, t.body) for t in turns])

    def ranked(self, question: str, limit: int = 1000) -> list[BaseTurn]:
        query = fts_query(question)
        if not query:
            return []
        rows = self.db.execute(
            "SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (query, limit)
        ).fetchall()
        return [self.turns[r[0]] for r in rows]

    def close(self) -> None:
        self.db.close()


def recency(turns: Sequence[BaseTurn], order: Mapping[str, int]) -> list[BaseTurn]:
    """Newest first (`order`: the turn's place in the conversation)."""
    return sorted(turns, key=lambda t: order[t.id], reverse=True)


def recall_at(ranked_turns: Sequence[Iterable[str]], evidence: Sequence[str], k: int) -> bool:
    """An evidence turn among the first k results (each result: the turns it holds)."""
    wanted = set(evidence)
    return any(wanted & set(group) for group in ranked_turns[:k])


# --------------------------------------------------------------------------------- tally


@dataclass
class Tally:
    """Hits and questions per (set, category, measure); 'all' is added for every question."""

    hits: dict[tuple[str, str, str], int] = field(default_factory=dict)
    n: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def add(self, dataset: str, category: str, measure: str, hit: bool) -> None:
        for c in (category, "all"):
            key = (dataset, c, measure)
            self.hits[key] = self.hits.get(key, 0) + int(hit)
            self.n[key] = self.n.get(key, 0) + 1

    def rate(self, dataset: str, category: str, measure: str) -> float | None:
        n = self.n.get((dataset, category, measure), 0)
        return None if n == 0 else self.hits.get((dataset, category, measure), 0) / n

    def count(self, dataset: str, category: str, measure: str) -> int:
        return self.n.get((dataset, category, measure), 0)

    def as_dict(self) -> dict[str, dict[str, dict[str, dict[str, float | int]]]]:
        out: dict[str, dict[str, dict[str, dict[str, float | int]]]] = {}
        for (d, c, m), n in sorted(self.n.items()):
            out.setdefault(d, {}).setdefault(c, {})[m] = {
                "n": n,
                "rate": round(self.hits.get((d, c, m), 0) / n, 4),
            }
        return out


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (nearest rank) of `values`; nan when there are none."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]
