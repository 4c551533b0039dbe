"""Opaque, prefixed, time-sortable ids ("evt_…", "mem_…", "run_…", "ten_…", "key_…", "llm_…")."""

from ulid import ULID

EVENT = "evt"
ENTRY = "mem"
RUN = "run"
TENANT = "ten"
API_KEY = "key"
LLM_CALL = "llm"


def new_id(prefix: str) -> str:
    # ULID: 48-bit millisecond time + 80 random bits, Crockford base32, so ids sort by time.
    return f"{prefix}_{str(ULID()).lower()}"
