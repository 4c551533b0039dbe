"""The context loader's evaluation: search recall and answers in context, before/after compaction.

Usage: .venv/bin/python -m bench.context_eval [--quick] [--split S] [--without CHANGE]
       [--json OUT] [--tune BUDGET]
Loads tests/fixtures/context_eval/conversations.json into a fresh tenant through the services
(each turn one event at its own date), asks every question through memoryContext and the
searches, compacts what is older than 90 days before the set's 'now' with the built-in
summariser, asks again; prints the rates per split and question type (docs/context.md).
"""

import argparse
import asyncio
import itertools
import json
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from app.config import Settings
from app.deps import Container, build
from app.services import entries, events, tenants
from app.services.compaction import compact_tenant
from app.services.context import evidence, loader, time_phrases
from app.services.records import EntryFilter, EntrySource, EventFilter, EventIn, Scope
from app.storage.tenants import TenantDb

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/context_eval/conversations.json"
BUDGETS = (1000, 2000, 4000)
RECALL_AT = (5, 10, 20)
TYPES = ("single-hop", "multi-hop", "temporal", "open-domain")
KIND = "chat_turn"
BATCH = 500


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    conversation: str
    split: str
    type: str
    question: str
    answer: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvalSet:
    now: datetime
    conversations: dict[str, dict[str, Any]]  # id -> {"scope_ref", "split", "turns", ...}
    questions: list[Question]

    def only(self, conversation_ids: Iterable[str]) -> "EvalSet":
        keep = set(conversation_ids)
        return EvalSet(
            self.now,
            {k: v for k, v in self.conversations.items() if k in keep},
            [q for q in self.questions if q.conversation in keep],
        )


def read_set(path: Path = FIXTURE) -> EvalSet:
    data = json.loads(path.read_text())
    questions = [
        Question(
            q["id"],
            q["conversation"],
            q["split"],
            q["type"],
            q["question"],
            q["answer"],
            tuple(q["evidence"]),
        )
        for q in data["questions"]
    ]
    return EvalSet(_time(data["now"]), {c["id"]: c for c in data["conversations"]}, questions)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def load(db: TenantDb, evalset: EvalSet) -> int:
    """Appends every turn as an event of its conversation's scope at its own date."""
    n = 0
    for conv in evalset.conversations.values():
        batch = [
            EventIn(
                scope=Scope(conv["scope"]),
                scope_ref=conv["scope_ref"],
                kind=KIND,
                body=t["body"],
                source="chat",
                source_ref=t["id"],
                occurred_at=_time(t["at"]),
            )
            for t in conv["turns"]
        ]
        for i in range(0, len(batch), BATCH):
            await events.append_events(db, batch[i : i + BATCH])
        n += len(batch)
    return n


@dataclass
class Tally:
    """Hits and questions per (split, type) for each measure."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    hits: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def add(self, q: Question, measure: str, hit: bool) -> None:
        for t in (q.type, "all"):
            key = (q.split, t, measure)
            self.hits[key] = self.hits.get(key, 0) + int(hit)

    def count(self, q: Question) -> None:
        for t in (q.type, "all"):
            self.counts[(q.split, t)] = self.counts.get((q.split, t), 0) + 1

    def rate(self, split: str, type_: str, measure: str) -> float | None:
        n = self.counts.get((split, type_), 0)
        return None if n == 0 else self.hits.get((split, type_, measure), 0) / n

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for (split, type_), n in sorted(self.counts.items()):
            ms = sorted(m for s, t, m in self.hits if (s, t) == (split, type_))
            out.setdefault(split, {})[type_] = {
                "n": n,
                **{m: self.rate(split, type_, m) for m in ms},
            }
        return out


def _conv(evalset: EvalSet, q: Question) -> dict[str, Any]:
    return evalset.conversations[q.conversation]


async def in_context(db: TenantDb, evalset: EvalSet, q: Question, budget: int) -> bool:
    """Whether memoryContext, asked the question, shows the gold answer verbatim."""
    conv = _conv(evalset, q)
    result = await loader.load_context(
        db,
        scope=Scope(conv["scope"]),
        scope_ref=conv["scope_ref"],
        query=q.question,
        max_tokens=budget,
        include_institutional=True,
        now=evalset.now,
    )
    return q.answer.lower() in result.markdown.lower()


async def events_found(db: TenantDb, evalset: EvalSet, q: Question, k: int) -> list[str]:
    """The turn ids of memoryEvents search's first k answers (every event, compressed or not)."""
    conv = _conv(evalset, q)
    flt = EventFilter(scope=Scope(conv["scope"]), scope_ref=conv["scope_ref"], search=q.question)
    page = await events.list_events(db, flt, first=k, after=None)
    return [e.node.source_ref or "" for e in page.edges]


