"""Tenants and their API keys: `jet-memory tenants create | list | configure | show` and
`jet-memory keys create | list | revoke`. Secrets are printed once, when created; the
gateway key never."""

import argparse
import getpass
import os
from typing import Any

from app.cli.running import run
from app.config import Settings
from app.deps import Container
from app.errors import InvalidInput
from app.services import policies
from app.services import tenants as tenant_service
from app.storage.control import TenantRow

GATEWAY_KEY_ENV = "JET_GATEWAY_KEY"


def cmd_tenants_create(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant, issued = await tenant_service.create_tenant(c.control, c.tenants, args.name)
        print(f"tenant {tenant.id} ({tenant.name}) created; API key {issued.key.id}, shown once:")
        print(issued.secret)
        return 0

    return run(settings, go)


def cmd_tenants_list(settings: Settings, _: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        for t in await c.control.tenants():
            keys = await c.control.keys(t.id)
            active = sum(k.revoked_at is None for k in keys)
            print(f"{t.id}\t{t.name}\t{t.status}\t{t.created_at:%Y-%m-%dT%H:%M:%SZ}\t{active} keys")
        return 0

    return run(settings, go)


def _print_policy(tenant: TenantRow, policy: policies.TenantPolicy) -> None:
    print(f"tenant {tenant.id} ({tenant.name}) policy:")
    for line in policy.describe():  # the gateway key only ever as set/unset
        print(f"  {line}")


def _budget(value: str | None) -> int | None:
    if value is None or value == "unlimited":
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(
            ["budget"], f"a budget is a number of tokens or 'unlimited', not {value!r}"
        ) from None


def cmd_tenants_configure(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        current = await policies.get_policy(c.control, tenant.id)
        changes: dict[str, Any] = {}
        if args.clear_gateway:
            changes.update(gateway_url=None, gateway_key=None, models=[])
        if args.gateway_url is not None:
            changes["gateway_url"] = args.gateway_url
        if args.gateway_key_prompt:
            changes["gateway_key"] = getpass.getpass("gateway key (not echoed): ")
        elif os.environ.get(GATEWAY_KEY_ENV):
            changes["gateway_key"] = os.environ[GATEWAY_KEY_ENV]
        if args.model is not None or args.fallback_model is not None:
            first = args.model or (current.models[0] if current.models else None)
            if first is None:
                raise InvalidInput(["model"], "--fallback-model needs a --model to fall back from")
            fallbacks = current.models[1:] if args.fallback_model is None else args.fallback_model
            changes["models"] = [first, *fallbacks]
        if args.gateway_timeout is not None:
            changes["gateway_timeout_s"] = args.gateway_timeout
        if args.dlp is not None:
            changes["dlp_mode"] = args.dlp
        if args.clear_dlp_patterns:
            changes["dlp_patterns"] = []
        if args.dlp_pattern is not None:
            changes["dlp_patterns"] = args.dlp_pattern
        for name in ("budget_daily_tokens", "budget_monthly_tokens"):
            if getattr(args, name) is not None:
                changes[name] = _budget(getattr(args, name))
        if args.embedder is not None:
            changes["embedder"] = args.embedder
        if args.embeddings_model is not None:
            changes["embeddings_model"] = args.embeddings_model
        policy = await policies.configure_tenant(c.control, tenant.id, **changes)
        _print_policy(tenant, policy)
        return 0

    return run(settings, go)


def cmd_tenants_show(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        _print_policy(tenant, await policies.get_policy(c.control, tenant.id))
        return 0

    return run(settings, go)


def cmd_keys_create(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        issued = await tenant_service.create_key(c.control, tenant.id)
        print(f"API key {issued.key.id} for tenant {tenant.id}, shown once:")
        print(issued.secret)
        return 0

    return run(settings, go)


def cmd_keys_list(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        for k in await c.control.keys(tenant.id):
            state = f"revoked {k.revoked_at:%Y-%m-%dT%H:%M:%SZ}" if k.revoked_at else "active"
            print(f"{k.id}\t{k.prefix}…\t{k.created_at:%Y-%m-%dT%H:%M:%SZ}\t{state}")
        return 0

    return run(settings, go)


def cmd_keys_revoke(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        key = await tenant_service.revoke_key(c.control, args.key_id)
        print(f"API key {key.id} of tenant {key.tenant_id} revoked")
        return 0

    return run(settings, go)


def add_parsers(sub: Any) -> Any:
    """`tenants` and `keys`; returns the `tenants` subcommands (others add to them)."""
    t = sub.add_parser("tenants", help="manage tenants").add_subparsers(dest="sub", required=True)
    tc = t.add_parser("create", help="create a tenant and print its first API key")
    tc.add_argument("name")
    tc.set_defaults(fn=cmd_tenants_create)
    t.add_parser("list", help="list tenants").set_defaults(fn=cmd_tenants_list)
    tf = t.add_parser(
        "configure",
        help="set a tenant's gateway, model routing, DLP and token budgets",
        description=f"Only the settings given change. The gateway key is read from "
        f"${GATEWAY_KEY_ENV} or, with --gateway-key-prompt, typed in; it is stored in the "
        "control database (a file only its owner may read, mode 0600) and never printed.",
    )
    tf.add_argument("tenant", help="tenant id or name")
    tf.add_argument("--gateway-url", help="OpenAI-compatible base URL, e.g. https://gw/v1")
    tf.add_argument(
        "--gateway-key-prompt", action="store_true", help="type the gateway key (not echoed)"
    )
    tf.add_argument("--clear-gateway", action="store_true", help="back to the built-in summariser")
    tf.add_argument("--model", help="the model asked first")
    tf.add_argument(
        "--fallback-model",
        action="append",
        metavar="MODEL",
        help="a model to fall back to, in order (repeat; replaces the fallbacks)",
    )
    tf.add_argument(
        "--gateway-timeout",
        type=float,
        metavar="SECONDS",
        help="the most one gateway attempt may take, first byte to last",
    )
    tf.add_argument("--dlp", choices=["redact", "block", "off"], help="what DLP does on a finding")
    tf.add_argument(
        "--dlp-pattern",
        action="append",
        metavar="REGEX",
        help="a custom DLP pattern (repeat; replaces the custom patterns)",
    )
    tf.add_argument("--clear-dlp-patterns", action="store_true", help="no custom DLP patterns")
    for period in ("daily", "monthly"):
        tf.add_argument(
            f"--budget-{period}-tokens", metavar="N", help="a number of tokens, or 'unlimited'"
        )
    tf.add_argument(
        "--embedder",
        choices=policies.EMBEDDERS,
        help="what embeds entries for search by meaning: the local model, the gateway "
        "(--embeddings-model, through DLP and the budget, by the worker), or none",
    )
    tf.add_argument("--embeddings-model", metavar="MODEL", help="the gateway's embeddings model")
    tf.set_defaults(fn=cmd_tenants_configure)
    ts = t.add_parser("show", help="show a tenant's policy (the gateway key as set/unset)")
    ts.add_argument("tenant", help="tenant id or name")
    ts.set_defaults(fn=cmd_tenants_show)
    k = sub.add_parser("keys", help="manage API keys").add_subparsers(dest="sub", required=True)
    kc = k.add_parser("create", help="issue a new API key for a tenant (id or name)")
    kc.add_argument("tenant")
    kc.set_defaults(fn=cmd_keys_create)
    kl = k.add_parser("list", help="list a tenant's keys (never the secrets)")
    kl.add_argument("tenant")
    kl.set_defaults(fn=cmd_keys_list)
    kr = k.add_parser("revoke", help="revoke an API key by its id (key_…)")
    kr.add_argument("key_id")
    kr.set_defaults(fn=cmd_keys_revoke)

    return t
