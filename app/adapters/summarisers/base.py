"""What the compactor asks of a summariser and what it gets back: the port the built-in
and gateway summarisers implement (builtin.py and gateway.py beside this module), and the
texts they share."""

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

MAX_TITLE = 200  # characters of a summary's title line
CHARS_PER_TOKEN = 4  # the estimators' own ratio (app.tokens.estimate_tokens)


@dataclass(frozen=True)
class EventText:
    """One event as a summariser sees it (redacted by DLP when it is to leave)."""

    occurred_at: datetime
    kind: str
    body: str
    source: str | None


@dataclass(frozen=True)
class Summary:
    """A title and body drafted by a summariser, before its provenance line."""

    title: str  # one line, at most MAX_TITLE characters
    body: str  # Markdown
    tags: tuple[str, ...] = ()  # the people and clients it names (recurring_names)


@dataclass(frozen=True, slots=True)
class SummaryResult:
    title: str  # one line
    body: str  # Markdown, ending with a provenance line (what was folded, by what)
    model: str  # the model that answered, or builtin-extractive-v2
    prompt_tokens: int
    completion_tokens: int
    tags: tuple[str, ...] = ()  # the people and clients it names, to find it by tag


class SummaryFailed(Exception):
    """These events could not be summarised. str() is safe to record: no text, no key."""

    def __init__(
        self,
        reason: str,
        *,
        model: str | None = None,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        super().__init__(reason)
        self.model = model
        # Usage known to have been spent on the failed attempt; charged to the budget.
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class Summariser(Protocol):
    @property
    def name(self) -> str:
        """The model it asks first, or builtin-extractive-v2 (for logs and the run)."""
        ...

    @property
    def remote(self) -> bool:
        """True when event text leaves the service: DLP and the token budget apply."""
        ...

    async def summarise(
        self,
        events: list[EventText],
        *,
        scope_label: str,
        period_label: str,
        max_output_tokens: int,
    ) -> SummaryResult:
        """One summary of `events` (oldest first); SummaryFailed when there is none."""
        ...
