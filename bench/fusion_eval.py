"""Search by meaning, evaluated: recall@5/10/20 of memoryEntries search by keywords, by
meaning (dense), and fused, on the context-loader set (docs/context-eval.md), each turn one
entry (its speaker's first name a tag), tuned on the train split and reported on held-out.

Usage: .venv/bin/python -m bench.fusion_eval [--quick] [--json OUT]
The fusion constant k and the tag boost are chosen by recall@10 on train; docs/search.md
holds the table this prints.
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
from app.services import entries, fusion, indexer, tenants
from app.services.records import EntryFilter, EntryIn, Scope
from app.storage import fulltext
from app.storage.models import entries_table as en
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement
from bench.context_eval import RECALL_AT, EvalSet, Question, read_set

KS = (5, 10, 20, 60)
BOOSTS = (0.0, 0.5, 1.0)
DEPTH = 100  # each side's hits that fusion ranks (the keyword side's page maximum)
_SPEAKER = re.compile(r"^([A-Z][\w'-]*)(?: [A-Z][\w'-]*)?: ")


async def load(db: TenantDb, evalset: EvalSet) -> dict[int, str]:
    """Every turn as an entry of its conversation's scope: entry seq -> turn id."""
    turn_of: dict[str, str] = {}
    for conv in evalset.conversations.values():
        for turn in conv["turns"]:
            speaker = _SPEAKER.match(turn["body"])
            e = await entries.create_entry(db, EntryIn(
                Scope(conv["scope"]), conv["scope_ref"], turn["body"][:200], turn["body"],
                tags=[speaker.group(1)] if speaker else [],
            ))  # fmt: skip
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
    """One question's keyword, dense (plain and entity-aware) rankings and boosted seqs."""
    conv = evalset.conversations[q.conversation]
    flt = EntryFilter(search=q.question, scope=Scope(conv["scope"]), scope_ref=conv["scope_ref"])
    embedder = sem.embedder_for(db.tenant_id)
    assert embedder is not None
    matrix = await fusion.current_matrix(db, sem, embedder.model)
    hwm = 2**31 - 1
    keyword = await entries._keyword_rows(db, flt, hwm, DEPTH)
    n = len(entries.COLUMNS)
    aware, entity = await fusion.dense_ranking(db, sem, embedder, matrix, flt, hwm)
    target = fulltext.Target.of_engine(db.engine)
    plain = await fusion._dense(db, sem, embedder, matrix, fusion.where_of(flt, target), hwm,
                                q.question)  # fmt: skip
    tags = {int(r[n]): set(r[5]) for r in keyword}
    if entity:
        async with read_statement(db.engine) as conn:
            seqs = [s for s, _ in aware if s not in tags]
            for seq, t in await conn.execute(select(en.c.seq, en.c.tags).where(en.c.seq.in_(seqs))):
                tags[int(seq)] = set(t)
    return {
        "keyword": [int(r[n]) for r in keyword],
        "plain": [s for s, _ in plain],
        "aware": [s for s, _ in aware],
        "boosted": {s for s, t in tags.items() if entity & t},
    }


def measures(r: dict[str, Any]) -> dict[str, list[int]]:
    out = {"keywords": r["keyword"], "dense": r["plain"], "dense, entity-aware": r["aware"]}
    for k, boost in itertools.product(KS, BOOSTS):
        out[f"fusion k={k} boost={boost}"] = fusion.fuse(
            r["keyword"], r["aware"], k=k, boosted=r["boosted"], boost=boost
        )
        out[f"fusion k={k} plain"] = fusion.fuse(r["keyword"], r["plain"], k=k, boosted=set())
    return out


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
                embedder = sem.embedder_for(db.tenant_id)
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
    fused = [m for m in rates["train"] if m.startswith("fusion")]
    best = max(fused, key=lambda m: (rates["train"][m][10], rates["train"][m][20]))
    return {
        "entries": len(turn_of), "questions": counts, "load_s": t1 - t0, "embed_s": t2 - t1,
        "model": embedder.model, "chosen_on_train": best, "rates": rates,
    }  # fmt: skip


def table(result: dict[str, Any]) -> str:
    rows = ["keywords", "dense", "dense, entity-aware", "fusion k=60 plain", "fusion k=10 plain",
            "fusion k=10 boost=0.5", result["chosen_on_train"]]  # fmt: skip
    lines = []
    for split in ("train", "held-out"):
        lines.append(f"{split} ({result['questions'][split]} questions)   R@5   R@10   R@20")
        for name in dict.fromkeys(rows):
            r = result["rates"][split][name]
            lines.append(f"  {name:28s}" + "".join(f" {100 * r[k]:5.1f}" for k in RECALL_AT))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="four conversations only")
    p.add_argument("--json", type=Path, help="write the whole result here")
    args = p.parse_args(argv)
    result = asyncio.run(run(args.quick))
    print(f"{result['entries']} entries embedded by {result['model']} in "
          f"{result['embed_s']:.1f} s; chosen on train: {result['chosen_on_train']}")  # fmt: skip
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
