"""The one composition root: builds the long-lived objects from Settings, and closes them.

The API (lifespan), the worker and the CLI each build one `Container`; tests build theirs
on a temp dir. Nothing is created at import time.
"""

from dataclasses import dataclass

from app.config import Settings
from app.services.tenants import Authenticator
from app.storage.control import ControlDb
from app.storage.tenants import TenantDatabases


@dataclass
class Container:
    settings: Settings
    control: ControlDb
    tenants: TenantDatabases
    auth: Authenticator

    async def aclose(self) -> None:
        await self.tenants.aclose()
        await self.control.aclose()


async def build(settings: Settings) -> Container:
    """Open the control database (migrated to head) and the tenant registry."""
    control = ControlDb(settings)
    await control.migrate()
    return Container(
        settings=settings,
        control=control,
        tenants=TenantDatabases(settings),
        auth=Authenticator(control, ttl=settings.auth_cache_seconds),
    )
