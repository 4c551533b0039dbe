"""The compactor's two summarisers: the tenant's LLM gateway, and the built-in extractive one.

Both implement app.adapters.summary.Summariser. Neither stores anything; an answer
that cannot become an entry raises SummaryFailed, so it is never stored.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from app.adapters.extractive import (
    BUILTIN_SUMMARISER_NAME,
    recurring_names,
    summarise_extractive,
)
from app.adapters.gateway import (
    Gateway,
    GatewayBadAnswer,
    GatewayError,
    estimate_messages_tokens,
)
from app.adapters.prompt import build_compaction_messages, parse_llm_summary
from app.adapters.summary import EventText, SummaryFailed, SummaryResult

CHARS_PER_TOKEN = 4  # the estimators' own ratio (app.adapters.gateway.estimate_tokens)


def provenance_line(events: Sequence[EventText], model: str) -> str:
    """The last line of a gateway summary: what it folded, from when to when, by what."""
    first = min(e.occurred_at for e in events)
    last = max(e.occurred_at for e in events)
    return f"_Folded {len(events)} events from {first:%Y-%m-%d} to {last:%Y-%m-%d} by {model}._"


@dataclass(frozen=True)
class GatewaySummariser:
    """Summaries from the tenant's gateway: the compaction prompt, validated answers."""

    gateway: Gateway

    @property
    def name(self) -> str:
        return self.gateway.config.models[0]

    @property
    def remote(self) -> bool:
        return True

    async def summarise(
        self,
        events: list[EventText],
        *,
        scope_label: str,
        period_label: str,
        max_output_tokens: int,
    ) -> SummaryResult:
        messages = build_compaction_messages(
            events,
            scope_label=scope_label,
            period_label=period_label,
            max_summary_tokens=max_output_tokens,
        )
        try:
            completion = await self.gateway.complete(messages, max_tokens=max_output_tokens)
        except GatewayBadAnswer as exc:
            # The gateway answered 200: the prompt was processed, so charge its estimate.
            raise SummaryFailed(
                str(exc), model=exc.model, prompt_tokens=estimate_messages_tokens(messages)
            ) from None
        except GatewayError as exc:
            raise SummaryFailed(str(exc), model=exc.model) from None

        def failed(reason: str) -> SummaryFailed:  # the tokens were spent all the same
            return SummaryFailed(
                f"model {completion.model!r} {reason}",
                model=completion.model,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens,
            )

        if completion.finish_reason == "length":
            # A summary cut off at max_tokens would silently lose the end of the period.
            raise failed(
                f"was cut off at max_tokens ({max_output_tokens}); "
                "raise compaction_summary_max_tokens (or compaction_max_output_tokens)"
            )
        try:
            summary = parse_llm_summary(completion.text)
        except ValueError as exc:
            raise failed(f"gave an unusable answer: {exc}") from None
        body = f"{summary.body}\n\n{provenance_line(events, completion.model)}"
        return SummaryResult(
            title=summary.title,
            body=body,
            model=completion.model,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            tags=recurring_names(summary.body, [e.body for e in events]),
        )


@dataclass(frozen=True)
class BuiltinSummariser:
    """The embedded default: extractive, deterministic, no network, no tokens spent."""

    @property
    def name(self) -> str:
        return BUILTIN_SUMMARISER_NAME

    @property
    def remote(self) -> bool:
        return False

    async def summarise(
        self,
        events: list[EventText],
        *,
        scope_label: str,
        period_label: str,
        max_output_tokens: int,
    ) -> SummaryResult:
        summary = summarise_extractive(
            events,
            scope_label=scope_label,
            period_label=period_label,
            max_chars=max(300, max_output_tokens * CHARS_PER_TOKEN),
        )
        return SummaryResult(
            title=summary.title,
            body=summary.body,  # ends with its own "_Summarised by builtin-extractive-v1…_"
            model=BUILTIN_SUMMARISER_NAME,
            prompt_tokens=0,
            completion_tokens=0,
            tags=summary.tags,
        )
