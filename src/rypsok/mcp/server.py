"""The MCP adapter: tools generated from the contract, calls handed to the services.

Thin by design (REQ-ARCH-001, REQ-MAIN-002): it translates `ToolSpec`s into MCP
tool definitions once, routes `tools/call` to `Services.call`, and renders an
`Answer` as structured content plus its JSON text (REQ-MCP-011). Refusals are
tool execution errors (isError); only an unknown tool is a protocol error
(REQ-ERR-003).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, cast

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.shared.exceptions import MCPError

from rypsok import __version__
from rypsok.core.contract import ENGINE_STATUS, INSTRUCTIONS, WEB_FETCH, WEB_SEARCH, ToolSpec
from rypsok.core.services import Answer, Services, UnknownTool

SERVER_NAME = "rypsok"
_CallTool = Callable[
    [ServerRequestContext[Any], types.CallToolRequestParams], Awaitable[types.CallToolResult]
]
# The scope word that admits each tool (`[[http.keys]] scopes`).
TOOL_SCOPES: dict[str, str] = {
    WEB_SEARCH: "search",
    WEB_FETCH: "fetch",
    ENGINE_STATUS: "status",
}


def mcp_tool(spec: ToolSpec) -> types.Tool:
    hints = spec.hints()
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema(),
        output_schema=spec.output_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
    )


def _text_encoder() -> Callable[[dict[str, Any]], str]:
    """`json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode`, made once.

    The library's encoder hands its C encoder a dict of the containers it is
    inside, to refuse a circular one, and fills and empties it for every
    object and list of the payload. A payload is the `model_dump` of a
    contract model: a fresh tree of dicts, lists and scalars, never circular.
    The same C encoder without that dict writes the same text (a test holds
    the two to it), a tenth faster on a search answer (docs/performance.md
    §23.2). Anything not JSON is still refused by `JSONEncoder.default`.
    """
    library = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    make: Any = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed
    if make is None:  # an interpreter without the C accelerator: the library's own path
        return library.encode
    encode = make(
        None, library.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    return lambda payload: "".join(encode(payload, 0))


# The text form of an answer: compact JSON, non-ASCII kept (one encoder, made once).
_TEXT = _text_encoder()


def render(answer: Answer, structured: bool) -> dict[str, Any]:
    """The `tools/call` result in its wire form, rendered once (REQ-MCP-011).

    The SDK's runner takes a handler's result as a model or as a dict
    (`mcp.server.context.HandlerResult`) and validates either against the
    protocol revision's `CallToolResult` before it writes it. A model would be
    dumped to this very dict first: a second walk of the whole payload, with
    the text, for every call (docs/performance.md §22.3).
    """
    result: dict[str, Any] = {"content": [{"type": "text", "text": _TEXT(answer.payload)}]}
    if structured:
        result["structuredContent"] = answer.payload
    result["isError"] = answer.is_error
    result["resultType"] = "complete"  # the model's default; handshake revisions drop it
    return result


def caller_of(ctx: ServerRequestContext[Any]) -> str:
    """The caller identity for per-caller limits (REQ-SEC-019, later cache isolation).

    Over HTTP it is the caller name of the key that authenticated the request,
    which the HTTP layer hands the SDK as the access token's `client_id`; on
    stdio there is no token and the process itself is the one caller.
    """
    token = get_access_token()
    return token.client_id if token is not None else "local"


def admitted(tools: list[types.Tool]) -> list[types.Tool]:
    """The tools the current caller's scope admits (assistant-access, REQ-MCP-009).

    Over HTTP the key's (or token's) scopes are in its access token; a tool
    is listed and callable only when its scope word is there, so the list
    depends on the configuration of that key, never on the connection. On
    stdio there is no token: the operator runs it and gets every tool.
    """
    token = get_access_token()
    if token is None:
        return tools
    return [tool for tool in tools if TOOL_SCOPES.get(tool.name) in token.scopes]


def build_server(services: Services) -> Server[Any]:
    tools = [mcp_tool(spec) for spec in services.tools()]
    structured = services.config.output.structured_content

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=admitted(tools))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        visible = admitted(tools)
        try:
            if all(tool.name != params.name for tool in visible):
                raise UnknownTool(params.name)  # outside the scope reads as unknown
            answer = await services.call(params.name, params.arguments, caller_of(ctx))
        except UnknownTool:
            valid = ", ".join(t.name for t in visible)
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Unknown tool. Tools: {valid}."
            ) from None
        return render(answer, structured)

    # Without a lookup the SDK lists every tool on each 2026-07-28 HTTP call to
    # check optional headers (about 10% of a call's CPU, docs/performance.md §10).
    input_schemas = {tool.name: tool.input_schema for tool in tools}
    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schemas.get,
        on_list_tools=list_tools,
        # Typed for a model, served as any `HandlerResult` (see `render`).
        on_call_tool=cast("_CallTool", call_tool),
    )