async def entries_found(
    db: TenantDb, evalset: EvalSet, q: Question, k: int, folded: dict[str, set[str]]
) -> list[set[str]]:
    """The turns folded into each of memoryEntries search's first k answers."""
    conv = _conv(evalset, q)
    flt = EntryFilter(scope=Scope(conv["scope"]), scope_ref=conv["scope_ref"], search=q.question)
    page = await entries.list_entries(db, flt, first=k, after=None)
    return [folded.get(e.node.id, set()) for e in page.edges]


async def provenance(db: TenantDb, evalset: EvalSet) -> dict[str, set[str]]:
    """Compactor entry id -> the turn ids it folded (through the sources service)."""
    out: dict[str, set[str]] = {}
    for conv in evalset.conversations.values():
        flt = EntryFilter(
            scope=Scope(conv["scope"]), scope_ref=conv["scope_ref"], sources=[EntrySource.COMPACTOR]
        )
        after: str | None = None
        while True:
            page = await entries.list_entries(db, flt, first=100, after=after)
            for edge in page.edges:
                out[edge.node.id] = await _folded(db, edge.node.id)
            if not page.has_next_page:
                break
            after = page.end_cursor
    return out


async def _folded(db: TenantDb, entry_id: str) -> set[str]:
    turns: set[str] = set()
    after: str | None = None
    while True:
        page = await entries.source_events(db, entry_id, first=100, after=after)
        turns.update(e.node.source_ref or "" for e in page.edges)
        if not page.has_next_page:
            return turns
        after = page.end_cursor


async def memory_text(db: TenantDb, conv: dict[str, Any]) -> str:
    """Everything the loader could still show of a conversation: every entry's text and
    every uncompressed event's body, lower-cased."""
    scope, ref = Scope(conv["scope"]), conv["scope_ref"]
    texts: list[str] = []
    after: str | None = None
    while True:
        page = await entries.list_entries(
            db, EntryFilter(scope=scope, scope_ref=ref), first=100, after=after
        )
        texts.extend(f"{e.node.title}\n{e.node.summary}" for e in page.edges)
        if not page.has_next_page:
            break
        after = page.end_cursor
    after = None
    while True:
        flt = EventFilter(scope=scope, scope_ref=ref, compressed=False)
        evs, after = await events.list_events_next(db, flt, first=100, after=after)
        texts.extend(e.body for e in evs)
        if after is None:
            return "\n".join(texts).lower()


async def ask(
    db: TenantDb, evalset: EvalSet, tally: Tally, phase: str, budgets: Sequence[int] = BUDGETS
) -> None:
    """Every question at every budget (and, before compaction, the events search)."""
    folded = await provenance(db, evalset) if phase == "after" else {}
    kept = {}
    if phase == "after":
        kept = {cid: await memory_text(db, conv) for cid, conv in evalset.conversations.items()}
    for q in evalset.questions:
        if phase == "before":
            tally.count(q)
            found = await events_found(db, evalset, q, max(RECALL_AT))
            for k in RECALL_AT:
                tally.add(q, f"events R@{k}", any(t in q.evidence for t in found[:k]))
        else:
            tally.add(q, "kept", q.answer.lower() in kept[q.conversation])
            groups = await entries_found(db, evalset, q, max(RECALL_AT), folded)
            for k in RECALL_AT:
                tally.add(q, f"entries R@{k}", any(g & set(q.evidence) for g in groups[:k]))
        for budget in budgets:
            tally.add(q, f"{phase} {budget}", await in_context(db, evalset, q, budget))


async def evaluate(
    container: Container, tenant_id: str, evalset: EvalSet, budgets: Sequence[int] = BUDGETS
) -> Tally:
    """Loads the set into the (empty) tenant, asks, compacts, asks again."""
    tally = Tally()
    async with container.tenants.lease(tenant_id) as db:
        await load(db, evalset)
        await ask(db, evalset, tally, "before", budgets)
    run = await compact_tenant(container, tenant_id, trigger="cli", now=evalset.now)
    if run.problems:
        raise RuntimeError(f"compaction left buckets: {run.problems[:3]}")
    async with container.tenants.lease(tenant_id) as db:
        await ask(db, evalset, tally, "after", budgets)
    return tally


