"""Our own reference server for @modelcontextprotocol/conformance 0.1.16's server scenarios.

Written for this project on the Python `mcp` SDK's lowlevel `Server` (not a copy of the suite's
example server): it offers exactly the tools, prompts and resources that the suite's server
scenarios call, with the content those scenarios check (read from the suite's compiled scenario
code), so that the suite passes (nearly) every check against it directly and the comparison with
the gated runs is not vacuous.

    python tests/support/conformance_server.py            # Streamable HTTP on 127.0.0.1, port 0, at /mcp;
                                                          # prints `PORT <n>` on stdout once listening
    python tests/support/conformance_server.py --stdio    # one session on stdin/stdout

Over HTTP it keeps an in-memory event store (so responses are resumable with Last-Event-ID and
the `test_reconnection` tool can close its SSE stream mid-call, SEP-1699) and the SDK's DNS
rebinding protection for localhost (Host/Origin must be 127.0.0.1, localhost or [::1]).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import struct
import sys
import wave
import zlib

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

try:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError:  # pragma: no cover
    MODERN_PROTOCOL_VERSIONS = ()

RETRY_MS = 500


def _png() -> str:
    """A 1x1 red PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8 bits, RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    return base64.b64encode(raw).decode()


def _wav() -> str:
    """A tenth of a second of silence, 8 kHz mono 16-bit WAV, base64."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 800)
    return base64.b64encode(buffer.getvalue()).decode()


PNG, WAV = _png(), _wav()
NO_ARGS = {"type": "object", "properties": {}}


def _obj(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required}


TOOLS = {
    "test_simple_text": ("Returns one text item", NO_ARGS),
    "test_image_content": ("Returns one PNG image item", NO_ARGS),
    "test_audio_content": ("Returns one WAV audio item", NO_ARGS),
    "test_embedded_resource": ("Returns one embedded text resource", NO_ARGS),
    "test_multiple_content_types": ("Returns text, an image and an embedded resource", NO_ARGS),
    "test_tool_with_logging": ("Sends three info log messages while it runs", NO_ARGS),
    "test_tool_with_progress": ("Reports progress 0, 50 and 100 of 100", NO_ARGS),
    "test_error_handling": ("Always answers isError: true", NO_ARGS),
    "test_sampling": ("Asks the client's LLM (sampling/createMessage)",
                      _obj({"prompt": {"type": "string", "description": "The prompt for the LLM"}}, ["prompt"])),
    "test_elicitation": ("Asks the user (elicitation/create) for a username and an email",
                         _obj({"message": {"type": "string", "description": "The message for the user"}},
                              ["message"])),
    "test_elicitation_sep1034_defaults": ("Elicits fields of every primitive type, each with a default (SEP-1034)",
                                          NO_ARGS),
    "test_elicitation_sep1330_enums": ("Elicits the five enum variants of SEP-1330", NO_ARGS),
    "test_reconnection": ("Closes its SSE stream before answering, to test resumption (SEP-1699)", NO_ARGS),
    "json_schema_2020_12_tool": ("Tool with JSON Schema 2020-12 features", {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"type": "object",
                              "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }),
}

SEP1034_SCHEMA = _obj({
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
               "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": True},
}, [])

SEP1330_SCHEMA = _obj({
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                 {"const": "value2", "title": "Second Option"},
                                                 {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                          {"const": "value2", "title": "Second Choice"},
                                                          {"const": "value3", "title": "Third Choice"}]}},
}, [])

ELICIT_SCHEMA = _obj({"username": {"type": "string", "description": "User's response"},
                      "email": {"type": "string", "description": "User's email address"}}, ["username", "email"])


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result(*content, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), is_error=is_error)


def embedded(uri: str, body: str, mime_type: str = "text/plain") -> types.EmbeddedResource:
    return types.EmbeddedResource(type="resource",
                                  resource=types.TextResourceContents(uri=uri, mime_type=mime_type, text=body))


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name=name, description=description, input_schema=schema)
                                        for name, (description, schema) in TOOLS.items()])


async def _ask(ctx, params, key: str, request) -> object | types.InputRequiredResult:
    """A sampling/elicitation round trip: a nested request (handshake versions) or input_required (modern)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        if isinstance(request, types.CreateMessageRequest):
            p = request.params
            return await ctx.session.create_message(p.messages, max_tokens=p.max_tokens,
                                                    related_request_id=ctx.request_id)
        p = request.params
        return await ctx.session.elicit_form(p.message, p.requested_schema, related_request_id=ctx.request_id)
    responses = params.input_responses or {}
    if key in responses:
        return responses[key]
    return types.InputRequiredResult(result_type="input_required", input_requests={key: request})


