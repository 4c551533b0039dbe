"""Tenant policies: the gateway and model routing, DLP and token budgets a tenant's
inference runs under. Validated here; the gateway key is stored, never shown."""

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from app.adapters import dlp
from app.adapters.dlp import DlpMode
from app.errors import InvalidInput, NotFound
from app.storage.control import ControlDb

MODELS_MAX = 10
MODEL_MAX_CHARS = 200
PATTERNS_MAX = 50
PATTERN_MAX_CHARS = 500
URL_MAX_CHARS = 2000
KEY_MAX_CHARS = 500
TIMEOUT_MAX_S = 600.0
DEFAULT_TIMEOUT_S = 60.0
EMBEDDERS = ("local", "gateway", "none")

_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")
_KEY_RE = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no spaces: it goes in a header


@dataclass(frozen=True, slots=True)
class TenantPolicy:
    tenant_id: str
    gateway_url: str | None = None
    gateway_key: str | None = field(default=None, repr=False)
    models: tuple[str, ...] = ()  # the first model, then its fallbacks in order
    gateway_timeout_s: float = DEFAULT_TIMEOUT_S
    dlp_mode: DlpMode = DlpMode.REDACT
    dlp_patterns: tuple[str, ...] = ()
    budget_daily_tokens: int | None = None  # None: unlimited
    budget_monthly_tokens: int | None = None
    updated_at: datetime | None = None  # None: never configured (the defaults)
    # What embeds the tenant's entries for search by meaning: the local model, the gateway's
    # `embeddings_model` (through DLP and the budget), or none (search by words only).
    embedder: str = "local"
    embeddings_model: str | None = None

    def describe(self) -> list[str]:
        """What an operator may see: every setting, the key only as set/unset."""

        def budget(value: int | None) -> str:
            return "unlimited" if value is None else f"{value:,} tokens"

        if self.gateway_url:
            routing = " → ".join(self.models)
            gateway = [
                f"gateway: {self.gateway_url}",
                f"gateway key: {'set' if self.gateway_key else 'unset'}",
                f"models: {routing}",
                f"gateway timeout: {self.gateway_timeout_s:g}s",
            ]
        else:
            gateway = ["gateway: none (built-in extractive summariser, no network)"]
            if self.gateway_key:
                gateway.append("gateway key: set")
        patterns = ", ".join(repr(p) for p in self.dlp_patterns) or "none"
        embedder = {
            "local": "local model",
            "gateway": f"gateway, model {self.embeddings_model}",
            "none": "none (search by words only)",
        }[self.embedder]
        return [
            *gateway,
            f"dlp: {self.dlp_mode.value}",
            f"dlp custom patterns: {patterns}",
            f"budget per day: {budget(self.budget_daily_tokens)}",
            f"budget per month: {budget(self.budget_monthly_tokens)}",
            f"embedder: {embedder}",
        ]


_FIELDS = frozenset(
    "gateway_url gateway_key models gateway_timeout_s dlp_mode dlp_patterns "
    "budget_daily_tokens budget_monthly_tokens embedder embeddings_model".split()
)


def _policy(tenant_id: str, row: dict[str, Any] | None) -> TenantPolicy:
    if row is None:
        return TenantPolicy(tenant_id=tenant_id)
    return TenantPolicy(
        tenant_id=tenant_id,
        gateway_url=row["gateway_url"],
        gateway_key=row["gateway_key"],
        models=tuple(row["models"]),
        gateway_timeout_s=row["gateway_timeout_s"],
        dlp_mode=DlpMode(row["dlp_mode"]),
        dlp_patterns=tuple(row["dlp_patterns"]),
        budget_daily_tokens=row["budget_daily_tokens"],
        budget_monthly_tokens=row["budget_monthly_tokens"],
        updated_at=row["updated_at"],
        embedder=row["embedder"],
        embeddings_model=row["embeddings_model"],
    )


async def get_policy(control: ControlDb, tenant_id: str) -> TenantPolicy:
    """The tenant's policy; the defaults when it was never configured."""
    return _policy(tenant_id, await control.policy(tenant_id))


async def configure_tenant(control: ControlDb, tenant_id: str, **changes: Any) -> TenantPolicy:
    """Change the given settings (None clears one); the whole result is validated first."""
    unknown = set(changes) - _FIELDS
    if unknown:
        raise InvalidInput([sorted(unknown)[0]], f"no policy setting {sorted(unknown)[0]!r}")
    if await control.find_tenant(tenant_id) is None:
        raise NotFound(["tenant"], f"no tenant {tenant_id!r}")
    current = await control.policy(tenant_id)
    checked = _check(changes)
    merged = {**_columns(_policy(tenant_id, current)), **checked}
    if merged["gateway_url"] and not merged["models"]:
        raise InvalidInput(["models"], "a gateway needs at least one model (--model)")
    gateway_ready = merged["gateway_url"] and merged["embeddings_model"]
    if merged["embedder"] == "gateway" and not gateway_ready:
        raise InvalidInput(
            ["embedder"], "the gateway embedder needs a gateway URL and an embeddings model"
        )
    del merged["updated_at"]
    await control.save_policy(tenant_id, merged)
    return await get_policy(control, tenant_id)


