"""Short cuts around SQLAlchemy's and aiosqlite's private APIs, fenced here (SQLite only).

Each module replaces one stock path for speed and names the private names it relies on;
docs/fast-paths.md lists them with their equivalence tests and gains. JET_SQLITE_FAST_PATH=0
(`Settings.sqlite_fast_path`) turns every one off: storage then runs on stock SQLAlchemy
and aiosqlite, with the same results and errors. This module is the fence's one entry
point: the rest of app/storage imports what is below from here, never a module of the
fence (an import-linter contract holds it), and nothing outside app/storage imports it.

- statement: one statement start to finish on a plain sqlite3 connection, within a budget.
- cursor, dialect: aiosqlite's SQLAlchemy adapter with one thread hop per statement.
- shared_dialect: tenant engines that share one dialect and compiled cache.
- compiled: a SQLAlchemy statement run by plain sqlite3 (its SQL and conversions, kept).
- inline_reader: index-bounded reads on the event loop's thread.
- on_thread: a whole transaction (or read) as one call on aiosqlite's thread.
- appends: the event log's group commit in plain sqlite3.
- search: the entry search's routing between the loop and aiosqlite's thread.
"""

from app.storage.sqlite.fastpath.appends import Rows, append_batch_on_thread
from app.storage.sqlite.fastpath.dialect import INLINE_OPTION, SCHEME, OneHopDialect
from app.storage.sqlite.fastpath.inline_reader import InlineReader
from app.storage.sqlite.fastpath.on_thread import write_on_thread
from app.storage.sqlite.fastpath.search import WordCounts, search_rows
from app.storage.sqlite.fastpath.shared_dialect import SharedDialectEngines

__all__ = [
    "INLINE_OPTION",
    "SCHEME",
    "InlineReader",
    "OneHopDialect",
    "Rows",
    "SharedDialectEngines",
    "WordCounts",
    "append_batch_on_thread",
    "search_rows",
    "write_on_thread",
]
