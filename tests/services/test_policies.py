"""Tenant policies in the control database: defaults, validation, the key kept secret."""

import stat
from typing import Any

import pytest

from app.adapters.dlp import DlpMode
from app.deps import Container
from app.errors import InvalidInput, NotFound
from app.services import policies
from app.services.policies import TenantPolicy
from tests.conftest import TenantFixture

KEY = "gk-live-SECRET0123456789"


async def test_an_unconfigured_tenant_has_the_defaults(
    container: Container, tenant: TenantFixture
) -> None:
    policy = await policies.get_policy(container.control, tenant.id)
    assert policy == TenantPolicy(tenant.id)
    assert policy.gateway_url is None and policy.dlp_mode is DlpMode.REDACT
    assert policy.budget_daily_tokens is None and policy.budget_monthly_tokens is None
    assert policy.describe()[0] == "gateway: none (built-in extractive summariser, no network)"


async def test_configure_sets_only_what_is_given(
    container: Container, tenant: TenantFixture
) -> None:
    control = container.control
    first = await policies.configure_tenant(
        control,
        tenant.id,
        gateway_url="https://gw.example/v1",
        gateway_key=KEY,
        models=["gpt-x", "claude-y@2025"],
        gateway_timeout_s=30,
        dlp_mode="block",
        dlp_patterns=[r"PRJ-\d{4}"],
        budget_daily_tokens=50_000,
        budget_monthly_tokens=1_000_000,
    )
    assert first.models == ("gpt-x", "claude-y@2025") and first.dlp_mode is DlpMode.BLOCK
    assert first.gateway_key == KEY and first.updated_at is not None
    assert await policies.get_policy(control, tenant.id) == first

    second = await policies.configure_tenant(
        control, tenant.id, dlp_mode="redact", budget_daily_tokens=None
    )
    assert second.dlp_mode is DlpMode.REDACT and second.budget_daily_tokens is None
    assert second.gateway_key == KEY and second.budget_monthly_tokens == 1_000_000
    assert second.dlp_patterns == (r"PRJ-\d{4}",) and second.gateway_timeout_s == 30

    cleared = await policies.configure_tenant(
        control, tenant.id, gateway_url=None, gateway_key=None, models=[]
    )
    assert (cleared.gateway_url, cleared.gateway_key, cleared.models) == (None, None, ())


async def test_the_gateway_key_is_never_shown(container: Container, tenant: TenantFixture) -> None:
    policy = await policies.configure_tenant(
        container.control,
        tenant.id,
        gateway_url="https://gw.example/v1",
        gateway_key=KEY,
        models=["m1", "m2"],
    )
    shown = "\n".join(policy.describe())
    assert "gateway key: set" in shown and "models: m1 → m2" in shown
    assert KEY not in shown and KEY not in repr(policy) and KEY not in str(policy)
    unset = await policies.configure_tenant(container.control, tenant.id, gateway_key=None)
    assert "gateway key: unset" in unset.describe()


