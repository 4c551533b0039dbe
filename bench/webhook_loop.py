"""The worker's webhook delivery loop against the number of tenants, most of them without
webhooks: `python -m bench.webhook_loop [--tenants 100,300,1000] [--seconds 5]`.

For each size, N tenants of which one has an endpoint: the loop's CPU seconds per second
and the tenants it visits (leases) per second, visiting the tenants marked as having
webhooks (what the worker does), against the same loop with every tenant marked, which
visits them all (what it did before the marks; measured in the same run). A tenant cache
smaller than N (JET_TENANT_CACHE_SIZE, 256) makes every visit reopen a tenant's database.
"""

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from app import worker
from app.adapters import webhook_sender
from app.config import Settings
from app.deps import Container, build
from app.services import tenants
from app.services.changes import webhooks
from app.services.changes.webhooks import EndpointIn


async def measure(c: Container, seconds: float) -> tuple[float, float]:
    """(CPU seconds per second, tenants leased per second) of the loop over `seconds`."""
    leased = 0
    lease = c.tenants.lease

    def counted(tenant_id: str) -> Any:
        nonlocal leased
        leased += 1
        return lease(tenant_id)

    c.tenants.lease = counted  # type: ignore[method-assign]
    async with webhook_sender.new_client() as http:
        loop = asyncio.create_task(worker.deliver_webhooks({"container": c, "webhook_http": http}))
        await asyncio.sleep(worker.TENANTS_REFRESH_SECONDS * 2)  # the list read, tenants open
        leased, cpu, wall = 0, time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall, n = time.process_time() - cpu, time.monotonic() - wall, leased
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    c.tenants.lease = lease  # type: ignore[method-assign]
    return cpu / wall, n / wall


async def one_size(n: int, seconds: float, work: Path) -> tuple[tuple[float, float], ...]:
    settings = Settings(
        _env_file=None, data_dir=work / f"data-{n}", webhook_allowed_networks="127.0.0.1/32"
    )
    c = await build(settings)
    try:
        ids = [(await tenants.create_tenant(c.control, c.tenants, f"t{i}"))[0].id for i in range(n)]
        async with c.tenants.lease(ids[0]) as db:
            # Port 9 (discard) on loopback: nothing listens, the one endpoint's sends fail fast.
            new = EndpointIn("http://127.0.0.1:9/hook")
            await webhooks.create_endpoint(db, new, settings, control=c.control)
        marked = await measure(c, seconds)
        for tenant_id in ids:
            await c.control.mark_webhooks(tenant_id)
        every = await measure(c, seconds)
        return marked, every
    finally:
        await c.aclose()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", default="100,300,1000")
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    sizes = [int(s) for s in args.tenants.split(",") if s]
    print("tenants  loop CPU s/s: marked only | every tenant   tenants visited/s: marked | every")
    with tempfile.TemporaryDirectory(prefix="bench-webhook-loop-") as tmp:
        for n in sizes:
            (cpu_m, open_m), (cpu_e, open_e) = asyncio.run(one_size(n, args.seconds, Path(tmp)))
            bar = "#" * round(cpu_e * 20)
            print(
                f"{n:>7,}  {cpu_m:>12.3f} | {cpu_e:>12.3f}   {open_m:>15.1f} | {open_e:>8.1f}"
                f"   every: {bar}"
            )


if __name__ == "__main__":
    main()
