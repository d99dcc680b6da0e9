"""An MCP server (on the SDK's lowlevel Server, over stdio) for the proxy's end-to-end tests.

It records every tools/call it receives as one JSON line in $UPSTREAM_RECORD,
so a test can prove that a rejected call never reached it. Environment:
  UPSTREAM_RECORD     file to append records to (start, calls, cancellations)
  UPSTREAM_PAGE_SIZE  tools per tools/list page (0: one page)
  UPSTREAM_OUTPUTS    1: also list `shaped` and `shaped2` (an outputSchema; the argument `result` picks a
                      conforming, violating, missing or isError structured result) and `opaque` (an
                      outputSchema outside both dialects)
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

warnings.simplefilter("ignore")  # the deprecated logging API is exercised on purpose

RECORD = os.environ.get("UPSTREAM_RECORD")
PAGE_SIZE = int(os.environ.get("UPSTREAM_PAGE_SIZE", "0"))
# Seconds every listing takes once `flip` has changed the tools (a slow server's relisting).
LIST_DELAY = float(os.environ.get("UPSTREAM_LIST_DELAY", "0"))
# 1: list `echo` a second time, with an open schema (a server with a duplicate tool name).
DUPLICATE = os.environ.get("UPSTREAM_DUPLICATE") == "1"
HARD_PATTERN = "^(([a-z])+.)+[A-Z]([a-z])+$"  # catastrophic backtracking on "aaaa…"
STATE = {"mutable_revision": 1, "revealed": False}
OUTPUTS = os.environ.get("UPSTREAM_OUTPUTS") == "1"
SHAPE = {"type": "object", "properties": {"total": {"type": "integer", "minimum": 0}}, "required": ["total"],
         "additionalProperties": False}
OPAQUE = {"type": "object", "unevaluatedProperties": False}  # outside both dialects
# 1: list a `tenant` tool whose schema depends on the request's Authorization header (a per-tenant catalog).
TENANT_TOOLS = os.environ.get("UPSTREAM_TENANT_TOOLS") == "1"
TENANT_SCHEMAS = {"Bearer alpha": {"type": "integer"}, "Bearer beta": {"type": "string"}}


def authorization(ctx) -> str | None:
    """The HTTP request's Authorization header (the SDK hands handlers the starlette Request), None on stdio."""
    request = getattr(ctx, "request", None)
    return request.headers.get("authorization") if request is not None else None


def record(entry: dict) -> None:
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")


def obj(properties: dict, required: list[str] | None = None, **extra) -> dict:
    schema = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = required
    return schema


def tools() -> list[types.Tool]:
    mutable = {"type": "integer"} if STATE["mutable_revision"] == 1 else {"type": "string"}
    specs = [
        ("echo", obj({"text": {"type": "string", "minLength": 1}}, ["text"], additionalProperties=False)),
        ("add", obj({"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"])),
        ("titled", obj({"x": {"type": "string"}}, title="Titled")),
        ("regex", obj({"s": {"type": "string", "pattern": HARD_PATTERN}}, ["s"])),
        ("slow", obj({"steps": {"type": "integer", "minimum": 1, "maximum": 1000}}, ["steps"])),
        ("ask", obj({"question": {"type": "string"}}, ["question"])),
        ("mutable", obj({"x": mutable}, ["x"])),
        ("flip", obj({})),
        ("reveal", obj({})),
        ("noargs", {"type": "object"}),
        ("sample", obj({"prompt": {"type": "string"}}, ["prompt"])),
    ]
    if STATE["revealed"]:  # appears without any list_changed notification
        specs.append(("hidden", obj({"n": {"type": "integer"}}, ["n"])))
    if DUPLICATE:
        specs.append(("echo", obj({"text": {"type": "string"}})))
    listed = [types.Tool(name=n, description=f"test tool {n}", input_schema=s) for n, s in specs]
    if OUTPUTS:
        choice = obj({"result": {"enum": ["good", "bad", "missing", "error"]}}, ["result"])
        listed += [types.Tool(name=n, description=f"test tool {n}", input_schema=choice, output_schema=o)
                   for n, o in (("shaped", SHAPE), ("shaped2", SHAPE), ("opaque", OPAQUE))]
    return listed


def shaped(kind: str) -> types.CallToolResult:
    """A structured result: conforming, violating (a negative total), without structuredContent, or isError."""
    body = {"good": {"total": 3}, "bad": {"total": -1}, "error": {"oops": True}}.get(kind)
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"shaped {kind}")],
                                structured_content=body, is_error=kind == "error")


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def list_tools(ctx, params) -> types.ListToolsResult:
    if LIST_DELAY and STATE["mutable_revision"] != 1:
        await anyio.sleep(LIST_DELAY)
    listed = tools()
    if TENANT_TOOLS and (schema := TENANT_SCHEMAS.get(authorization(ctx) or "")) is not None:
        listed.append(types.Tool(name="tenant", description="test tool tenant", input_schema=obj({"x": schema}, ["x"])))
    if PAGE_SIZE <= 0:
        return types.ListToolsResult(tools=listed)
    start = int(params.cursor) if params is not None and params.cursor else 0
    page = listed[start : start + PAGE_SIZE]
    more = start + PAGE_SIZE < len(listed)
    return types.ListToolsResult(tools=page, next_cursor=str(start + PAGE_SIZE) if more else None)


