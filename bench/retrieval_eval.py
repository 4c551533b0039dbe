"""Retrieval on conversations the project did not write: LoCoMo and generated long chats,
through the public API, beside a recency baseline and a plain FTS5 bm25, before and after
compaction, in one run.

Usage: .venv/bin/python -m bench.retrieval_eval [--sets locomo,long100k,long500k] [--quick]
       [--budgets 1000,2000,4000] [--clients 4] [--json OUT] [--locomo PATH]
       [--cache DIR] [--seed N] [--anchor YYYY-MM-DD]

One `jet-memory serve`-like server (bench/benchapp.py, with server timing) on a free port of
127.0.0.1 over a temporary data dir; tenants and keys from the `jet-memory` CLI. Per set: an
events tenant (each conversation one ENTITY scope, each turn one event at its time) and an
entries tenant (each turn one entry). Every question is asked through memoryContext at each
budget and through the searches; the baselines answer the same questions from the same turns;
then runCompaction folds what is older than 90 days with the built-in summariser and the
questions are asked again. Prints Markdown tables per set and category (docs/context-eval.md
says what each column means); --json keeps every rate, count and timing.
"""

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from statistics import median
from typing import Any

import httpx

from bench import harness, longconv, retrieval_sets
from bench.retrieval_measures import (
    BaseTurn,
    Bm25,
    Tally,
    answer_in,
    evidence_found,
    newer_first,
    normalise,
    pack,
    positions_in,
    present_turns,
    recall_at,
    recency,
)
from bench.retrieval_sets import EvalSet, Question

BUDGETS = (1000, 2000, 4000)
RECALL_AT = (5, 10, 20)
SETS = ("locomo", "long100k", "long500k")
CACHE = harness.RESULTS / "retrieval-sets"
JET = str(Path(sys.executable).parent / "jet-memory")
ENTRY_BATCH = 20  # createMemoryEntry mutations per request (GraphQL's 20-alias limit)
EVENT_BATCH = 500

APPEND = (
    "mutation($i: [AppendMemoryEventInput!]!) { appendMemoryEvents(input: $i)"
    " { events { id sourceRef } errors { field code message } } }"
)
CONTEXT = (
    "query($r: String, $q: String, $t: Int) { memoryContext(scope: ENTITY, scopeRef: $r,"
    " query: $q, maxTokens: $t) { markdown tokens truncated events { id } entries { id } } }"
)
EVENTS_SEARCH = (
    "query($f: MemoryEventFilter, $n: Int) { memoryEvents(filter: $f, first: $n)"
    " { edges { node { id } } } }"
)
ENTRIES_SEARCH = (
    "query($f: MemoryEntryFilter, $n: Int) { memoryEntries(filter: $f, first: $n)"
    " { edges { node { id } } } }"
)
COMPACT = (
    "mutation { runCompaction { run { status eventsCompressed periods bucketsCompacted"
    " problems summariser } errors { code message } } }"
)
FOLDED = (
    "query($f: MemoryEventFilter, $a: String) { memoryEvents(filter: $f, first: 100, after: $a)"
    " { edges { node { id compressedInto { id } } } pageInfo { hasNextPage endCursor } } }"
)
ENTRY_TEXTS = (
    "query($f: MemoryEntryFilter, $a: String) { memoryEntries(filter: $f, first: 100,"
    " after: $a) { edges { node { title summary } } pageInfo { hasNextPage endCursor } } }"
)
EVENT_BODIES = (
    "query($f: MemoryEventFilter, $a: String) { memoryEvents(filter: $f, first: 100, after: $a)"
    " { edges { node { body } } pageInfo { hasNextPage endCursor } } }"
)


# ---------------------------------------------------------------------------------- the API


class ApiError(RuntimeError):
    pass