def _elicit(message: str, schema: dict) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


async def call_tool(ctx, params: types.CallToolRequestParams):
    name, args = params.name, params.arguments or {}
    if name == "test_simple_text":
        return result(text("This is a simple text response for testing."))
    if name == "test_image_content":
        return result(types.ImageContent(type="image", data=PNG, mime_type="image/png"))
    if name == "test_audio_content":
        return result(types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"))
    if name == "test_embedded_resource":
        return result(embedded("test://embedded-resource", "This is an embedded resource content."))
    if name == "test_multiple_content_types":
        return result(text("Multiple content types test:"),
                      types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                      embedded("test://mixed-content-resource", json.dumps({"test": "data", "value": 123}),
                               "application/json"))
    if name == "test_tool_with_logging":
        for step, message in enumerate(("Tool execution started", "Tool processing data",
                                        "Tool execution completed")):
            if step:
                await anyio.sleep(0.05)
            await ctx.session.send_log_message("info", message, logger="conformance",
                                               related_request_id=ctx.request_id)
        return result(text("Tool with logging executed successfully"))
    if name == "test_tool_with_progress":
        for step, progress in enumerate((0, 50, 100)):
            if step:
                await anyio.sleep(0.05)
            await ctx.session.report_progress(progress, 100, f"{progress}% done")
        return result(text("Tool with progress executed successfully"))
    if name == "test_error_handling":
        return result(text("This tool intentionally returns an error for testing"), is_error=True)
    if name == "test_sampling":
        message = types.SamplingMessage(role="user", content=text(str(args.get("prompt", ""))))
        request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message],
                                                                                      max_tokens=100))
        reply = await _ask(ctx, params, "llm", request)
        if isinstance(reply, types.InputRequiredResult):
            return reply
        said = getattr(reply.content, "text", None) or str(reply.content)
        return result(text(f"LLM response: {said}"))
    if name in ("test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        if name == "test_elicitation":
            request = _elicit(str(args.get("message", "")), ELICIT_SCHEMA)
        elif name == "test_elicitation_sep1034_defaults":
            request = _elicit("Please review and update the form fields with defaults", SEP1034_SCHEMA)
        else:
            request = _elicit("Please select options from the enum fields", SEP1330_SCHEMA)
        answer = await _ask(ctx, params, "user", request)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        if name == "test_elicitation":
            return result(text(f"User response: action={answer.action}, content={json.dumps(answer.content)}"))
        return result(text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"))
    if name == "test_reconnection":
        if ctx.close_sse_stream is not None:  # only over HTTP with the event store, at 2025-11-25 or later
            await anyio.sleep(0.05)
            await ctx.close_sse_stream()
            await anyio.sleep(0.2)  # the client reconnects with Last-Event-ID; the answer is replayed
        return result(text("Reconnection test completed successfully"))
    if name == "json_schema_2020_12_tool":
        return result(text(f"json_schema_2020_12_tool got {json.dumps(args)}"))
    return result(text(f"Unknown tool: {name}"), is_error=True)


STATIC = {
    "test://static-text": ("static-text", "A static text resource", "text/plain"),
    "test://static-binary": ("static-binary", "A static binary resource (a PNG)", "image/png"),
    "test://watched-resource": ("watched-resource", "A resource to subscribe to", "text/plain"),
}
TEMPLATE = "test://template/{id}/data"


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[
        types.Resource(uri=uri, name=name, description=description, mime_type=mime)
        for uri, (name, description, mime) in STATIC.items()])


async def list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
        name="template-data", uri_template=TEMPLATE, description="Data for an id", mime_type="application/json")])


