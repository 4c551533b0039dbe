"""Data rights: erasure of a subject or an event with its receipt (erasure), entry history and
restore (history, restore), and a tenant's or a subject's export and import (portability,
importer)."""