def table(tally: Tally, budgets: Sequence[int] = BUDGETS) -> str:
    """One block per split: rows per question type, columns per measure (percent)."""
    measures = [f"events R@{k}" for k in RECALL_AT] + [f"entries R@{k}" for k in RECALL_AT]
    measures += [f"before {b}" for b in budgets] + ["kept"] + [f"after {b}" for b in budgets]
    heads = ["ev@5", "ev@10", "ev@20", "en@5", "en@10", "en@20"]
    heads += [f"raw {b // 1000}k" for b in budgets] + ["kept"]
    heads += [f"cmp {b // 1000}k" for b in budgets]
    lines = []
    for split in ("train", "held-out"):
        if (split, "all") not in tally.counts:
            continue
        lines.append(f"{split:<12} {'n':>4} " + " ".join(f"{h:>6}" for h in heads))
        for type_ in (*TYPES, "all"):
            n = tally.counts.get((split, type_), 0)
            if not n:
                continue
            cells = []
            for m in measures:
                r = tally.rate(split, type_, m)
                cells.append(f"{'':>6}" if r is None else f"{100 * r:6.1f}")
            lines.append(f"  {type_:<10} {n:>4} " + " ".join(cells))
        lines.append("")
    legend = (
        "ev@k: an evidence turn in memoryEvents search's first k; en@k: in the turns folded "
        "into memoryEntries search's first k after compaction; raw/cmp Nk: the gold answer "
        "verbatim in memoryContext at N tokens, before/after compaction; kept: the answer "
        "still in the scope's entries or uncompressed events after compaction (percent)."
    )
    return "\n".join(lines) + legend


# The grid of --tune (train split only): raw events' weights, then the shares of a budget.
GRID_EVENTS = list(itertools.product((0.0, 0.5, 1.0, 3.0), (30.0, 90.0, 365.0), (1.0, 4.0, 10.0)))
GRID_SHARES = list(itertools.product((0.2, 0.34, 0.5), (0.5, 0.7, 0.85)))


async def _rate(db: TenantDb, evalset: EvalSet, budget: int) -> float:
    hits = [await in_context(db, evalset, q, budget) for q in evalset.questions]
    return sum(hits) / len(hits)


async def tune(container: Container, tenant_id: str, evalset: EvalSet, budget: int) -> None:
    """Prints the rate at `budget` of each setting: evidence.EVENT_WEIGHTS before
    compaction, evidence.ITEM_SHARE and context.ENTRIES_SHARE after; the chosen values go
    into those modules by hand (docs/context-eval.md)."""
    async with container.tenants.lease(tenant_id) as db:
        await load(db, evalset)
        print(f"raw events, {budget} tokens: recency half_life window -> rate")
        for r, h, w in GRID_EVENTS:
            evidence.EVENT_WEIGHTS = evidence.EventWeights(r, h, w)
            print(f"  {r:5.1f} {h:6.0f} {w:5.1f} -> {await _rate(db, evalset, budget):.3f}")
    await compact_tenant(container, tenant_id, trigger="cli", now=evalset.now)
    async with container.tenants.lease(tenant_id) as db:
        print(f"compacted, {budget} tokens: item_share entries_share -> rate")
        for i, e in GRID_SHARES:
            evidence.ITEM_SHARE, loader.ENTRIES_SHARE = i, e
            print(f"  {i:5.2f} {e:5.2f} -> {await _rate(db, evalset, budget):.3f}")


async def _no_ranked_events(*args: Any, **kwargs: Any) -> list[int]:
    return []


def without(changes: Sequence[str]) -> None:
    """Turns off changes of the loader's question path in this process, to measure each
    one's part: `events` (relevance order of raw events), `passages`, `window` (time)."""
    for change in changes:
        if change == "events":
            evidence.ranked_events = _no_ranked_events
        elif change == "passages":
            evidence.PASSAGES_OVER_TOKENS = 10**9
        elif change == "window":
            time_phrases.window = lambda question, now: None
        else:
            raise SystemExit(f"--without takes events, passages or window, not {change!r}")


async def run(args: argparse.Namespace) -> Tally | None:
    without(args.without)
    if args.tune:
        args.split = "train"
    evalset = read_set(args.fixture)
    if args.split != "both":
        evalset = evalset.only(
            k for k, c in evalset.conversations.items() if c["split"] == args.split
        )
    if args.quick:  # one conversation of each split
        firsts = {c["split"]: cid for cid, c in reversed(evalset.conversations.items())}
        evalset = evalset.only(firsts.values())
    with tempfile.TemporaryDirectory() as tmp:
        container = await build(Settings(_env_file=None, data_dir=Path(tmp)))
        try:
            tenant, _ = await tenants.create_tenant(container.control, container.tenants, "eval")
            if args.tune:
                await tune(container, tenant.id, evalset, args.tune)
                return None
            return await evaluate(container, tenant.id, evalset)
        finally:
            await container.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    parser.add_argument("--quick", action="store_true", help="one conversation of each split")
    parser.add_argument("--split", choices=["train", "held-out", "both"], default="both")
    parser.add_argument("--json", type=Path, help="also write the rates here")
    parser.add_argument(
        "--tune", type=int, metavar="BUDGET", help="grid the weights on the train split"
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="CHANGE",
        help="measure without a change: events, passages or window (repeatable)",
    )
    args = parser.parse_args()
    tally = asyncio.run(run(args))
    if tally is None:
        return
    print(table(tally))
    if args.json:
        args.json.write_text(json.dumps(tally.as_dict(), indent=1) + "\n")


if __name__ == "__main__":
    main()
