"""Paths of the OpenAPI document beyond the memory routes: entry history and erasure, the
webhook endpoints, and the list of scopes."""

from typing import Any

from app import ids
from app.edge.openapi_parts import _json, _ok, _query_parameters, _ref, _responses
from app.services import limits


def _data_rights_paths(entry_id: dict[str, Any], page: dict[str, Any]) -> dict[str, Any]:
    """Entry history and erasure (docs/erasure.md)."""
    event_id = {**entry_id, "schema": {"type": "string", "pattern": ids.pattern(ids.EVENT)}}
    return {
        "/memory/{id}/versions": {
            "parameters": [entry_id],
            "get": {
                "operationId": "listMemoryEntryVersions",
                "summary": "Earlier versions of an entry (also a deleted one), newest first",
                "parameters": _query_parameters(page),
                "responses": _responses(
                    {"200": _ok("a page of versions", _ref("MemoryEntryVersionList"))}, 400, 404
                ),
            },
        },
        "/memory/{id}/restore": {
            "parameters": [entry_id],
            "post": {
                "operationId": "restoreMemoryEntry",
                "summary": "Bring back an earlier version as a new version",
                "requestBody": {"required": True, **_json(_ref("RestoreMemoryEntryInput"))},
                "responses": _responses(
                    {"200": _ok("the restored entry", _ref("MemoryEntry"))},
                    400,
                    404,
                    409,
                    413,
                    415,
                    422,
                ),  # fmt: skip
            },
        },
        "/memory/erasures": {
            "get": {
                "operationId": "listMemoryErasures",
                "summary": "This tenant's erasure receipts, newest first",
                "parameters": _query_parameters(page),
                "responses": _responses(
                    {"200": _ok("a page of receipts", _ref("ErasureList"))}, 400
                ),
            },
            "post": {
                "operationId": "eraseMemorySubject",
                "summary": "Erase every event, entry, folded summary and entry version of "
                "(scope, scopeRef), in one transaction",
                "description": f"At most {limits.ERASURE_EVENTS_MAX} events per request "
                "(more is a 422 TOO_LARGE naming scopeRef); an operator erases more with "
                "`jet-memory erase`.",
                "requestBody": {"required": True, **_json(_ref("EraseMemorySubjectInput"))},
                "responses": _responses(
                    {"201": _ok("erased; the receipt", _ref("Erasure"))}, 400, 413, 415, 422
                ),
            },
        },
        "/memory/events/{id}": {
            "parameters": [event_id],
            "delete": {
                "operationId": "eraseMemoryEvent",
                "summary": "Erase one event (a summary that folded it is erased, its other "
                "events released)",
                "responses": _responses(
                    {"200": _ok("erased; the receipt", _ref("Erasure"))}, 400, 404
                ),
            },
        },
    }


def _webhook_paths(delivery_query: dict[str, Any]) -> dict[str, Any]:
    """The /webhooks routes (docs/changes.md)."""
    endpoint_id = {"name": "id", "in": "path", "required": True,
                   "schema": {"type": "string", "pattern": ids.pattern(ids.WEBHOOK)}}  # fmt: skip
    delivery_id = {"name": "deliveryId", "in": "path", "required": True,
                   "schema": {"type": "string", "pattern": ids.pattern(ids.DELIVERY)}}  # fmt: skip
    request_id = {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
    deleted = {"204": {"description": "deleted, with its delivery log", "headers": request_id}}
    return {
        "/webhooks": {
            "get": {
                "operationId": "listWebhookEndpoints",
                "summary": "This tenant's webhook endpoints (never their secrets)",
                "responses": _responses({"200": _ok("the endpoints", _ref("WebhookEndpointList"))}),
            },
            "post": {
                "operationId": "createWebhookEndpoint",
                "summary": "Register an endpoint for the changes made from now on",
                "description": "The answer holds the signing secret: the only time it is shown.",
                "requestBody": {"required": True, **_json(_ref("CreateWebhookEndpointInput"))},
                "responses": _responses(
                    {"201": _ok("registered", _ref("CreatedWebhookEndpoint"), "Location")},
                    400, 413, 415, 422,
                ),
            },
        },
        "/webhooks/{id}": {
            "parameters": [endpoint_id],
            "get": {
                "operationId": "getWebhookEndpoint",
                "summary": "Read an endpoint",
                "responses": _responses({"200": _ok("the endpoint", _ref("WebhookEndpoint"))}, 404),
            },
            "patch": {
                "operationId": "updateWebhookEndpoint",
                "summary": "Change an endpoint; enabled: true resumes where it stopped",
                "requestBody": {"required": True, **_json(_ref("UpdateWebhookEndpointInput"))},
                "responses": _responses(
                    {"200": _ok("the endpoint", _ref("WebhookEndpoint"))}, 400, 404, 413, 415, 422
                ),
            },
            "delete": {
                "operationId": "deleteWebhookEndpoint",
                "summary": "Delete an endpoint and its delivery log",
                "responses": _responses(deleted, 404),
            },
        },
        "/webhooks/{id}/deliveries": {
            "parameters": [endpoint_id],
            "get": {
                "operationId": "listWebhookDeliveries",
                "summary": "An endpoint's delivery log, newest first",
                "parameters": _query_parameters(delivery_query),
                "responses": _responses(
                    {"200": _ok("a page of deliveries", _ref("WebhookDeliveryList"))}, 400, 404
                ),
            },
        },
        "/webhooks/{id}/deliveries/{deliveryId}/replay": {
            "parameters": [endpoint_id, delivery_id],
            "post": {
                "operationId": "replayWebhookDelivery",
                "summary": "Send a delivery again, with the same webhook-id",
                "responses": _responses(
                    {"200": _ok("the delivery, due now", _ref("WebhookDelivery"))}, 404
                ),
            },
        },
    }  # fmt: skip


def _scope_paths(scope_query: dict[str, Any]) -> dict[str, Any]:
    """GET /memory/scopes (memoryScopes in GraphQL)."""
    return {
        "/memory/scopes": {
            "get": {
                "operationId": "listMemoryScopes",
                "summary": "The scopes that hold events or entries, with their counts and last "
                "activity, in (scope, scopeRef) order",
                "parameters": _query_parameters(scope_query),
                "responses": _responses(
                    {"200": _ok("a page of scopes", _ref("MemoryScopeList"))}, 400
                ),
            },
        },
    }
