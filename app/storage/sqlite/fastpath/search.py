"""The entry search's page read by plain sqlite3, routed by how many entries its words
match: on the event loop's thread (InlineReader) when few, else on aiosqlite's thread
(read_on_thread), which also counts the words not known yet."""

import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.storage.search.fulltext import ENTRY_TEXT_COLUMNS, text_query
from app.storage.sqlite.fastpath.compiled import fetch_rows
from app.storage.sqlite.fastpath.inline_reader import InlineReader
from app.storage.sqlite.fastpath.on_thread import read_on_thread

# A search whose words match at most this many entries (in all scopes) is read on the
# event loop's thread when no other request is being served: for so few, the hand-off to
# aiosqlite's thread costs more than the read; with other requests in flight SQLite is
# better run on the thread, without the GIL (docs/benchmarks.md has the figures).
INLINE_SEARCH_MATCHES = 150
# ...and has at most this many words: each word costs FTS5 a lookup whatever it matches,
# so a longer question's words are neither counted nor read inline.
INLINE_SEARCH_WORDS = 6


async def search_rows(
    engine: AsyncEngine,
    reader: InlineReader | None,
    counts: "WordCounts",
    statement: Select[Any],
    values: Mapping[str, Any],
    words: Sequence[str],
    *,
    alone: bool,
) -> Sequence[Any]:
    """The rows of a search `statement` (built once and kept) with `values`: on the event
    loop's thread by `reader` when the question's few words are known to match few entries
    and no other request is being served (`alone`), else on aiosqlite's thread, where the
    words not known yet are counted too. An inline read that runs past its budget, or that
    the reader will not answer, is read on the thread too."""
    short = len(words) <= INLINE_SEARCH_WORDS
    matches = counts.matches(words) if short else None
    inline = alone and matches is not None and matches <= INLINE_SEARCH_MATCHES
    rows = reader.rows(statement, values) if inline and reader is not None else None
    if rows is not None:
        return rows
    unknown = counts.unknown(words) if short else []

    def on_thread(conn: sqlite3.Connection) -> tuple[list[Any], dict[str, int]]:
        return fetch_rows(conn, statement, values), count_entry_words(conn, unknown)

    found, learnt = await read_on_thread(engine, on_thread)
    counts.learn(learnt)
    return found


# How many entries one word matches, as a search looks for it (the word stemmed, or a
# prefix), in any scope: what FTS5 reads and ranks for it, which is what a search costs.
_ENTRY_WORD_COUNT_SQL = "SELECT count(*) FROM memory_entries_fts WHERE memory_entries_fts MATCH ?"


def count_entry_words(conn: sqlite3.Connection, words: Iterable[str]) -> dict[str, int]:
    """Each word's number of matching entries (title, summary or tags; every scope), on a
    plain sqlite3 connection. Counting skips bm25, but still reads the word's whole
    posting list."""
    return {
        word: conn.execute(
            _ENTRY_WORD_COUNT_SQL, (text_query([word], ENTRY_TEXT_COLUMNS),)
        ).fetchone()[0]
        for word in words
    }


class WordCounts:
    """`count_entry_words` of one tenant's words, kept: how many rows a search for a
    question will rank, known before it runs (the sum over its words: an upper bound, as
    filters and words matching the same entry only lower it).

    A count is kept for `ttl` seconds, then counted again (entries come and go; a word
    that grows common is noticed within that time). At most `size` words: when full it
    starts again empty (the counts are cheap to learn again, and a hit is all that
    matters here). Read and written on the event loop's thread only."""

    def __init__(self, *, ttl: float = 600.0, size: int = 4096) -> None:
        self._ttl = ttl
        self._size = size
        self._counts: dict[str, tuple[int, float]] = {}  # word -> (count, expires at)

    def matches(self, words: Sequence[str]) -> int | None:
        """The rows a search for `words` ranks at most, or None if a word's count is not
        known (or is stale)."""
        now = time.monotonic()
        total = 0
        for word in words:
            known = self._counts.get(word)
            if known is None or known[1] <= now:
                return None
            total += known[0]
        return total

    def unknown(self, words: Sequence[str]) -> list[str]:
        now = time.monotonic()
        return [w for w in words if (k := self._counts.get(w)) is None or k[1] <= now]

    def learn(self, counts: dict[str, int]) -> None:
        if not counts:
            return
        if len(self._counts) + len(counts) > self._size:
            self._counts.clear()
        expires = time.monotonic() + self._ttl
        for word, count in counts.items():
            self._counts[word] = (count, expires)