async def call_tool(ctx, params: types.CallToolRequestParams):
    name, args = params.name, params.arguments
    args = args or {}
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    if name == "echo":
        return text(args["text"])
    if name == "tenant":
        return text(f"tenant {authorization(ctx)} got {args['x']!r}")
    if name == "add":
        return text(str(args["a"] + args["b"]))
    if name == "mutable":
        return text(f"mutable got {args['x']!r}")
    if name in ("shaped", "shaped2", "opaque"):
        return shaped(args["result"])
    if name == "noargs":
        return text("noargs ok")
    if name == "reveal":
        STATE["revealed"] = True
        return text("hidden is listed from now on")
    if name == "hidden":
        return text(f"hidden got {args['n']}")
    if name == "flip":
        STATE["mutable_revision"] = 2 if STATE["mutable_revision"] == 1 else 1
        await ctx.session.send_tool_list_changed()
        if LISTEN_BUS is not None:  # 2026-07-28: the change travels on subscriptions/listen streams
            from mcp.shared.subscriptions import ToolsListChanged

            await LISTEN_BUS.publish(ToolsListChanged())
        return text(f"mutable is now revision {STATE['mutable_revision']}")
    if name == "slow":
        try:
            for step in range(1, args["steps"] + 1):
                await ctx.session.report_progress(step, args["steps"], f"step {step}")
                await ctx.session.send_log_message("info", {"step": step}, logger="upstream")
                await anyio.sleep(0.05)
        except anyio.get_cancelled_exc_class():
            record({"event": "cancelled", "name": name, "id": ctx.request_id})
            raise
        return text(f"slow done after {args['steps']} steps")
    if name == "sample":
        messages = [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=args["prompt"]))]
        if not modern:
            reply = await ctx.session.create_message(messages, max_tokens=10, related_request_id=ctx.request_id)
            return text(f"sampled: {reply.content.text}")
        responses = params.input_responses or {}
        if "llm" not in responses:
            return types.InputRequiredResult(
                result_type="input_required",
                input_requests={
                    "llm": types.CreateMessageRequest(
                        params=types.CreateMessageRequestParams(messages=messages, max_tokens=10)
                    )
                },
            )
        return text(f"sampled: {responses['llm'].content.text}")
    if name == "ask":
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        if not modern:
            answer = await ctx.session.elicit_form(args["question"], schema, related_request_id=ctx.request_id)
            return text(f"elicited {answer.action}: {json.dumps(answer.content)}")
        responses = params.input_responses or {}
        if "confirm" not in responses:
            return types.InputRequiredResult(
                result_type="input_required",
                input_requests={
                    "confirm": types.ElicitRequest(
                        params=types.ElicitRequestFormParams(message=args["question"], requested_schema=schema)
                    )
                },
            )
        answer = responses["confirm"]
        return text(f"elicited {answer.action}: {json.dumps(answer.content)}")
    return text(f"{name} called")


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(uri="test://greeting", name="greeting")])


async def read_resource(ctx, params) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=str(params.uri), text="hello from upstream", mime_type="text/plain")]
    )


async def list_prompts(ctx, params) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(name="greet", description="a greeting")])


async def get_prompt(ctx, params) -> types.GetPromptResult:
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text="say hi"))]
    )


async def set_level(ctx, params) -> types.EmptyResult:
    return types.EmptyResult()


async def record_traffic(ctx, call_next):
    """Middleware: note every tools/call (raw, before any validation) and every notification."""
    if ctx.request_id is None:
        record({"event": "notification", "method": ctx.method, "params": ctx.params})
    elif ctx.method == "tools/list":
        record({"event": "list", "id": ctx.request_id, "meta": (ctx.params or {}).get("_meta")})
    elif ctx.method == "tools/call":
        params = dict(ctx.params or {})
        record({"event": "call", "name": params.get("name"), "arguments": params.get("arguments"),
                "has_arguments": "arguments" in params, "id": ctx.request_id})
    return await call_next(ctx)


# UPSTREAM_LISTEN=1: serve 2026-07-28 `subscriptions/listen` (the SDK's ListenHandler).
LISTEN_BUS = None
if os.environ.get("UPSTREAM_LISTEN") == "1":
    from mcp.server.subscriptions import InMemorySubscriptionBus

    LISTEN_BUS = InMemorySubscriptionBus()


def build() -> Server:
    listen: dict = {}
    if LISTEN_BUS is not None:
        from mcp.server.subscriptions import ListenHandler

        listen["on_subscriptions_listen"] = ListenHandler(LISTEN_BUS)
    server = Server(
        "proxy-test-upstream",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_set_logging_level=set_level,
        **listen,
    )
    server.middleware.append(record_traffic)
    if os.environ.get("UPSTREAM_LEGACY_ONLY") == "1":
        server.middleware.append(no_discover)
    return server


async def no_discover(ctx, call_next):
    """UPSTREAM_LEGACY_ONLY=1 on stdio: answer server/discover as a server from before 2026-07-28 does."""
    if ctx.method == "server/discover":
        from mcp.shared.exceptions import MCPError

        raise MCPError(types.METHOD_NOT_FOUND, "Method not found")
    return await call_next(ctx)


async def main() -> None:
    record({"event": "start", "pid": os.getpid(), "marker": os.environ.get("PROXY_TEST_MARKER")})
    server = build()
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    print("upstream test server starting", file=sys.stderr)
    anyio.run(main)