async def read_resource(ctx, params) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "test://static-binary":
        contents = [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)]
    elif uri == "test://static-text":
        contents = [types.TextResourceContents(uri=uri, mime_type="text/plain",
                                               text="This is the content of the static text resource.")]
    elif uri == "test://watched-resource":
        contents = [types.TextResourceContents(uri=uri, mime_type="text/plain", text="Watched resource content")]
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        ident = uri[len("test://template/"):-len("/data")]
        body = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"})
        contents = [types.TextResourceContents(uri=uri, mime_type="application/json", text=body)]
    else:
        raise ValueError(f"Unknown resource: {uri}")
    return types.ReadResourceResult(contents=contents)


SUBSCRIBED: set[str] = set()


async def subscribe(ctx, params) -> types.EmptyResult:
    SUBSCRIBED.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx, params) -> types.EmptyResult:
    SUBSCRIBED.discard(str(params.uri))
    return types.EmptyResult()


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
    types.Prompt(name="test_prompt_with_arguments", description="A prompt with two required arguments", arguments=[
        types.PromptArgument(name="arg1", description="First test argument", required=True),
        types.PromptArgument(name="arg2", description="Second test argument", required=True)]),
    types.Prompt(name="test_prompt_with_embedded_resource", description="A prompt that embeds a resource",
                 arguments=[types.PromptArgument(name="resourceUri", description="URI of the resource to embed",
                                                 required=True)]),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]


async def list_prompts(ctx, params) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


def user(content) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


async def get_prompt(ctx, params) -> types.GetPromptResult:
    args = params.arguments or {}
    if params.name == "test_simple_prompt":
        messages = [user(text("This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        messages = [user(text(f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"))]
    elif params.name == "test_prompt_with_embedded_resource":
        messages = [user(embedded(args.get("resourceUri", "test://example-resource"),
                                  "Embedded resource content for testing.")),
                    user(text("Please process the embedded resource above."))]
    elif params.name == "test_prompt_with_image":
        messages = [user(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
                    user(text("Please analyze the image above."))]
    else:
        raise ValueError(f"Unknown prompt: {params.name}")
    return types.GetPromptResult(messages=messages)


async def complete(ctx, params) -> types.CompleteResult:
    value = params.argument.value
    candidates = ["paris", "park", "party"] if params.argument.name == "arg1" else []
    values = [c for c in candidates if c.startswith(value)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


async def set_level(ctx, params) -> types.EmptyResult:
    return types.EmptyResult()


class MemoryEventStore(EventStore):
    """Every SSE event of the process, in order, so a stream can be resumed after its Last-Event-ID."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id, message):
        event_id = str(len(self.events) + 1)
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback: EventCallback):
        index = next((i for i, (event_id, _, _) in enumerate(self.events) if event_id == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        for event_id, stream, message in self.events[index + 1:]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def build() -> Server:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the logging capability is deprecated at 2026-07-28, not at 2025-11-25
        return Server(
            "mcp-schema-gate-conformance-server",
            version="1.0.0",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_resource_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )


async def serve_stdio(server: Server | None = None) -> None:
    """One session on stdin/stdout; `server` defaults to build()."""
    from mcp.server.stdio import stdio_server

    server = server or build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options(NotificationOptions()))


async def serve_http(server: Server | None = None) -> None:
    """Streamable HTTP on 127.0.0.1, port 0, at /mcp; prints `PORT <n>` once listening. `server` defaults to build()."""
    import uvicorn

    app = (server or build()).streamable_http_app(event_store=MemoryEventStore(), retry_interval=RETRY_MS,
                                                  session_idle_timeout=None, host="127.0.0.1")
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        print(f"PORT {http.servers[0].sockets[0].getsockname()[1]}", flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await http.serve()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve_stdio if "--stdio" in sys.argv[1:] else serve_http)