def _columns(p: TenantPolicy) -> dict[str, Any]:
    return {
        "gateway_url": p.gateway_url,
        "gateway_key": p.gateway_key,
        "models": list(p.models),
        "gateway_timeout_s": p.gateway_timeout_s,
        "dlp_mode": p.dlp_mode.value,
        "dlp_patterns": list(p.dlp_patterns),
        "budget_daily_tokens": p.budget_daily_tokens,
        "budget_monthly_tokens": p.budget_monthly_tokens,
        "updated_at": p.updated_at,
        "embedder": p.embedder,
        "embeddings_model": p.embeddings_model,
    }


def _check(changes: dict[str, Any]) -> dict[str, Any]:
    """Validated column values of the given changes."""
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "gateway_url":
            out[name] = None if value is None else _check_url(value)
        elif name == "gateway_key":
            if value is not None and (len(value) > KEY_MAX_CHARS or not _KEY_RE.fullmatch(value)):
                # Never echo the value: it is a secret.
                raise InvalidInput(
                    [name],
                    f"the gateway key must be 1 to {KEY_MAX_CHARS} printable characters "
                    "without spaces",
                )
            out[name] = value
        elif name == "models":
            out[name] = _check_models(list(value or []))
        elif name == "gateway_timeout_s":
            try:
                seconds = DEFAULT_TIMEOUT_S if value is None else float(value)
            except (TypeError, ValueError):
                seconds = math.nan
            if not 0 < seconds <= TIMEOUT_MAX_S:  # also refuses NaN
                raise InvalidInput(
                    [name], f"the gateway timeout must be over 0 and at most {TIMEOUT_MAX_S:g}s"
                )
            out[name] = seconds
        elif name == "dlp_mode":
            try:
                out[name] = DlpMode(value if value is not None else DlpMode.REDACT).value
            except ValueError:
                modes = ", ".join(m.value for m in DlpMode)
                raise InvalidInput([name], f"dlp mode must be one of {modes}") from None
        elif name == "embedder":
            if value not in (None, *EMBEDDERS):
                raise InvalidInput([name], f"embedder must be one of {', '.join(EMBEDDERS)}")
            out[name] = value or "local"
        elif name == "embeddings_model":
            out[name] = None if value is None else _check_models([value])[0]
        elif name == "dlp_patterns":
            out[name] = _check_patterns(list(value or []))
        else:  # the budgets
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0
            ):
                raise InvalidInput([name], f"{name} must be a whole number >= 0 (or unlimited)")
            out[name] = value
    return out


def _check_url(url: str) -> str:
    url = url.strip()
    if len(url) > URL_MAX_CHARS:
        raise InvalidInput(["gateway_url"], f"the gateway URL is over {URL_MAX_CHARS} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(
            ["gateway_url"],
            "the gateway URL must be http(s)://host[:port][/path], e.g. https://gateway.example/v1",
        )
    if parts.username is not None or parts.password is not None:
        # A URL is shown and logged; the key must travel as the gateway key instead.
        raise InvalidInput(
            ["gateway_url"], "the gateway URL must not carry credentials; set the gateway key"
        )
    if parts.query or parts.fragment:
        raise InvalidInput(["gateway_url"], "the gateway URL must not have a query or fragment")
    return url


def _check_models(models: list[str]) -> list[str]:
    if len(models) > MODELS_MAX:
        raise InvalidInput(["models"], f"at most {MODELS_MAX} models (the first and fallbacks)")
    for i, model in enumerate(models):
        if len(model) > MODEL_MAX_CHARS or not _MODEL_RE.fullmatch(model):
            raise InvalidInput(
                ["models", str(i)],
                f"model name {model[:MODEL_MAX_CHARS]!r} must be 1 to {MODEL_MAX_CHARS} "
                "characters: letters, digits and . _ : / @ + -",
            )
    if len(set(models)) != len(models):
        raise InvalidInput(["models"], "a model is listed twice in the routing list")
    return models


def _check_patterns(patterns: list[str]) -> list[str]:
    if len(patterns) > PATTERNS_MAX:
        raise InvalidInput(["dlp_patterns"], f"at most {PATTERNS_MAX} custom DLP patterns")
    for i, pattern in enumerate(patterns):
        if len(pattern) > PATTERN_MAX_CHARS:
            raise InvalidInput(
                ["dlp_patterns", str(i)], f"DLP pattern #{i} is over {PATTERN_MAX_CHARS} characters"
            )
        try:
            dlp.compile_custom([pattern])
        except ValueError as exc:
            # compile_custom numbers the one pattern it saw #0; name it by its place and text.
            reason = str(exc).removeprefix("custom DLP pattern #0 ")
            raise InvalidInput(
                ["dlp_patterns", str(i)], f"DLP pattern #{i} {pattern!r} {reason}"
            ) from None
    return patterns
