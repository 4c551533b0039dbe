"""Input rules of the contract. Each failure names the field and the limit it broke."""

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from app.errors import ExpectedError, ExpectedErrors, Forbidden, InvalidInput, TooLarge
from app.services import limits
from app.services.records import EntryIn, EntryPatch, EntrySource, EventIn, Scope
from app.storage.types import utcnow

KIND_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
# Not in a one-line value: C0 and C1 controls, DEL, and the line and paragraph separators
# (U+0085, U+2028 and U+2029 end a line for many readers, models and the context's Markdown).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# What ends a line (str.splitlines' line boundaries).
_LINE_BREAK = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
# Half of a UTF-16 pair on its own (JSON's "\ud800"): no character, UTF-8 cannot hold it.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def is_text(value: str) -> bool:
    """Whether UTF-8 can hold `value`: an id with a lone surrogate names nothing stored."""
    return value.isascii() or _SURROGATE.search(value) is None


def check_list_size(values: Sequence[str] | None, field: str) -> None:
    """A filter list over its cap is refused before anything else reads it: no work in
    proportion to a list over its cap."""
    if values is not None and len(values) > limits.FILTER_VALUES_MAX:
        raise TooLarge(
            [field], f"{field} has {len(values)} values; the limit is {limits.FILTER_VALUES_MAX}"
        )


def check_filter_text(scope_ref: str | None, values: list[str] | None, field: str) -> None:
    """A list filter's free text (its scopeRef, its tags or kinds): text UTF-8 can hold."""
    if scope_ref is not None:
        check_text(scope_ref, "scopeRef")
    for i, value in enumerate(values or ()):
        if not is_text(value):
            raise InvalidInput(
                [field, str(i)],
                f"{field} must be valid Unicode: a lone surrogate is not a character",
            )


def check_text(value: str, field: str) -> None:
    """Refuse text UTF-8 cannot hold (a lone surrogate), naming the field."""
    if not is_text(value):
        raise InvalidInput(
            [field],
            f"{field} must be valid Unicode: a lone surrogate (U+D800 to U+DFFF) is "
            "not a character",
        )


def _check_ref(value: str | None, field: str, *, required: bool = False) -> None:
    if value is None:
        if required:
            raise InvalidInput([field], f"{field} is required")
        return
    if not value or value.isspace():  # `not value.strip()`, without copying the text
        raise InvalidInput([field], f"{field} must not be blank")
    check_text(value, field)
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
    check_text(event.kind, "kind")
    if len(event.kind) > limits.KIND_MAX_CHARS:
        raise TooLarge(["kind"], f"kind is longer than {limits.KIND_MAX_CHARS} characters")
    if not KIND_RE.fullmatch(event.kind):
        raise InvalidInput(
            ["kind"], "kind must be a lower snake_case word, e.g. call_summary or decision"
        )
    if not event.body or event.body.isspace():
        raise InvalidInput(["body"], "body must not be empty")
    check_text(event.body, "body")
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
LATEST = datetime.max.replace(tzinfo=UTC)


def check_time(value: datetime, field: str) -> None:
    """A timestamp must carry a time zone and lie after 1970-01-01 UTC (and, in UTC, before
    the end of year 9999, which is the most a date holds)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput([field], f"{field} must carry a time zone (e.g. ...Z)")
    try:
        in_utc = value.astimezone(UTC)
    except OverflowError:  # its UTC time is before year 1 or after year 9999
        if value.year > EARLIEST.year:
            raise InvalidInput(
                [field], f"{field} must be at most 9999-12-31T23:59:59.999999Z in UTC"
            ) from None
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
    errors: list[ExpectedError] = []
    for i, event in enumerate(events):
        try:
            check_event(event, now=now)
        except ExpectedError as exc:
            errors.append(exc.at(str(i)))
    if errors:
        raise ExpectedErrors(errors)


def _check_title(title: str) -> None:
    if not title.strip():
        raise InvalidInput(["title"], "title must not be empty")
    check_text(title, "title")
    if _LINE_BREAK.search(title):
        raise InvalidInput(["title"], "title must be one line")
    if len(title) > limits.TITLE_MAX_CHARS:
        raise TooLarge(["title"], f"title is longer than {limits.TITLE_MAX_CHARS} characters")
    if _CONTROL.search(title):
        raise InvalidInput(["title"], "title must not contain control characters")


def _check_summary(summary: str) -> None:
    if not summary.strip():
        raise InvalidInput(["summary"], "summary must not be empty")
    check_text(summary, "summary")
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
        if not tag.isascii() and _SURROGATE.search(tag):
            raise InvalidInput(
                field, "a tag must be valid Unicode: a lone surrogate is not a character"
            )
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
    if search is None:
        return
    if len(search) > limits.SEARCH_MAX_CHARS:
        raise TooLarge([field], f"{field} is longer than {limits.SEARCH_MAX_CHARS} characters")
    check_text(search, field)
