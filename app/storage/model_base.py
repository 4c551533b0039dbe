"""The base of every table model of a tenant's own database (its own metadata, apart from
the control database's), and the scope rules several tables check."""

from sqlalchemy import MetaData
from sqlmodel import SQLModel

SCOPE_CHECK = "scope IN ('institutional', 'entity', 'project', 'team')"
SCOPE_REF_CHECK = "(scope = 'institutional') = (scope_ref IS NULL)"


class TenantModel(SQLModel):
    """Base of every table in a tenant database (its own metadata, apart from control)."""

    metadata = MetaData()
