"""Storage for data rights: the erasing transaction and what each backend does so nothing
erased stays readable (erasure), the update path's copy into entry history
(entry_versions), and whole-table reads and writes for export and import (bulk)."""
