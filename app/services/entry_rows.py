"""An entry as a row of memory_entries: the columns every entry read selects (the record's
fields, by name) and the Entry they make. A new field of Entry and its column are read
without touching this module."""

from app.services.records import Entry, field_names, row_reader
from app.storage.models import entries_table as en

NAMES = field_names(Entry)
COLUMNS = [en.c[name] for name in NAMES]
# The Entry of a row whose first columns are COLUMNS, in order (more may follow).
to_entry = row_reader(Entry, NAMES)
