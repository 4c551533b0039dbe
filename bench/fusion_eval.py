"""Search by meaning, evaluated: recall@5/10/20 of memoryEntries search by keywords, by
meaning (dense), and fused, on the context-loader set (docs/context-eval.md), each turn one
entry (its speaker's first name a tag), tuned on the train split and reported on held-out.

Usage: .venv/bin/python -m bench.fusion_eval [--quick] [--json OUT]
The score fusion's weight, zero and tag boost are chosen by R@5 + R@10 + R@20 on train;
docs/search.md holds the table this prints (and the rank fusion it replaced).
"""

import argparse
import asyncio
import itertools
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select

from app.config import Settings
from app.deps import build
from app.services import entries, tenants
from app.services.records import EntryFilter, EntryIn, Scope
from app.services.search import fusion, indexer, keywords
from app.storage.models import entries_table as en
from app.storage.search import spec
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement
from bench.context_eval import RECALL_AT, EvalSet, Question, read_set

# The score fusion's grid (app/services/search/fusion.py): the dense side's weight, the similarity
# counted as nothing, the tag boost; chosen by R@5 + R@10 + R@20 on train.
WEIGHTS = (0.1, 0.15, 0.2, 0.25, 0.3)
ZEROS = (0.0, 0.05, 0.1)
BOOSTS = (0.0, 0.1, 0.2, 0.3)
FLOOR = 0.15  # a hit by meaning alone (JET_FUSION_MIN_SIMILARITY)
DEPTH = 100  # each side's hits that fusion ranks (the keyword side's page maximum)
_SPEAKER = re.compile(r"^([A-Z][\w'-]*)(?: [A-Z][\w'-]*)?: ")


async def load(db: TenantDb, evalset: EvalSet) -> dict[int, str]:
    """Every turn as an entry of its conversation's scope: entry seq -> turn id."""
    turn_of: dict[str, str] = {}
    for conv in evalset.conversations.values():
        for turn in conv["turns"]:
            speaker = _SPEAKER.match(turn["body"])
            e = await entries.create_entry(
                db,
                EntryIn(
                    Scope(conv["scope"]),
                    conv["scope_ref"],
                    turn["body"][:200],
                    turn["body"],
                    tags=[speaker.group(1)] if speaker else [],
                ),
            )
            turn_of[e.id] = turn["id"]
    async with read_statement(db.engine) as conn:
        rows = await conn.execute(select(en.c.seq, en.c.id))
        return {int(seq): turn_of[eid] for seq, eid in rows}


def _recall(ranked: Sequence[int], turn_of: dict[int, str], q: Question) -> dict[int, bool]:
    found = [turn_of.get(s) for s in ranked]
    return {k: bool(set(found[:k]) & set(q.evidence)) for k in RECALL_AT}


async def rankings(
    db: TenantDb, sem: fusion.Semantic, evalset: EvalSet, q: Question
) -> dict[str, Any]:
    """One question's keyword ranking (seq, rank), dense rankings (seq, similarity; plain
    and entity-aware, no floor) and the seqs carrying a tag named in it."""
    conv = evalset.conversations[q.conversation]
    flt = EntryFilter(search=q.question, scope=Scope(conv["scope"]), scope_ref=conv["scope_ref"])
    embedder = await sem.embedder_for(db.tenant_id)
    assert embedder is not None
    matrix = await fusion.current_matrix(db, sem, embedder.model)
    hwm = 2**31 - 1
    keyword = await keywords.keyword_ranking(db, flt, hwm, DEPTH)
    aware, entity = await fusion.dense_ranking(db, sem, embedder, matrix, flt, hwm)
    target = spec.Target.of_engine(db.engine)
    plain = await fusion._dense(
        db, sem, embedder, matrix, fusion.where_of(flt, target), hwm, q.question
    )
    seqs = list(dict.fromkeys([s for s, _ in keyword] + [s for s, _ in aware]))
    boosted = await fusion._carrying(db, entity, flt, seqs) if entity else set()
    return {"keyword": keyword, "plain": plain, "aware": aware, "boosted": boosted}


def rrf(
    keyword: Sequence[int], dense: Sequence[int], k: int, boosted: set[int], boost: float
) -> list[int]:
    """Reciprocal rank fusion (the fusion before this one, kept for the comparison): each
    seq scores 1/(k + rank) per side, plus `boost` times a first rank's score if boosted."""
    scores: dict[int, float] = {}
    for ranking in (keyword, dense):
        for rank, seq in enumerate(ranking, 1):
            scores[seq] = scores.get(seq, 0.0) + 1.0 / (k + rank)
    for seq in boosted & scores.keys():
        scores[seq] += boost / (k + 1)
    at = {seq: i for i, seq in enumerate(keyword)}
    return sorted(scores, key=lambda s: (-scores[s], at.get(s, len(at)), -s))


