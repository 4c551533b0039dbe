"""Input rules of the contract. Each failure names the field and the limit it broke."""

import re
from datetime import UTC, datetime, timedelta

from app.errors import Forbidden, InvalidInput, JetError, JetErrors, TooLarge
from app.services import limits
from app.services.records import EntryIn, EntryPatch, EntrySource, EventIn, Scope
from app.storage.types import utcnow

KIND_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _check_ref(value: str | None, field: str, *, required: bool = False) -> None:
    if value is None:
        if required:
            raise InvalidInput([field], f"{field} is required")
        return
    if not value or value.isspace():  # `not value.strip()`, without copying the text
        raise InvalidInput([field], f"{field} must not be blank")
    if len(value) > limits.REF_MAX_CHARS:
        raise TooLarge([field], f"{field} is longer than {limits.REF_MAX_CHARS} characters")
    if _CONTROL.search(value):
        raise InvalidInput([field], f"{field} must not contain control characters or newlines")


def check_scope(scope: Scope, scope_ref: str | None) -> None:
    if scope is Scope.INSTITUTIONAL:
        if scope_ref is not None:
            raise InvalidInput(["scopeRef"], "scopeRef must be absent for the INSTITUTIONAL scope")
        return
    _check_ref(scope_ref, "scopeRef")
    if scope_ref is None:
        raise InvalidInput(["scopeRef"], f"scopeRef is required for the {scope.name} scope")


def _check_bytes(value: str, field: str, limit: int) -> None:
    # ASCII text is one byte a character: no need to encode a copy to count them.
    size = len(value) if value.isascii() else len(value.encode("utf-8"))
    if size > limit:
        raise TooLarge([field], f"{field} is {size} bytes; the limit is {limit} bytes")


def check_event(event: EventIn, *, now: datetime | None = None) -> None:
    check_scope(event.scope, event.scope_ref)
    if len(event.kind) > limits.KIND_MAX_CHARS:
        raise TooLarge(["kind"], f"kind is longer than {limits.KIND_MAX_CHARS} characters")
    if not KIND_RE.fullmatch(event.kind):
        raise InvalidInput(
            ["kind"], "kind must be a lower snake_case word, e.g. call_summary or decision"
        )
    if not event.body or event.body.isspace():
        raise InvalidInput(["body"], "body must not be empty")
    _check_bytes(event.body, "body", limits.EVENT_BODY_MAX_BYTES)
    _check_no_nul(event.body, "body")
    _check_ref(event.source, "source")
    _check_ref(event.source_ref, "sourceRef")
    _check_ref(event.idempotency_key, "idempotencyKey")
    if event.occurred_at is not None:
        check_time(event.occurred_at, "occurredAt")
        limit = (now or utcnow()) + timedelta(hours=limits.FUTURE_SKEW_HOURS)
        if event.occurred_at > limit:
            raise InvalidInput(
                ["occurredAt"],
                f"occurredAt is more than {limits.FUTURE_SKEW_HOURS} hours in the future",
            )


EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


def check_time(value: datetime, field: str) -> None:
    """A timestamp must carry a time zone and lie after 1970-01-01 UTC."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput([field], f"{field} must carry a time zone (e.g. ...Z)")
    try:
        in_utc = value.astimezone(UTC)
    except OverflowError:
        in_utc = EARLIEST - timedelta(days=1)
    if in_utc < EARLIEST:
        raise InvalidInput([field], f"{field} must be after 1970-01-01T00:00:00Z")


def check_batch(events: list[EventIn]) -> None:
    """Validate a batch as a whole (the empty path); every bad item is reported, under its
    index."""
    if not events:
        raise InvalidInput([], "a batch must hold at least one event")
    if len(events) > limits.BATCH_MAX:
        raise TooLarge([], f"a batch holds at most {limits.BATCH_MAX} events, got {len(events)}")
    now = utcnow()
    errors: list[JetError] = []
    for i, event in enumerate(events):
        try:
            check_event(event, now=now)
        except JetError as exc:
            errors.append(exc.at(str(i)))
    if errors:
        raise JetErrors(errors)


def _check_title(title: str) -> None:
    if not title.strip():
        raise InvalidInput(["title"], "title must not be empty")
    if "\n" in title or "\r" in title:
        raise InvalidInput(["title"], "title must be one line")
    if len(title) > limits.TITLE_MAX_CHARS:
        raise TooLarge(["title"], f"title is longer than {limits.TITLE_MAX_CHARS} characters")
    if _CONTROL.search(title):
        raise InvalidInput(["title"], "title must not contain control characters")


def _check_summary(summary: str) -> None:
    if not summary.strip():
        raise InvalidInput(["summary"], "summary must not be empty")
    _check_bytes(summary, "summary", limits.ENTRY_SUMMARY_MAX_BYTES)
    _check_no_nul(summary, "summary")


def _check_no_nul(value: str, field: str) -> None:
    # PostgreSQL's text cannot hold U+0000 (the insert failed, a 500) and SQLite's JSON and
    # FTS5 functions end a string there: refused on both backends alike, by name.
    if "\x00" in value:
        raise InvalidInput([field], f"{field} must not contain NUL (U+0000) characters")


def _check_tags(tags: list[str]) -> None:
    if len(tags) > limits.TAGS_MAX:
        raise TooLarge(["tags"], f"at most {limits.TAGS_MAX} tags, got {len(tags)}")
    for i, tag in enumerate(tags):
        field = ["tags", str(i)]
        if not tag.strip() or tag != tag.strip():
            raise InvalidInput(field, "a tag must be non-empty, without surrounding spaces")
        if len(tag) > limits.TAG_MAX_CHARS:
            raise TooLarge(field, f"a tag is at most {limits.TAG_MAX_CHARS} characters")
        if _CONTROL.search(tag):
            raise InvalidInput(field, "a tag must not contain control characters")


def _check_importance(importance: int) -> None:
    if not 1 <= importance <= 5:
        raise InvalidInput(["importance"], f"importance must be 1 to 5, got {importance}")


def normalize_tags(tags: list[str]) -> list[str]:
    """Tags are a set: duplicates go, first occurrence order stays."""
    return list(dict.fromkeys(tags))


def check_entry(entry: EntryIn, *, by_compactor: bool = False) -> None:
    if entry.source is EntrySource.COMPACTOR and not by_compactor:
        raise Forbidden(["source"], "source COMPACTOR is reserved for the compactor")
    check_scope(entry.scope, entry.scope_ref)
    _check_title(entry.title)
    _check_summary(entry.summary)
    _check_tags(entry.tags)
    _check_importance(entry.importance)


def check_patch(patch: EntryPatch) -> None:
    if patch.title is not None:
        _check_title(patch.title)
    if patch.summary is not None:
        _check_summary(patch.summary)
    if patch.tags is not None:
        _check_tags(patch.tags)
    if patch.importance is not None:
        _check_importance(patch.importance)
    if patch.expected_version is not None and patch.expected_version < 1:
        raise InvalidInput(["expectedVersion"], "expectedVersion starts at 1")


def check_first(first: int, field: str = "first") -> None:
    if first < 0:
        raise InvalidInput([field], f"{field} must not be negative")
    if first > limits.PAGE_MAX:
        raise InvalidInput([field], f"{field} is capped at {limits.PAGE_MAX}, got {first}")


def check_search(search: str | None, field: str = "search") -> None:
    if search is not None and len(search) > limits.SEARCH_MAX_CHARS:
        raise TooLarge([field], f"{field} is longer than {limits.SEARCH_MAX_CHARS} characters")
