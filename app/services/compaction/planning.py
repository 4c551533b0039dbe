"""Planning a run: which buckets are due, and each bucket split into periods that fit one
request, DLP applied before any text could leave. It reads; it never writes."""

import logging
from array import array
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select

from app.adapters import dlp
from app.adapters.gateway import estimate_messages_tokens
from app.adapters.summarisers.base import EventText
from app.adapters.summarisers.gateway import build_compaction_messages
from app.config import Settings
from app.services import limits
from app.services.policies import TenantPolicy
from app.services.records import Scope
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction
from app.tokens import estimate_tokens

log = logging.getLogger(__name__)

PAGE_ROWS = 500  # events read per query while planning a bucket
IN_CHUNK = 500  # ids per IN (...) list, well under any database's parameter limit
# An entry's tags are "compactor" plus the kinds it folded, within the documented tag limit:
# a period closes before it would fold a kind more than this allows.
MAX_KINDS = limits.TAGS_MAX - 1
# What one event adds to build_compaction_messages' user message besides its body, kind and
# source: `<event n=… at=… kind= source=>`, newlines and `</event>` (77 bytes at most).
EVENT_FRAMING_TOKENS = 20
# A summary entry's heading, meta line (id, scope, date, tags) and provenance line: what
# compaction_summary_max_tokens holds besides the summary's own text.
ENTRY_FRAME_TOKENS = 150
# A period holds at most this many times its summary's text bound of event text: the
# built-in summariser keeps up to two thirds of what it reads, so a fact is not squeezed out
# by the bound, and each entry stays small enough for several to fit one context.
FOLD_RATIO = 1.5
# Periods of one bucket whose texts planning keeps (each at most compaction_max_input_tokens
# of text): DLP and the read are not done twice, and a bucket in flight holds a bounded
# amount of text however many events it has.
KEPT_PERIODS = 8


def summary_text_tokens(settings: Settings) -> int:
    """The most tokens a summariser may write for one entry: the entry's bound less its frame,
    and never more than one request may answer."""
    return min(
        settings.compaction_max_output_tokens,
        settings.compaction_summary_max_tokens - ENTRY_FRAME_TOKENS,
    )


@dataclass(frozen=True, slots=True)
class Bucket:
    scope: Scope
    scope_ref: str | None

    @property
    def label(self) -> str:
        return (
            self.scope.value if self.scope_ref is None else f"{self.scope.value} {self.scope_ref}"
        )


@dataclass(slots=True)
class Period:
    """Consecutive events of a bucket whose request fits compaction_max_input_tokens."""

    tokens: int  # an upper bound of the request's prompt tokens
    first_at: datetime
    last_at: datetime
    seqs: "array[int]" = field(default_factory=lambda: array("q"))  # 8 bytes per event
    kinds: set[str] = field(default_factory=set)
    text_tokens: int = 0  # the events' own text, against the summary size bound
    # The texts to send, kept only while the bucket fits one period: a bigger bucket is
    # re-read period by period, so memory never holds more than one request's worth.
    texts: list[EventText] | None = None

    @property
    def label(self) -> str:
        first, last = f"{self.first_at:%Y-%m-%d}", f"{self.last_at:%Y-%m-%d}"
        return first if first == last else f"{first} to {last}"


class Skip(Exception):
    """This bucket is left untouched for the next run; the message is its problem line."""


class LostRace(Skip):
    """Another run folded some of this bucket's events after they were read."""

    def __init__(self, missing: int) -> None:
        super().__init__(
            f"{missing} of its events were folded by another run meanwhile; left to it"
        )


class Gone(Exception):
    """The bucket has no eligible events any more."""