def measures(r: dict[str, Any]) -> dict[str, list[int]]:
    def floored(side: str) -> list[int]:  # meaning alone: the product's floor applies
        return [s for s, sim in r[side] if sim >= FLOOR]

    kw = [s for s, _ in r["keyword"]]
    out = {"keywords": kw, "dense": floored("plain"), "dense, entity-aware": floored("aware")}
    out["rrf k=60 plain"] = rrf(kw, floored("plain"), 60, set(), 0)
    out["rrf k=5 boost=1.0"] = rrf(kw, floored("aware"), 5, r["boosted"], 1.0)
    for weight, zero, boost in itertools.product(WEIGHTS, ZEROS, BOOSTS):
        sem = fusion.Semantic(
            _none, weight=weight, zero=zero, tag_boost=boost, min_similarity=FLOOR
        )
        fused = fusion.fuse(r["keyword"], r["aware"], sem, boosted=r["boosted"])
        out[f"scores w={weight} zero={zero} boost={boost}"] = [s for s, _ in fused]
    return out


async def _none(_tenant: str) -> None:
    return None


async def run(quick: bool) -> dict[str, Any]:
    evalset = read_set()
    if quick:
        keep = [c for c in evalset.conversations if c in {"c00", "c01", "c07", "c08"}]
        evalset = evalset.only(keep or list(evalset.conversations)[:4])
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp))
        c = await build(settings)
        try:
            tenant, _ = await tenants.create_tenant(c.control, c.tenants, "eval")
            async with c.tenants.lease(tenant.id) as db:
                t0 = time.perf_counter()
                turn_of = await load(db, evalset)
                t1 = time.perf_counter()
                sem = c.semantic
                assert sem is not None, "the local embedder is installed by make"
                sem.depth = DEPTH
                sem.zero = -2.0  # every similarity: each variant applies its own
                embedder = await sem.embedder_for(db.tenant_id)
                assert embedder is not None
                await indexer.catch_up(db, embedder, batch=256, owner="eval")
                t2 = time.perf_counter()
                hits: dict[tuple[str, str, int], int] = {}
                counts: dict[str, int] = {}
                for q in evalset.questions:
                    counts[q.split] = counts.get(q.split, 0) + 1
                    for name, ranked in measures(await rankings(db, sem, evalset, q)).items():
                        for k, hit in _recall(ranked, turn_of, q).items():
                            hits[(q.split, name, k)] = hits.get((q.split, name, k), 0) + hit
        finally:
            await c.aclose()
    rates = {
        split: {
            name: {k: hits.get((split, name, k), 0) / n for k in RECALL_AT}
            for name in sorted({m for (_, m, _) in hits})
        }
        for split, n in counts.items()
    }
    fused = [m for m in rates["train"] if m.startswith("scores")]
    best = max(fused, key=lambda m: (sum(rates["train"][m].values()), rates["train"][m][10]))
    return {
        "entries": len(turn_of),
        "questions": counts,
        "load_s": t1 - t0,
        "embed_s": t2 - t1,
        "model": embedder.model,
        "chosen_on_train": best,
        "rates": rates,
    }


def table(result: dict[str, Any]) -> str:
    rows = [
        "keywords",
        "dense",
        "dense, entity-aware",
        "rrf k=60 plain",
        "rrf k=5 boost=1.0",
        f"scores w={fusion.DENSE_WEIGHT} zero={fusion.SIMILARITY_ZERO} boost={fusion.TAG_BOOST}",
        result["chosen_on_train"],
    ]
    lines = []
    for split in ("train", "held-out"):
        lines.append(f"{split} ({result['questions'][split]} questions)   R@5   R@10   R@20")
        for name in dict.fromkeys(rows):
            r = result["rates"][split][name]
            lines.append(f"  {name:36s}" + "".join(f" {100 * r[k]:5.1f}" for k in RECALL_AT))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="four conversations only")
    p.add_argument("--json", type=Path, help="write the whole result here")
    args = p.parse_args(argv)
    result = asyncio.run(run(args.quick))
    print(
        f"{result['entries']} entries embedded by {result['model']} in "
        f"{result['embed_s']:.1f} s; chosen on train: {result['chosen_on_train']}"
    )
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
