"""Tenants and API keys: create, list, issue, revoke, and verify a presented key.

Keys are 256-bit random secrets shown once; only their SHA-256 is stored. A slow KDF
(bcrypt, argon2) protects low-entropy passwords; for a random 256-bit key a single
SHA-256 is already infeasible to invert, and it keeps per-request auth cheap.
"""

import asyncio
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

from app import ids
from app.errors import Conflict, InvalidInput, NotFound
from app.storage.control import ControlDb, DuplicateName, KeyRow, TenantRow
from app.storage.tenants import TenantDatabases

KEY_PREFIX = "jm_"
_NAME_MAX = 100


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key: KeyRow
    secret: str  # shown to the operator once, never stored


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


async def create_tenant(
    control: ControlDb, dbs: TenantDatabases, name: str
) -> tuple[TenantRow, IssuedKey]:
    """A new tenant with its own migrated database and a first API key."""
    name = name.strip()
    if not name or len(name) > _NAME_MAX:
        raise InvalidInput(["name"], f"tenant name must be 1 to {_NAME_MAX} characters")
    try:
        tenant = await control.insert_tenant(tenant_id=ids.new_id(ids.TENANT), name=name)
    except DuplicateName:
        raise Conflict(["name"], f"a tenant named {name!r} exists") from None
    await dbs.create(tenant.id)
    return tenant, await create_key(control, tenant.id)


async def resolve_tenant(control: ControlDb, id_or_name: str) -> TenantRow:
    tenant = await control.find_tenant(id_or_name)
    if tenant is None:
        raise NotFound(["tenant"], f"no tenant {id_or_name!r}")
    return tenant


@dataclass(frozen=True, slots=True)
class Removal:
    id: str
    tenant_id: str
    name: str
    keys: int
    storage: str


async def remove_tenant(
    control: ControlDb, databases: TenantDatabases, tenant: TenantRow, *, settle_s: float
) -> Removal:
    """Remove a tenant: its keys stop working, then (once every process's key cache has
    expired, `settle_s`) its database is dropped and its keys, policy and row deleted with
    a receipt in the control database; the name is free again. Run again after a crash, it
    finishes the job."""
    await control.disable_tenant(tenant.id)
    if settle_s > 0:
        await asyncio.sleep(settle_s)
    storage = await databases.drop(tenant.id)
    removal_id = ids.new_id(ids.REMOVAL)
    keys = await control.delete_tenant(tenant, removal_id=removal_id, storage=storage)
    return Removal(removal_id, tenant.id, tenant.name, keys, storage)


async def create_key(control: ControlDb, tenant_id: str) -> IssuedKey:
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    row = await control.insert_key(
        key_id=ids.new_id(ids.API_KEY),
        tenant_id=tenant_id,
        key_hash=_hash(secret),
        prefix=secret[:10],
    )
    return IssuedKey(row, secret)


async def revoke_key(control: ControlDb, key_id: str) -> KeyRow:
    row = await control.revoke_key(key_id)
    if row is None:
        raise NotFound(["key_id"], f"no API key {key_id!r}")
    return row


class Authenticator:
    """Turns a presented API key into its tenant id, or None.

    Verified keys are remembered for `ttl` seconds (a revoked key stops working within
    that time) so the hot path does not ask the control database on every request.
    Unknown keys are not cached, so a flood of wrong keys cannot evict good ones.
    Concurrent requests with the same uncached key share one lookup: when a cached key
    expires under load, the control database sees one query, not one per request.
    """

    def __init__(self, control: ControlDb, *, ttl: float, max_size: int = 10_000) -> None:
        self._control = control
        self._ttl = ttl
        self._max = max_size
        # digest -> (tenant id, expiry, key id)
        self._cache: OrderedDict[str, tuple[str, float, str]] = OrderedDict()
        self._lookups: dict[str, asyncio.Future[str | None]] = {}

    def cached(self, secret: str) -> str | None:
        """The tenant of a key verified within the last `ttl` seconds, else None (then
        ask `tenant_for`). Plain rather than async: what every request with a known key
        takes, without a coroutine to create and await."""
        if not secret.startswith(KEY_PREFIX) or len(secret) > 200:
            return None
        hit = self._cache.get(_hash(secret))
        if hit is not None and hit[1] > time.monotonic():
            return hit[0]
        return None

    async def tenant_for(self, secret: str) -> str | None:
        if not secret.startswith(KEY_PREFIX) or len(secret) > 200:
            return None
        digest = _hash(secret)
        hit = self._cache.get(digest)
        now = time.monotonic()
        if hit is not None and hit[1] > now:
            return hit[0]
        pending = self._lookups.get(digest)
        if pending is not None:
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this request itself was cancelled
                return await self.tenant_for(secret)  # the leader went away: ask again
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._lookups[digest] = future
        try:
            tenant_id = await self._lookup(digest, now)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters (if any) get it, nobody else must
            raise
        else:
            future.set_result(tenant_id)
            return tenant_id
        finally:
            del self._lookups[digest]

    async def _lookup(self, digest: str, now: float) -> str | None:
        found = await self._control.key_by_hash(digest)
        # The lookup is by hash; the constant-time compare guards the final equality
        # against timing even if the index lookup were ever replaced by a scan.
        if found is None or not hmac.compare_digest(found[1], digest):
            self._cache.pop(digest, None)
            return None
        tenant_id = found[2]
        if self._ttl > 0:
            self._cache[digest] = (tenant_id, now + self._ttl, found[0])
            self._cache.move_to_end(digest)
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return tenant_id

    async def key_id_for(self, secret: str) -> str | None:
        """The id of a verified key (who asked, for history and erasure receipts): from
        the cache when it is there, else from the control database."""
        if not secret.startswith(KEY_PREFIX) or len(secret) > 200:
            return None
        digest = _hash(secret)
        hit = self._cache.get(digest)
        if hit is not None and hit[1] > time.monotonic():
            return hit[2]
        found = await self._control.key_by_hash(digest)
        if found is None or not hmac.compare_digest(found[1], digest):
            return None
        return found[0]