class Planner:
    """Reads one tenant's eligible events for one run (those older than `cutoff`)."""

    def __init__(
        self,
        db: TenantDb,
        *,
        settings: Settings,
        policy: TenantPolicy,
        remote: bool,
        cutoff: datetime,
    ) -> None:
        self.db, self.settings, self.policy = db, settings, policy
        self.remote = remote  # event text leaves the service: DLP applies
        self.cutoff = cutoff

    async def buckets(self) -> list[Bucket]:
        """Buckets with enough old uncompressed events, oldest first (partial index)."""
        n = func.count()
        stmt = (
            select(ev.c.scope, ev.c.scope_ref)
            .where(ev.c.compressed_at.is_(None), ev.c.occurred_at < self.cutoff)
            .group_by(ev.c.scope, ev.c.scope_ref)
            .having(n >= self.settings.compaction_min_events)
            .order_by(func.min(ev.c.occurred_at), ev.c.scope, ev.c.scope_ref)
        )
        async with read_transaction(self.db.engine) as conn:
            return [Bucket(Scope(r.scope), r.scope_ref) for r in await conn.execute(stmt)]

    async def plan(self, bucket: Bucket) -> list[Period]:
        """The bucket's periods (streamed, DLP before any byte leaves); Skip or Gone."""
        limit = self.settings.compaction_max_input_tokens
        fold = int(FOLD_RATIO * summary_text_tokens(self.settings))
        findings: Counter[str] = Counter()
        label = self.scope_label(bucket, findings)
        base = _request_base_tokens(label)
        periods: list[Period] = []
        current: Period | None = None
        async for rows in self._pages(bucket):
            for row in rows:
                text = self._event_text(row, findings)
                if findings and self.policy.dlp_mode is dlp.DlpMode.BLOCK:
                    continue  # blocked; keep counting what DLP finds for the problem line
                tokens = _event_tokens(text)
                text_tokens = estimate_tokens(text.body)
                if base + tokens > limit:
                    raise Skip(
                        f"event {row.id} alone needs ~{base + tokens:,} prompt tokens, over "
                        f"compaction_max_input_tokens ({limit:,}); it is never truncated"
                    )
                if current is None or (
                    current.tokens + tokens > limit
                    or (current.seqs and current.text_tokens + text_tokens > fold)
                    or (row.kind not in current.kinds and len(current.kinds) >= MAX_KINDS)
                ):
                    if current is not None:
                        periods.append(current)
                    # The first periods keep their redacted texts for their calls; a longer
                    # bucket's later ones are read (and redacted) again when their turn comes.
                    texts: list[EventText] | None = [] if len(periods) < KEPT_PERIODS else None
                    current = Period(base, row.occurred_at, row.occurred_at, texts=texts)
                current.tokens += tokens
                current.text_tokens += text_tokens
                current.last_at = row.occurred_at
                current.seqs.append(row.seq)
                current.kinds.add(row.kind)
                if current.texts is not None:
                    current.texts.append(text)
        if findings and self.policy.dlp_mode is dlp.DlpMode.BLOCK:
            counts = ", ".join(f"{n} {kind}" for kind, n in findings.most_common())
            raise Skip(f"blocked by DLP: {counts}")
        if current is not None:
            periods.append(current)
        if not periods:
            raise Gone
        if findings:
            log.info(
                "tenant %s: %s: DLP redacted %s before sending",
                self.db.tenant_id,
                bucket.label,
                dict(findings),
            )
        return periods

    async def texts(self, period: Period) -> list[EventText]:
        """A period's texts: kept from planning, or read again (LostRace if some are gone)."""
        if period.texts is not None:
            return period.texts
        rows: list[Any] = []
        async with read_transaction(self.db.engine) as conn:
            for i in range(0, len(period.seqs), IN_CHUNK):
                chunk = list(period.seqs[i : i + IN_CHUNK])
                rows += await conn.execute(
                    select(
                        ev.c.seq, ev.c.id, ev.c.occurred_at, ev.c.kind, ev.c.body, ev.c.source
                    ).where(ev.c.seq.in_(chunk), ev.c.compressed_at.is_(None))
                )
        if len(rows) != len(period.seqs):
            raise LostRace(len(period.seqs) - len(rows))
        rows.sort(key=lambda r: (r.occurred_at, r.seq))
        unused: Counter[str] = Counter()
        return [self._event_text(r, unused) for r in rows]

    def scope_label(self, bucket: Bucket, findings: Counter[str]) -> str:
        if not self.remote:
            return bucket.label
        return self._redact(bucket.label, findings)

    async def _pages(self, bucket: Bucket) -> AsyncIterator[list[Any]]:
        """The bucket's eligible events, oldest first, a page per query."""
        after: tuple[datetime, int] | None = None
        while True:
            conds = [*self._eligible(bucket)]
            if after is not None:
                at, seq = after
                conds.append(
                    or_(ev.c.occurred_at > at, and_(ev.c.occurred_at == at, ev.c.seq > seq))
                )
            stmt = (
                select(ev.c.seq, ev.c.id, ev.c.occurred_at, ev.c.kind, ev.c.body, ev.c.source)
                .where(*conds)
                .order_by(ev.c.occurred_at, ev.c.seq)
                .limit(PAGE_ROWS)
            )
            async with read_transaction(self.db.engine) as conn:
                rows = list(await conn.execute(stmt))
            if rows:
                yield rows
            if len(rows) < PAGE_ROWS:
                return
            after = (rows[-1].occurred_at, rows[-1].seq)

    def _eligible(self, bucket: Bucket) -> list[Any]:
        ref = (
            ev.c.scope_ref.is_(None)
            if bucket.scope_ref is None
            else ev.c.scope_ref == bucket.scope_ref
        )
        return [
            ev.c.scope == bucket.scope.value,
            ref,
            ev.c.compressed_at.is_(None),
            ev.c.occurred_at < self.cutoff,
        ]

    def _event_text(self, row: Any, findings: Counter[str]) -> EventText:
        body, source = row.body, row.source
        if self.remote:  # nothing leaves the service with the built-in one
            body = self._redact(body, findings)
            source = None if source is None else self._redact(source, findings)
        return EventText(occurred_at=row.occurred_at, kind=row.kind, body=body, source=source)

    def _redact(self, text: str, findings: Counter[str]) -> str:
        result = dlp.scan(text, mode=self.policy.dlp_mode, custom_patterns=self.policy.dlp_patterns)
        findings.update(result.counts())
        return result.text


def _request_base_tokens(scope_label: str) -> int:
    """An upper bound of a compaction request's prompt tokens before its events."""
    longest_period = "0000-00-00 to 0000-00-00"
    messages = build_compaction_messages(
        [], scope_label=scope_label, period_label=longest_period, max_summary_tokens=10**6
    )
    return estimate_messages_tokens(messages) + 2  # "Events: 0" grows by up to 7 digits


def _event_tokens(event: EventText) -> int:
    """An upper bound of what one event adds to the request (a sum of ceilings is at least
    the ceiling of the sum, so the period's total stays an upper bound too)."""
    return (
        estimate_tokens(event.body)
        + estimate_tokens(event.kind)
        + estimate_tokens(event.source or "")
        + EVENT_FRAMING_TOKENS
    )
