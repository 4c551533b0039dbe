"""Schemathesis against the REST routes, from the served /openapi.json, on a throwaway
tenant: generated valid and invalid requests never get a 5xx, and every response (status,
content type, body) is one the document declares."""

import asyncio
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import BaseSchema, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.applications import Starlette

from app.config import Settings
from app.deps import build
from app.edge.app import create_app
from app.edge.rest.openapi import openapi_document
from app.services import tenants

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


async def _throwaway_tenant(config: Settings) -> str:
    container = await build(config)
    try:
        _, issued = await tenants.create_tenant(container.control, container.tenants, "fuzz")
        return issued.secret
    finally:
        await container.aclose()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Starlette, str]:
    """The app and a key. Its lifespan builds the container in schemathesis' event loop;
    schemathesis' pytest plugin ends that lifespan after each test."""
    config = Settings(_env_file=None, data_dir=Path(tmp_path_factory.mktemp("fuzz")))  # type: ignore[call-arg]
    key = asyncio.run(_throwaway_tenant(config))
    return create_app(settings=config), key


@pytest.fixture(scope="module")
def api_schema(fuzzed: tuple[Starlette, str]) -> BaseSchema:
    app, _ = fuzzed
    return schemathesis.openapi.from_asgi("/openapi.json", app)


# schemathesis.pytest.from_fixture needs pytest < 9 (it sets Function._nodeid), and
# schema.parametrize() would load the schema, and so start the app, at import time: so one
# test per operation and generation mode, each a Hypothesis test over the case strategy.
OPERATIONS = [
    (method.upper(), path)
    for path, item in openapi_document()["paths"].items()
    for method in item
    if method != "parameters"
]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_rest_api_conforms_to_its_openapi_document(
    api_schema: BaseSchema,
    fuzzed: tuple[Starlette, str],
    method: str,
    path: str,
    mode: GenerationMode,
) -> None:
    _, key = fuzzed
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=30,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(headers={"Authorization": f"Bearer {key}"}, checks=CHECKS)

    check()
