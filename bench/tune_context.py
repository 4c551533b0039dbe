"""Grid-search the memoryContext ranking weights on the labelled set; prints the best.

Usage: .venv/bin/python -m bench.tune_context [--fixture tests/fixtures/context_labelled.json]
The chosen weights go into app/services/context/loader.py (WEIGHTS) and docs/context.md by hand.
"""

import argparse
import asyncio
import itertools
import json
import math
import statistics
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from app.config import Settings
from app.deps import build
from app.services import tenants
from app.services.context import loader, ranking
from app.services.entries import insert_entry
from app.services.records import EntryIn, EntrySource, Scope
from app.storage.models import entries_table
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction, write_transaction

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "context_labelled.json"
K = 5
GRID_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
GRID_HALF_LIVES = (7.0, 14.0, 30.0, 60.0, 90.0, 180.0, 365.0)
BASELINE = ranking.Weights(importance=0.0, recency=0.0, half_life_days=30.0)  # bm25 only


async def load(db: TenantDb, entries: list[dict[str, Any]]) -> dict[int, str]:
    """Insert the labelled entries with their own dates; returns entry seq -> fixture key."""
    keys: dict[str, str] = {}
    async with write_transaction(db.engine) as conn:
        for e in entries:
            row = await insert_entry(
                conn,
                EntryIn(
                    scope=Scope(e["scope"]),
                    scope_ref=e["scope_ref"],
                    title=e["title"],
                    summary=e["summary"],
                    tags=e["tags"],
                    importance=e["importance"],
                    source=EntrySource(e["source"]),
                ),
                now=datetime.fromisoformat(e["updated_at"]),
            )
            keys[row.id] = e["key"]
        rows = await conn.execute(select(entries_table.c.seq, entries_table.c.id))
        return {r.seq: keys[r.id] for r in rows}


def ndcg(ranked: Sequence[str], relevant: Sequence[str], k: int = K) -> float:
    gain = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:k]) if key in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return gain / ideal


def mrr(ranked: Sequence[str], relevant: Sequence[str]) -> float:
    return next((1 / (i + 1) for i, key in enumerate(ranked) if key in relevant), 0.0)


Pools = list[tuple[list[ranking.Candidate], list[str]]]


def evaluate(
    pools: Pools, keys: dict[int, str], w: ranking.Weights, now: datetime
) -> tuple[float, float, float]:
    """Mean nDCG@K, mean MRR, and the share of questions with every answer in the top K."""
    nd, rr, hit = [], [], []
    for cands, relevant in pools:
        ranked = [keys[c.seq] for c in ranking.rank(cands, w, now)]
        nd.append(ndcg(ranked, relevant))
        rr.append(mrr(ranked, relevant))
        hit.append(float(set(relevant) <= set(ranked[:K])))
    return statistics.fmean(nd), statistics.fmean(rr), statistics.fmean(hit)


def grid() -> dict[tuple[int, int, int], ranking.Weights]:
    return {
        (a, b, c): ranking.Weights(importance=i, recency=r, half_life_days=h)
        for (a, i), (b, r), (c, h) in itertools.product(
            enumerate(GRID_WEIGHTS), enumerate(GRID_WEIGHTS), enumerate(GRID_HALF_LIVES)
        )
    }


Scored = list[tuple[float, tuple[float, float, float], ranking.Weights]]


def best(pools: Pools, keys: dict[int, str], now: datetime) -> Scored:
    """Grid points by nDCG@K averaged over each point and its grid neighbours.

    Eighteen questions are few: a lone peak is likely luck, a high plateau is not, so the
    choice goes to the point whose neighbourhood scores best (then raw nDCG, then MRR).
    """
    points = grid()
    raw = {at: evaluate(pools, keys, w, now) for at, w in points.items()}
    scored: Scored = []
    for (a, b, c), w in points.items():
        near = [
            raw[n][0]
            for n in itertools.product(
                range(a - 1, a + 2), range(b - 1, b + 2), range(c - 1, c + 2)
            )
            if n in raw
        ]
        scored.append((statistics.fmean(near), raw[(a, b, c)], w))
    scored.sort(key=lambda s: (-s[0], -s[1][0], -s[1][1]))
    return scored


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    args = parser.parse_args()
    data = json.loads(args.fixture.read_text())
    now = datetime.fromisoformat(data["as_of"])

    with tempfile.TemporaryDirectory() as tmp:
        container = await build(Settings(_env_file=None, data_dir=Path(tmp)))
        try:
            tenant, _ = await tenants.create_tenant(container.control, container.tenants, "tune")
            async with container.tenants.lease(tenant.id) as db:
                keys = await load(db, data["entries"])
                pools: Pools = []
                async with read_transaction(db.engine) as conn:
                    for q in data["questions"]:
                        scopes = loader.scopes_of(
                            Scope(q["scope"]), q["scope_ref"], q["include_institutional"]
                        )
                        cands = await loader.candidates(
                            conn, scopes=scopes, query=q["query"], limit=1000
                        )
                        pools.append((cands, q["relevant"]))
        finally:
            await container.aclose()

    print(f"{len(data['entries'])} entries, {len(pools)} questions; metric nDCG@{K} (then MRR)")
    fmt = "nDCG@{k}={0:.3f}  MRR={1:.3f}  all-in-top-{k}={2:.0%}"
    print("baseline (bm25 only):", fmt.format(*evaluate(pools, keys, BASELINE, now), k=K))
    print(
        "current WEIGHTS     :",
        fmt.format(*evaluate(pools, keys, ranking.WEIGHTS, now), k=K),
        ranking.WEIGHTS,
    )
    ranked = best(pools, keys, now)
    print("best of the grid (by nDCG@5 over each point's neighbourhood):")
    for smooth, metrics, w in ranked[:10]:
        print(f"   around {smooth:.3f}", fmt.format(*metrics, k=K), w)

    # Leave-one-out: tune on all questions but one, score that one; an honest estimate
    # of how the tuned formula does on a question it was not tuned on.
    held = []
    for i in range(len(pools)):
        rest = pools[:i] + pools[i + 1 :]
        w = best(rest, keys, now)[0][2]
        held.append(evaluate([pools[i]], keys, w, now))
    print(
        "leave-one-out:", fmt.format(*(statistics.fmean(h[j] for h in held) for j in range(3)), k=K)
    )

    print("per question with current WEIGHTS (top 5):")
    for (cands, relevant), q in zip(pools, data["questions"], strict=True):
        top = [keys[c.seq] for c in ranking.rank(cands, ranking.WEIGHTS, now)][:K]
        base = [keys[c.seq] for c in ranking.rank(cands, BASELINE, now)][:K]
        mark = "ok " if set(relevant) <= set(top) else "MISS"
        print(f"  {mark} {q['query']!r}\n       tuned: {top}\n       bm25 : {base}")


if __name__ == "__main__":
    asyncio.run(main())
