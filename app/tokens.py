"""The one token estimator: every budget (memoryContext, gateway pre-checks) counts with it.

Tokens are estimated as ceil(UTF-8 bytes / 4), without a tokenizer: models differ anyway,
and counting bytes over-estimates non-Latin scripts, the safe side for a budget.
"""

import math


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: ceil(UTF-8 bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def cut_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` (whole characters) whose estimate is <= max_tokens."""
    if estimate_tokens(text) <= max_tokens:
        return text
    # Binary search on characters: the estimate grows with the prefix, and slicing by
    # bytes could split a multi-byte character.
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]
