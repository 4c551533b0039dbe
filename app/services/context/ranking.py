"""How the context loader orders a scope's entries: relevance to the question, lifted by
importance and recency (the formula in Weights), ties to importance then recency."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Weights:
    """score = relevance · (1 + importance·(imp−1)/4 + recency·0.5^(age_days/half_life))."""

    importance: float
    recency: float
    half_life_days: float


# Tuned by bench/tune_context.py on tests/fixtures/context_labelled.json (docs/context.md).
WEIGHTS = Weights(importance=2.0, recency=5.0, half_life_days=365.0)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What ranking needs of an entry, read before its text."""

    seq: int
    importance: int
    updated_at: datetime
    # −bm25 scaled so the best match is 1.0 (the scale does not change the order);
    # 0.0 for an entry that does not match the query.
    relevance: float


def score(c: Candidate, weights: Weights, now: datetime) -> float:
    """The documented formula (module docstring); higher is better, 0 when unmatched.

    Multiplying rather than adding keeps text relevance in charge: importance and recency
    reorder the entries that match, never lift one that does not above one that does.
    """
    age_days = max((now - c.updated_at).total_seconds(), 0.0) / 86_400
    recency = math.pow(0.5, age_days / weights.half_life_days)
    importance = (c.importance - 1) / 4
    return c.relevance * (1 + weights.importance * importance + weights.recency * recency)


def by_importance(c: Candidate) -> tuple[int, float, int]:
    return (-c.importance, -c.updated_at.timestamp(), -c.seq)


def rank(candidates: Sequence[Candidate], weights: Weights, now: datetime) -> list[Candidate]:
    """Best first; ties (the unmatched all score 0) go to importance, then recency."""
    return sorted(candidates, key=lambda c: (-score(c, weights, now), *by_importance(c)))