@dataclass
class Api:
    """GraphQL over HTTP; each call's time as the client sees it and as the server says."""

    client: httpx.AsyncClient
    wall: dict[str, list[float]] = field(default_factory=dict)
    server: dict[str, list[float]] = field(default_factory=dict)

    async def gql(
        self, key: str, query: str, variables: dict[str, Any] | None = None, timed: str = ""
    ) -> dict[str, Any]:
        started = time.perf_counter()
        response = await self.client.post(
            "/graphql",
            json={"query": query, "variables": variables or {}},
            headers={"authorization": f"Bearer {key}"},
        )
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise ApiError(f"HTTP {response.status_code}: {response.text[:300]}")
        body: dict[str, Any] = response.json()
        if body.get("errors"):
            raise ApiError(json.dumps(body["errors"])[:500])
        if timed:
            self.wall.setdefault(timed, []).append(elapsed)
            m = re.search(r"dur=([\d.]+)", response.headers.get("server-timing", ""))
            if m:
                self.server.setdefault(timed, []).append(float(m.group(1)))
        data: dict[str, Any] = body["data"]
        return data

    async def pages(
        self, key: str, query: str, root: str, flt: dict[str, Any]
    ) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = []
        after: str | None = None
        while True:
            data = (await self.gql(key, query, {"f": flt, "a": after}))[root]
            nodes.extend(e["node"] for e in data["edges"])
            if not data["pageInfo"]["hasNextPage"]:
                return nodes
            after = data["pageInfo"]["endCursor"]


