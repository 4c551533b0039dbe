"""Storage's engines and transactions under their former module name, for callers that
import them from here: app/storage/engines.py and app/storage/transactions.py own them."""

from app.storage.engines import SqliteEngines, sqlite_engine
from app.storage.transactions import read_rows, read_statement, read_transaction, write_transaction

__all__ = [
    "SqliteEngines",
    "read_rows",
    "read_statement",
    "read_transaction",
    "sqlite_engine",
    "write_transaction",
]