@pytest.mark.sqlite_only
def test_the_control_database_is_readable_by_its_owner_only(container: Container) -> None:
    path = container.settings.control_db_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"gateway_url": "ftp://gw.example"}, ["gateway_url"], "must be http(s)://"),
        ({"gateway_url": "gw.example/v1"}, ["gateway_url"], "must be http(s)://"),
        (
            {"gateway_url": "https://user:hunter2@gw.example/v1", "models": ["m"]},
            ["gateway_url"],
            "must not carry credentials",
        ),
        ({"gateway_url": "https://gw.example/v1"}, ["models"], "needs at least one model"),
        ({"models": ["ok", "not ok"]}, ["models", "1"], "model name 'not ok'"),
        ({"models": ["m", "m"]}, ["models"], "listed twice"),
        ({"models": [f"m{i}" for i in range(11)]}, ["models"], "at most 10 models"),
        ({"gateway_timeout_s": 0}, ["gateway_timeout_s"], "over 0"),
        ({"gateway_timeout_s": 601}, ["gateway_timeout_s"], "at most 600s"),
        ({"dlp_mode": "maybe"}, ["dlp_mode"], "one of redact, block, off"),
        (
            {"dlp_patterns": ["ok", "[unclosed"]},
            ["dlp_patterns", "1"],
            "#1 '[unclosed' is not a valid regex",
        ),
        (
            {"dlp_patterns": ["(a+)+$"]},
            ["dlp_patterns", "0"],
            "#0 '(a+)+$' repeats a repeated group",
        ),
        ({"dlp_patterns": ["x*"]}, ["dlp_patterns", "0"], "matches the empty string"),
        ({"budget_daily_tokens": -1}, ["budget_daily_tokens"], ">= 0"),
        ({"budget_monthly_tokens": "lots"}, ["budget_monthly_tokens"], ">= 0"),
        ({"colour": "blue"}, ["colour"], "no policy setting 'colour'"),
    ],
)
async def test_bad_settings_are_refused_and_nothing_changes(
    container: Container,
    tenant: TenantFixture,
    changes: dict[str, Any],
    field: list[str],
    message: str,
) -> None:
    with pytest.raises(InvalidInput) as info:
        await policies.configure_tenant(container.control, tenant.id, **changes)
    assert info.value.field == field and message in info.value.message
    assert "hunter2" not in info.value.message
    assert await container.control.policy(tenant.id) is None


@pytest.mark.parametrize("key", ["has space", "", "x" * 501, "tab\there"])
async def test_a_bad_key_is_refused_without_echoing_it(
    container: Container, tenant: TenantFixture, key: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        await policies.configure_tenant(container.control, tenant.id, gateway_key=key)
    assert info.value.field == ["gateway_key"]
    assert key not in info.value.message or not key


async def test_an_unknown_tenant_is_not_found(container: Container) -> None:
    with pytest.raises(NotFound):
        await policies.configure_tenant(container.control, "ten_nope", dlp_mode="off")


async def test_the_embedder_setting(container: Container, tenant: TenantFixture) -> None:
    control = container.control
    assert (await policies.get_policy(control, tenant.id)).embedder == "local"
    # The gateway embedder needs the gateway and its embeddings model; nothing changes until.
    with pytest.raises(InvalidInput) as e:
        await policies.configure_tenant(control, tenant.id, embedder="gateway")
    assert e.value.field == ["embedder"] and "embeddings model" in str(e.value)
    with pytest.raises(InvalidInput) as e:
        await policies.configure_tenant(control, tenant.id, embedder="remote")
    assert e.value.field == ["embedder"] and "local, gateway, none" in str(e.value)
    with pytest.raises(InvalidInput) as e:
        await policies.configure_tenant(control, tenant.id, embeddings_model="bad model name")
    assert e.value.field == ["models", "0"]
    assert (await policies.get_policy(control, tenant.id)).embedder == "local"
    policy = await policies.configure_tenant(
        control,
        tenant.id,
        gateway_url="https://gw.example/v1",
        models=["gpt-x"],
        embedder="gateway",
        embeddings_model="embed-small",
    )
    assert (policy.embedder, policy.embeddings_model) == ("gateway", "embed-small")
    assert "embedder: gateway, model embed-small" in policy.describe()
    assert container.embedders is not None
    resolved = await container.embedders.for_tenant(tenant.id)
    assert resolved is not None and resolved.model == "gateway:embed-small"
    # The API's indexer leaves a gateway tenant to the worker's, and the other way round.
    assert await container.embedders.for_api(tenant.id) is None
    assert await container.embedders.for_worker(tenant.id) is not None
    policy = await policies.configure_tenant(control, tenant.id, embedder="none")
    assert "embedder: none (search by words only)" in policy.describe()
    assert await container.embedders.for_tenant(tenant.id) is not None  # kept a few seconds
    container.embedders._policies.clear()
    assert await container.embedders.for_tenant(tenant.id) is None
