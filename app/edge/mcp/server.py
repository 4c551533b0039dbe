"""The MCP server of the tools (the SDK's low-level Server): list them, call one.

Every call's answer is a CallToolResult: bad arguments and service failures are tool errors
(isError) naming the argument, never protocol errors; anything unexpected is logged with the
request id and answered as an internal tool error.
"""

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from mcp_types import Tool as ToolSpec

from app import __version__
from app.edge.mcp.arguments import ArgumentError, parse, schema_of
from app.edge.mcp.tools import REQUESTER, TOOLS, TOOLS_BY_NAME, Answer, ToolFailure, failure
from app.errors import ExpectedError, ExpectedErrors
from app.logs import request_id_var
from app.storage.tenants import TenantDb
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)
NAME = "jet-memory"
INSTRUCTIONS = (
    "Jet Memory is the team's shared memory. At the start of a task call recall for the "
    "customer, project or team at hand; call remember when something worth keeping happens; "
    "use search_memory, save_memory and forget to curate distilled facts."
)

# (the request context) -> (the tenant's database, the group-commit batch size)
# A request's (database, group commit max rows, who asks: the API key id).
Resolve = Callable[
    [ServerRequestContext[Any, Any]], tuple[TenantDb, int, Callable[[], Awaitable[str]]]
]


def tool_specs() -> list[ToolSpec]:
    return [
        ToolSpec(
            name=t.name,
            title=t.title,
            description=t.description,
            input_schema=schema_of(t.arguments),
            annotations=t.annotations,
        )
        for t in TOOLS
    ]


def result(answer: Answer, *, is_error: bool = False) -> CallToolResult:
    structured, text = answer
    return CallToolResult(
        content=[TextContent(text=text)], structured_content=structured, is_error=is_error
    )


async def call(
    name: str,
    arguments: dict[str, Any] | None,
    db: TenantDb,
    max_rows: int,
    *,
    by: str = "operator",
) -> Answer:
    """Run one tool; raises ToolFailure for anything the caller can fix."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        known = ", ".join(TOOLS_BY_NAME)
        raise ToolFailure("NOT_FOUND", None, f"no tool {name!r}; the tools are {known}")
    try:
        args = parse(tool.arguments, arguments)
    except ArgumentError as exc:
        raise ToolFailure("INVALID", exc.field, exc.message) from None
    token = REQUESTER.set(by)
    try:
        return await tool.run(db, args, max_rows)
    except (ExpectedError, ExpectedErrors) as exc:
        raise failure(exc) from None
    finally:
        REQUESTER.reset(token)


def build_server(resolve: Resolve) -> Server[Any]:
    """The low-level MCP server whose tools run on the database `resolve` gives a request."""
    specs = tool_specs()

    async def list_tools(
        _: ServerRequestContext[Any, Any], __: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=specs)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult:
        try:
            db, max_rows, who = resolve(ctx)
            by = await who()
            return result(await call(params.name, params.arguments, db, max_rows, by=by))
        except ToolFailure as exc:
            return result(exc.answer(), is_error=True)
        except TenantUnavailable as exc:
            log.warning("tenant database unavailable (%s)", exc.reason)
            return result(ToolFailure(exc.code, None, exc.message).answer(), is_error=True)
        except Exception:
            request_id = request_id_var.get()
            log.exception("MCP tool %r failed (request %s)", params.name, request_id)
            message = f"internal error; quote request id {request_id}"
            return result(ToolFailure("INTERNAL", None, message).answer(), is_error=True)

    server: Server[Any] = Server(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # No OpenTelemetry exporter here: its span per message would be work for nobody.
    server.middleware.clear()
    return server