def cli(data_dir: Path, *args: str) -> str:
    """`jet-memory ARGS` on the data dir (run from its parent, so no .env is read)."""
    env = {**os.environ, "JET_DATA_DIR": str(data_dir)}
    done = subprocess.run(
        [JET, *args], env=env, cwd=data_dir.parent, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"jet-memory {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def new_tenant(data_dir: Path, name: str) -> tuple[str, str]:
    """A tenant and its first API key, from `jet-memory tenants create`."""
    out = cli(data_dir, "tenants", "create", name)
    tenant = re.search(r"tenant (ten_\w+)", out)
    key = out.strip().splitlines()[-1].strip()
    if tenant is None or not key.startswith("jm_"):
        raise RuntimeError(f"unexpected output of jet-memory tenants create: {out!r}")
    return tenant.group(1), key


async def embedded(data_dir: Path, tenant: str, deadline_s: float = 1800) -> str:
    """Embeds every entry of the tenant now (`jet-memory search TENANT --embed`), then waits
    until the status says all are: searches and the loader fuse meaning once entries have
    vectors, and the figures must not depend on how far the server's indexer got. Returns the
    CLI's status line."""
    started = time.monotonic()
    out = await asyncio.to_thread(cli, data_dir, "search", tenant, "--embed")
    while True:
        m = re.search(r"(\d+)/(\d+) entries embedded", out)
        if m is None or m.group(1) == m.group(2):
            return out.strip()
        if time.monotonic() - started > deadline_s:
            raise RuntimeError(f"entries still not embedded after {deadline_s:.0f} s: {out}")
        await asyncio.sleep(2)
        out = await asyncio.to_thread(cli, data_dir, "search", tenant)


async def embed_all(data_dir: Path, tenants: Sequence[str]) -> None:
    started = time.perf_counter()
    await asyncio.gather(*(embedded(data_dir, t) for t in tenants))
    _progress(f"embedded {len(tenants)} tenants in {time.perf_counter() - started:.0f} s")


# ------------------------------------------------------------------------------ one set


@dataclass
class Loaded:
    """A set in the server: its tenants' keys and where each turn went."""

    evalset: EvalSet
    events_tenant: tuple[str, str]
    entries_tenant: tuple[str, str]
    event_of: dict[tuple[str, str], str] = field(default_factory=dict)  # (conv, turn) -> id
    turn_of_event: dict[str, str] = field(default_factory=dict)
    turn_of_entry: dict[str, str] = field(default_factory=dict)
    folded: dict[str, list[str]] = field(default_factory=dict)  # summary id -> turns
    kept: dict[str, str] = field(default_factory=dict)  # conv -> normalised memory text
    bm25: dict[str, Bm25] = field(default_factory=dict)
    base: dict[str, list[BaseTurn]] = field(default_factory=dict)
    order: dict[str, dict[str, int]] = field(default_factory=dict)
    roles: dict[str, dict[str, str]] = field(default_factory=dict)
    eligible: set[str] = field(default_factory=set)  # questions whose answer is verbatim

    @property
    def name(self) -> str:
        return self.evalset.name


def _title(body: str) -> str:
    line = body.strip().splitlines()[0] if body.strip() else "turn"
    return line if len(line) <= 200 else line[:197].rsplit(" ", 1)[0] + "..."


async def load(api: Api, loaded: Loaded) -> None:
    """Appends every turn as an event and creates it as an entry, through the API."""
    key = loaded.events_tenant[1]
    for conv in loaded.evalset.conversations.values():
        turns = list(conv.turns)
        for i in range(0, len(turns), EVENT_BATCH):
            batch = turns[i : i + EVENT_BATCH]
            inputs = [
                {
                    "scope": "ENTITY",
                    "scopeRef": conv.id,
                    "kind": t.kind,
                    "body": t.body,
                    "source": "retrieval-eval",
                    "sourceRef": t.id,
                    "occurredAt": t.at.isoformat().replace("+00:00", "Z"),
                }
                for t in batch
            ]
            data = (await api.gql(key, APPEND, {"i": inputs}))["appendMemoryEvents"]
            if data["errors"]:
                raise ApiError(f"append: {data['errors'][:3]}")
            for event in data["events"]:
                loaded.event_of[(conv.id, event["sourceRef"])] = event["id"]
                loaded.turn_of_event[event["id"]] = event["sourceRef"]
    key = loaded.entries_tenant[1]
    for conv in loaded.evalset.conversations.values():
        turns = list(conv.turns)
        for i in range(0, len(turns), ENTRY_BATCH):
            batch = turns[i : i + ENTRY_BATCH]
            heads = ", ".join(f"$i{n}: CreateMemoryEntryInput!" for n in range(len(batch)))
            calls = " ".join(
                f"e{n}: createMemoryEntry(input: $i{n}) {{ entry {{ id }} errors {{ message }} }}"
                for n in range(len(batch))
            )
            variables = {
                f"i{n}": {
                    "scope": "ENTITY",
                    "scopeRef": conv.id,
                    "title": _title(t.body),
                    "summary": t.body,
                    "tags": [t.role[:64]],
                    "source": "CHAT",
                }
                for n, t in enumerate(batch)
            }
            data = await api.gql(key, f"mutation({heads}) {{ {calls} }}", variables)
            for n, t in enumerate(batch):
                made = data[f"e{n}"]
                if made["errors"] or made["entry"] is None:
                    raise ApiError(f"createMemoryEntry: {made['errors']}")
                loaded.turn_of_entry[made["entry"]["id"]] = t.id


def prepare_baselines(loaded: Loaded) -> None:
    """The baselines' view of each conversation (items shaped like the product's events) and
    which questions have an answer verbatim in their conversation."""
    for conv in loaded.evalset.conversations.values():
        base = []
        for t in conv.turns:
            # As long as the product's event heading (kind, scope, time, a 30-character id).
            header = f"{t.kind} · entity/{conv.id} · {t.at:%Y-%m-%d %H:%M} UTC · `{'x' * 30}`"
            base.append(BaseTurn(t.id, t.kind, header, t.body))
        loaded.base[conv.id] = base
        loaded.bm25[conv.id] = Bm25(base)
        loaded.order[conv.id] = {t.id: i for i, t in enumerate(conv.turns)}
        loaded.roles[conv.id] = {t.id: t.role for t in conv.turns}
        text = normalise("\n".join(t.body for t in conv.turns))
        for q in loaded.evalset.questions:
            if q.conversation == conv.id and q.answer_unique and answer_in(text, q.answers):
                loaded.eligible.add(q.id)


async def compact(api: Api, loaded: Loaded) -> dict[str, Any]:
    """Compacts the events tenant through runCompaction (the built-in summariser, the default
    rules: what occurred more than 90 days ago folds)."""
    started = time.perf_counter()
    data = (await api.gql(loaded.events_tenant[1], COMPACT))["runCompaction"]
    if data["errors"] or data["run"] is None or data["run"]["problems"]:
        raise ApiError(f"runCompaction: {data}")
    run: dict[str, Any] = data["run"]
    return {**run, "seconds": round(time.perf_counter() - started, 1)}


async def read_folded(api: Api, loaded: Loaded) -> dict[str, Any]:
    """Which turns each summary folded, and what the scope's memory still holds."""
    key = loaded.events_tenant[1]
    for conv in loaded.evalset.conversations.values():
        flt = {"scope": "ENTITY", "scopeRef": conv.id, "compressed": True}
        for node in await api.pages(key, FOLDED, "memoryEvents", flt):
            entry = node["compressedInto"]["id"]
            loaded.folded.setdefault(entry, []).append(loaded.turn_of_event[node["id"]])
        flt = {"scope": "ENTITY", "scopeRef": conv.id}
        texts = [
            f"{n['title']}\n{n['summary']}"
            for n in await api.pages(key, ENTRY_TEXTS, "memoryEntries", flt)
        ]
        flt = {"scope": "ENTITY", "scopeRef": conv.id, "compressed": False}
        texts += [n["body"] for n in await api.pages(key, EVENT_BODIES, "memoryEvents", flt)]
        loaded.kept[conv.id] = normalise("\n".join(texts))
    sizes = [len(turns) for turns in loaded.folded.values()]
    return {
        "summaries": len(loaded.folded),
        "turns per summary (median)": median(sizes) if sizes else 0,
    }


# --------------------------------------------------------------------------- the questions


@dataclass
class Packing:
    """What the contexts packed at the largest budget, for the report's diagnosis."""

    roles: dict[str, int] = field(default_factory=dict)
    chars: list[int] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    entries: list[int] = field(default_factory=list)

    def add(self, roles: Sequence[str], chars: Sequence[int], entries: int) -> None:
        for r in roles:
            self.roles[r] = self.roles.get(r, 0) + 1
        self.chars.extend(chars)
        self.events.append(len(roles))
        self.entries.append(entries)

    def summary(self) -> dict[str, Any]:
        total = sum(self.roles.values())
        if not {"user", "assistant"} & set(self.roles):
            total = 0  # speakers by name (LoCoMo): no assistant to count
        return {
            "events per context": median(self.events) if self.events else 0,
            "summaries per context": median(self.entries) if self.entries else 0,
            "assistant share": round(self.roles.get("assistant", 0) / total, 3) if total else None,
            "median chars": median(self.chars) if self.chars else None,
        }


@dataclass
class Run:
    api: Api
    tally: Tally
    budgets: tuple[int, ...]
    packing: dict[str, Packing] = field(default_factory=dict)
    # set -> question id -> measure -> hit: lets two runs be compared question by question
    answers: dict[str, dict[str, dict[str, bool]]] = field(default_factory=dict)

    def hit(self, loaded: "Loaded", q: Question, measure: str, hit: bool) -> None:
        self.tally.add(loaded.name, q.category, measure, hit)
        self.answers.setdefault(loaded.name, {}).setdefault(q.id, {})[measure] = hit

    def packed(self, key: str) -> Packing:
        return self.packing.setdefault(key, Packing())


def _tie(markdown: str, answers: dict[str, str]) -> Callable[[str, str], bool]:
    """Orders two turns folded into one summary by where their statements' values appear."""
    low = markdown.lower()

    def tie(newer: str, older: str) -> bool:
        a, b = (
            low.find(answers.get(newer, "\0").lower()),
            low.find(answers.get(older, "\0").lower()),
        )
        return a >= 0 and (b < 0 or a < b)

    return tie


async def ask(run: Run, loaded: Loaded, q: Question, phase: str, values: dict[str, str]) -> None:
    """One question, one phase: every budget's context, the searches and the baselines."""
    api, name = run.api, loaded.name
    events_key, entries_key = loaded.events_tenant[1], loaded.entries_tenant[1]
    newest = [e for e in q.evidence if e not in q.older]
    roles = loaded.roles[q.conversation]
    bodies = {t.id: len(t.body) for t in loaded.base[q.conversation]}
    for budget in run.budgets:
        ctx = (
            await api.gql(
                events_key,
                CONTEXT,
                {"r": q.conversation, "q": q.question, "t": budget},
                timed=f"memoryContext {budget} {phase}",
            )
        )["memoryContext"]
        events = [e["id"] for e in ctx["events"]]
        entries = [e["id"] for e in ctx["entries"]]
        strict = present_turns(events, entries, loaded.turn_of_event)
        every, some = evidence_found(q.evidence, strict)
        label = "ctx" if phase == "before" else "cmp"
        run.hit(loaded, q, f"{label} all {budget}", every)
        run.hit(loaded, q, f"{label} any {budget}", some)
        text = normalise(ctx["markdown"])
        if q.id in loaded.eligible:
            run.hit(loaded, q, f"{label} ans {budget}", answer_in(text, q.answers))
        item_of = {loaded.turn_of_event[e]: e for e in events if e in loaded.turn_of_event}
        if phase == "after":
            lenient = present_turns(events, entries, loaded.turn_of_event, loaded.folded)
            every, some = evidence_found(q.evidence, lenient)
            run.hit(loaded, q, f"cmpL all {budget}", every)
            run.hit(loaded, q, f"cmpL any {budget}", some)
            for entry in entries:
                for turn in loaded.folded.get(entry, ()):
                    item_of.setdefault(turn, entry)
        if q.older and newest:
            at = positions_in(ctx["markdown"], item_of)
            first = newer_first(newest[-1], q.older, at, _tie(ctx["markdown"], values))
            run.hit(loaded, q, f"{'nf' if phase == 'before' else 'cmpL nf'} {budget}", first)
        if budget == run.budgets[-1]:
            shown = [loaded.turn_of_event[e] for e in events if e in loaded.turn_of_event]
            run.packed(f"{name} jet {phase}").add(
                [roles[t] for t in shown], [bodies[t] for t in shown], len(entries)
            )
    if phase == "before":
        flt = {"scope": "ENTITY", "scopeRef": q.conversation, "search": q.question}
        found = (
            await api.gql(
                events_key,
                EVENTS_SEARCH,
                {"f": flt, "n": max(RECALL_AT)},
                timed="memoryEvents search",
            )
        )["memoryEvents"]["edges"]
        groups = [[loaded.turn_of_event.get(e["node"]["id"], "")] for e in found]
        for k in RECALL_AT:
            run.hit(loaded, q, f"ev R@{k}", recall_at(groups, q.evidence, k))
        found = (
            await api.gql(
                entries_key,
                ENTRIES_SEARCH,
                {"f": flt, "n": max(RECALL_AT)},
                timed="memoryEntries search",
            )
        )["memoryEntries"]["edges"]
        groups = [[loaded.turn_of_entry.get(e["node"]["id"], "")] for e in found]
        for k in RECALL_AT:
            run.hit(loaded, q, f"en R@{k}", recall_at(groups, q.evidence, k))
        baselines(run, loaded, q, values)
    else:
        flt = {"scope": "ENTITY", "scopeRef": q.conversation, "search": q.question}
        found = (
            await api.gql(
                events_key,
                ENTRIES_SEARCH,
                {"f": flt, "n": max(RECALL_AT)},
                timed="memoryEntries search (summaries)",
            )
        )["memoryEntries"]["edges"]
        groups = [loaded.folded.get(e["node"]["id"], []) for e in found]
        for k in RECALL_AT:
            run.hit(loaded, q, f"sum R@{k}", recall_at(groups, q.evidence, k))
        if q.id in loaded.eligible:
            run.hit(loaded, q, "kept", answer_in(loaded.kept[q.conversation], q.answers))


def baselines(run: Run, loaded: Loaded, q: Question, values: dict[str, str]) -> None:
    """Recency and plain bm25, packed into every budget, and their recall at k."""
    name = loaded.name
    conv = q.conversation
    newest = [e for e in q.evidence if e not in q.older]
    roles = loaded.roles[conv]
    ranked = {
        "bm25": loaded.bm25[conv].ranked(q.question),
        "rec": recency(loaded.base[conv], loaded.order[conv]),
    }
    for label, turns in ranked.items():
        ids = [[t.id] for t in turns]
        for k in RECALL_AT:
            run.hit(loaded, q, f"{label} R@{k}", recall_at(ids, q.evidence, k))
        for budget in run.budgets:
            packed = pack(turns, budget)
            every, some = evidence_found(q.evidence, packed.turns)
            run.hit(loaded, q, f"{label} all {budget}", every)
            run.hit(loaded, q, f"{label} any {budget}", some)
            if q.id in loaded.eligible:
                text = normalise(packed.markdown)
                run.hit(loaded, q, f"{label} ans {budget}", answer_in(text, q.answers))
            if q.older and newest:
                at: dict[str, int | None] = {t: i for i, t in enumerate(packed.turns)}
                run.hit(loaded, q, f"{label} nf {budget}", newer_first(newest[-1], q.older, at))
            if budget == run.budgets[-1]:
                lengths = {t.id: len(t.body) for t in turns}
                run.packed(f"{name} {label}").add(
                    [roles[t] for t in packed.turns], [lengths[t] for t in packed.turns], 0
                )


async def ask_all(
    run: Run, loaded: Loaded, phase: str, clients: int, values: dict[str, dict[str, str]]
) -> float:
    """Every question of the set in `phase`, `clients` at a time; the seconds it took."""
    questions = list(loaded.evalset.questions)
    queue: asyncio.Queue[Question] = asyncio.Queue()
    for q in questions:
        queue.put_nowait(q)
    done = 0
    tty = sys.stderr.isatty()
    started = time.perf_counter()

    async def worker() -> None:
        nonlocal done
        while not queue.empty():
            q = queue.get_nowait()
            await ask(run, loaded, q, phase, values.get(q.id, {}))
            done += 1
            if tty:
                print(
                    f"\r  {loaded.name} {phase}: {done}/{len(questions)}",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )

    await asyncio.gather(*(worker() for _ in range(clients)))
    if tty:
        print(file=sys.stderr)
    return time.perf_counter() - started


def statement_values(chats: dict[str, Any]) -> dict[str, dict[str, str]]:
    """For changed facts: each statement's turn -> the value it states (to order two
    statements folded into one summary)."""
    out: dict[str, dict[str, str]] = {}
    for chat in chats.values():
        for q in chat.questions:
            if q.older:
                newest = [e for e in q.evidence if e not in q.older]
                pairs = dict(zip(q.older, q.older_answers, strict=False))
                if newest:
                    pairs[newest[-1]] = q.answers[0]
                out[q.id] = pairs
    return out


# ------------------------------------------------------------------------------ the tables


def _cell(tally: Tally, d: str, c: str, *measures: str) -> str:
    rates = [tally.rate(d, c, m) for m in measures]
    if all(r is None for r in rates):
        return ""
    return " / ".join("-" if r is None else f"{100 * r:.1f}" for r in rates)


def _table(
    tally: Tally,
    d: str,
    cats: Sequence[str],
    title: str,
    heads: Sequence[str],
    cells: Sequence[tuple[str, ...]],
    n_measure: str,
) -> str:
    lines = [f"**{title}**", "", "| category | n | " + " | ".join(heads) + " |"]
    lines.append("|---" * (len(heads) + 2) + "|")
    for c in (*cats, "all"):
        n = tally.count(d, c, n_measure)
        if not n:
            continue
        row = [f"**{c}**" if c == "all" else c, str(n)]
        row += [_cell(tally, d, c, *ms) for ms in cells]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def tables(tally: Tally, evalset: EvalSet, budgets: Sequence[int]) -> str:
    d, cats = evalset.name, evalset.categories
    k = [f"{b // 1000}k" if b % 1000 == 0 else str(b) for b in budgets]
    b0 = budgets[0]
    out = [f"### {d}", ""]
    out.append(
        _table(
            tally,
            d,
            cats,
            "Evidence in context before compaction: all / any of the question's "
            "evidence turns packed (percent)",
            [f"jet {x}" for x in k] + [f"bm25 {x}" for x in k] + [f"recency {x}" for x in k],
            [(f"ctx all {b}", f"ctx any {b}") for b in budgets]
            + [(f"bm25 all {b}", f"bm25 any {b}") for b in budgets]
            + [(f"rec all {b}", f"rec any {b}") for b in budgets],
            f"ctx all {b0}",
        )
    )
    out += [
        "",
        _table(
            tally,
            d,
            cats,
            "Evidence in context after compaction: all / any, strict (the "
            "evidence events packed) and lenient (or a summary that folded them)",
            [f"strict {x}" for x in k] + [f"lenient {x}" for x in k],
            [(f"cmp all {b}", f"cmp any {b}") for b in budgets]
            + [(f"cmpL all {b}", f"cmpL any {b}") for b in budgets],
            f"cmp all {b0}",
        ),
    ]
    out += [
        "",
        _table(
            tally,
            d,
            cats,
            "Answer in context: the gold answer verbatim (normalised) in the "
            "Markdown, questions whose answer is verbatim in the conversation (percent)",
            [f"jet {x}" for x in k]
            + [f"after {x}" for x in k]
            + ["kept"]
            + [f"bm25 {x}" for x in k]
            + [f"recency {x}" for x in k],
            [(f"ctx ans {b}",) for b in budgets]
            + [(f"cmp ans {b}",) for b in budgets]
            + [("kept",)]
            + [(f"bm25 ans {b}",) for b in budgets]
            + [(f"rec ans {b}",) for b in budgets],
            f"ctx ans {b0}",
        ),
    ]
    out += [
        "",
        _table(
            tally,
            d,
            cats,
            "Search recall: an evidence turn among the first 5 / 10 / 20 (percent)",
            ["memoryEvents", "memoryEntries (turns)", "summaries (after)", "bm25", "recency"],
            [tuple(f"{m} R@{r}" for r in RECALL_AT) for m in ("ev", "en", "sum", "bm25", "rec")],
            f"ev R@{RECALL_AT[0]}",
        ),
    ]
    if tally.count(d, "all", f"nf {b0}"):
        out += [
            "",
            _table(
                tally,
                d,
                cats,
                "Newer statement first (changed facts): the newest statement packed "
                "and before every older one packed (percent)",
                [f"jet {x}" for x in k]
                + [f"after {x}" for x in k]
                + [f"bm25 {x}" for x in k]
                + [f"recency {x}" for x in k],
                [(f"nf {b}",) for b in budgets]
                + [(f"cmpL nf {b}",) for b in budgets]
                + [(f"bm25 nf {b}",) for b in budgets]
                + [(f"rec nf {b}",) for b in budgets],
                f"nf {b0}",
            ),
        ]
    return "\n".join(out)


def speed_table(api: Api, clients: int) -> str:
    lines = [
        f"**Speed as the client sees it ({clients} concurrent clients, one server process)**",
        "",
        "| call | n | p50 ms | p95 ms | server p50 ms |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(api.wall):
        wall = api.wall[name]
        server = api.server.get(name, [])
        lines.append(
            f"| {name} | {len(wall)} | {harness.pct(wall, 50):.0f} | {harness.pct(wall, 95):.0f}"
            f" | {harness.median(server):.0f} |"
        )
    return "\n".join(lines)


def packing_table(run: Run) -> str:
    lines = [
        f"**What the contexts packed at {run.budgets[-1]} tokens (medians per context; share of "
        "packed events that are assistant turns)**",
        "",
        "| set, ranking, phase | events | summaries | assistant share | median chars |",
        "|---|---|---|---|---|",
    ]
    for key, p in sorted(run.packing.items()):
        s = p.summary()
        share = "" if s["assistant share"] is None else f"{100 * s['assistant share']:.0f}%"
        chars = "" if s["median chars"] is None else f"{s['median chars']:.0f}"
        lines.append(
            f"| {key} | {s['events per context']:.0f} | {s['summaries per context']:.0f} |"
            f" {share} | {chars} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- the run


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    sets: list[EvalSet] = []
    chats: dict[str, Any] = {}
    props: dict[str, str] = {}  # of each whole set, before --quick keeps a few questions
    for name in args.sets:
        if name == "locomo":
            evalset = retrieval_sets.locomo(args.locomo)
            props[name] = retrieval_sets.properties(evalset)
            if args.quick:
                evalset = evalset.subset(2, 60)
        else:
            generated = retrieval_sets.long_chats(name, args.cache, args.seed, args.anchor)
            chats.update((c.id, c) for c in generated)
            evalset = retrieval_sets.from_chats(name, generated)
            props[name] = retrieval_sets.properties(evalset)
            if args.quick:
                evalset = evalset.subset(None, 60)
        sets.append(evalset)
    values = statement_values(chats)
    report: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "code": harness.git_state(),
        "machine": harness.load_note(),
        "budgets": list(args.budgets),
        "clients": args.clients,
        "quick": args.quick,
        "sets": {},
    }
    with tempfile.TemporaryDirectory(prefix="retrieval-eval-") as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        cli(data_dir, "migrate")  # the CLI's other commands need the control database
        names = [f"{e.name}-{side}" for e in sets for side in ("events", "entries")]
        made = await asyncio.gather(*(asyncio.to_thread(new_tenant, data_dir, n) for n in names))
        loaded = [Loaded(e, made[2 * i], made[2 * i + 1]) for i, e in enumerate(sets)]
        server = harness.Server(
            data_dir,
            Path(tmp) / "logs" / "server.log",
            env={"JET_BENCH_SERVER_TIMING": "1"},
            access_log=False,
        )
        with server:
            limits = httpx.Timeout(600.0, connect=10.0)
            async with httpx.AsyncClient(base_url=server.url, timeout=limits) as client:
                api = Api(client)
                run = Run(api, Tally(), tuple(args.budgets))
                for item in loaded:
                    t0 = time.perf_counter()
                    await load(api, item)
                    prepare_baselines(item)
                    report["sets"][item.name] = {
                        "properties": props[item.name],
                        "notes": item.evalset.notes,
                        "questions": len(item.evalset.questions),
                        "answer verbatim in the conversation": len(item.eligible),
                        "turns": len(item.turn_of_event),
                        "load seconds": round(time.perf_counter() - t0, 1),
                    }
                    _progress(f"{item.name}: loaded in {time.perf_counter() - t0:.0f} s")
                await embed_all(data_dir, [item.entries_tenant[0] for item in loaded])
                for item in loaded:
                    s = await ask_all(run, item, "before", args.clients, values)
                    report["sets"][item.name]["ask seconds before"] = round(s, 1)
                for item in loaded:
                    report["sets"][item.name]["compaction"] = await compact(api, item)
                await embed_all(data_dir, [item.events_tenant[0] for item in loaded])
                for item in loaded:
                    report["sets"][item.name]["compaction"].update(await read_folded(api, item))
                    s = await ask_all(run, item, "after", args.clients, values)
                    report["sets"][item.name]["ask seconds after"] = round(s, 1)
                    for bm in item.bm25.values():
                        bm.close()
    report["rates"] = run.tally.as_dict()
    report["speed"] = {
        name: {
            "n": len(wall),
            "p50 ms": round(harness.pct(wall, 50), 1),
            "p95 ms": round(harness.pct(wall, 95), 1),
            "server p50 ms": round(harness.median(api.server.get(name, [])), 1),
        }
        for name, wall in sorted(api.wall.items())
    }
    report["packing"] = {k: p.summary() for k, p in sorted(run.packing.items())}
    report["per question"] = run.answers
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["markdown"] = "\n\n".join(
        [tables(run.tally, s, args.budgets) for s in sets]
        + [speed_table(api, args.clients), packing_table(run)]
    )
    return report


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


def _budgets(text: str) -> tuple[int, ...]:
    return tuple(int(b) for b in text.split(","))


def _sets(text: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    for name in names:
        if name not in SETS:
            raise argparse.ArgumentTypeError(f"unknown set {name!r}: choose from {', '.join(SETS)}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=_sets, default=SETS, help="locomo,long100k,long500k")
    parser.add_argument(
        "--quick", action="store_true", help="2 LoCoMo conversations and 60 questions per set"
    )
    parser.add_argument("--budgets", type=_budgets, default=BUDGETS)
    parser.add_argument("--clients", type=int, default=4, help="questions asked at once")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument(
        "--locomo",
        type=Path,
        default=Path(os.environ.get("JET_LOCOMO", retrieval_sets.LOCOMO_MIRROR)),
        help="locomo10.json, or a clone of snap-research/LoCoMo (env JET_LOCOMO)",
    )
    parser.add_argument("--cache", type=Path, default=CACHE, help="where generated chats are kept")
    parser.add_argument("--seed", type=int, default=longconv.SEED)
    parser.add_argument(
        "--anchor",
        type=date.fromisoformat,
        default=None,
        help="the generated chats end before this date (default: the 1st of this month)",
    )
    args = parser.parse_args()
    if args.anchor is None:
        args.anchor = datetime.now(UTC).date().replace(day=1)
    # SIGTERM as Ctrl-C: the server this run started is stopped by the same cleanup.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    report = asyncio.run(evaluate(args))
    print(report["markdown"])
    print("\nThe sets (compare with the outside held-out set's description):")
    for info in report["sets"].values():
        print(f"- {info['properties']}")
    for name, info in report["sets"].items():
        c = info["compaction"]
        print(
            f"\n{name}: " + "; ".join(info["notes"]) + f"; {info['questions']} questions, "
            f"{info['answer verbatim in the conversation']} with the answer verbatim; compaction "
            f"folded {c['eventsCompressed']} events into {c['summaries']} summaries (median "
            f"{c['turns per summary (median)']} turns each) in {c['seconds']} s"
        )
    print(f"\n{report['code']}; {report['machine']}; {report['seconds']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
