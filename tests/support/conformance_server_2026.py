"""Our own reference server for the 2026-07-28 server scenarios of @modelcontextprotocol/conformance 0.2.0-alpha.12.

tests/support/conformance_server.py (the tools, prompts and resources of the older scenarios)
plus what the 2026-07-28 scenarios call, written for this project from what those scenarios check
(read from the suite's compiled scenario code), not copied from any example server:

- the multi round-trip tools and prompt of the `input-required-result-*` scenarios (SEP-2322):
  each answers an `InputRequiredResult` until the client retries with the `inputResponses` it
  asked for, and the ones that carry `requestState` check on the retry that it is the state they
  minted;
- the diagnostic tools of `server-stateless` (SEP-2575): `test_missing_capability` needs the
  client's `sampling` capability and answers -32021 when the request did not declare it,
  `test_streaming_elicitation` asks for input the 2026-07-28 way (never a request of its own on
  the response stream), `test_logging_tool` logs only when the request asked for a log level;
- a tool with an `x-mcp-header` parameter (SEP-2243), whose `Mcp-Param-*` header the SDK checks
  against the body, for the pending `http-custom-header-server-validation` scenario;
- `json_schema_2020_12_tool` with the wider 2020-12 vocabulary of SEP-2106 (`$anchor`, `allOf`,
  `anyOf`, `if`/`then`/`else`), for the pending `json-schema-2020-12` scenario;
- an unknown resource answered with -32602 and the URI in `error.data` (SEP-2164).

    python tests/support/conformance_server_2026.py            # Streamable HTTP on 127.0.0.1, port 0, at /mcp;
                                                               # prints `PORT <n>` on stdout once listening
    python tests/support/conformance_server_2026.py --stdio    # one connection on stdin/stdout

The SDK negotiates the protocol revision; at 2026-07-28 it is sessionless (`server/discover`,
per-request `_meta`), at the handshake revisions it behaves like conformance_server.py.

`requestState` is sealed and verified by the SDK's RequestStateBoundary (AES-GCM), so a tampered
state is refused with -32602 before a handler runs. Its key comes from $CONFORMANCE_REQUEST_STATE_KEY
when set (at least 32 characters), else it is made per process: a gate may run several copies of
this server, one per stdio session, and a state one copy minted must verify in another, as behind a
load balancer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests.support` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import contextlib
import warnings

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError

from tests.support import conformance_server as base

NAME = "mcp-schema-gate-conformance-server-2026"
STATE_KEY_ENV = "CONFORMANCE_REQUEST_STATE_KEY"
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
NO_ARGS = base.NO_ARGS


def _name_schema(field: str) -> dict:
    return {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}


def elicit(message: str, schema: dict) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def sample(prompt: str, max_tokens: int) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=base.text(prompt))
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message],
                                                                              max_tokens=max_tokens))


def roots() -> types.ListRootsRequest:
    return types.ListRootsRequest()


ASK_NAME = elicit("What is your name?", _name_schema("name"))
MULTIPLE = {"user_name": ASK_NAME, "greeting": sample("Generate a greeting", 50), "client_roots": roots()}

# name: (description, what round 1 asks for, the requestState it mints or None)
MRTR_TOOLS: dict[str, tuple[str, dict, str | None]] = {
    "test_input_required_result_elicitation": (
        "Asks for the user's name (elicitation), then greets them", {"user_name": ASK_NAME}, None),
    "test_input_required_result_sampling": (
        "Asks the client's LLM a question (sampling), then returns its answer",
        {"capital_question": sample("What is the capital of France?", 100)}, None),
    "test_input_required_result_list_roots": (
        "Asks for the client's roots, then names them", {"client_roots": roots()}, None),
    "test_input_required_result_request_state": (
        "Asks for a confirmation and carries requestState; the retry must echo it",
        {"confirm": elicit("Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                              "required": ["ok"]})}, "request-state:1"),
    "test_input_required_result_multiple_inputs": (
        "Asks for an elicitation, a sampling and the roots at once, with requestState", MULTIPLE, "multiple:1"),
    "test_input_required_result_multi_round": (
        "Asks twice (name, then colour), with a requestState that changes per round",
        {"step1": elicit("Step 1: What is your name?", _name_schema("name"))}, "multi-round:1"),
    "test_input_required_result_tampered_state": (
        "Asks for a confirmation with integrity-protected requestState; a tampered one is refused",
        {"confirm": elicit("Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                              "required": ["ok"]})}, "tampered-state:1"),
    "test_input_required_result_capabilities": (
        "Asks for input only through the capabilities the request declared", MULTIPLE, None),
}
STEP2 = {"step2": elicit("Step 2: What is your favorite color?", _name_schema("color"))}
DIAGNOSTIC_TOOLS = {
    "test_missing_capability": "Needs the client's sampling capability; refused with -32021 without it",
    "test_streaming_elicitation": "Asks for input (elicitation) the 2026-07-28 way, with an InputRequiredResult",
    "test_logging_tool": "Logs three messages, which reach the client only when the request asked for a log level",
}
CUSTOM_HEADER_TOOL = types.Tool(
    name="test_custom_headers",
    description="Echoes a region that clients also send as the Mcp-Param-Region header",
    input_schema={"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "description": "Mirrored into a header", "x-mcp-header": "Region"},
        "query": {"type": "string", "description": "Not mirrored"}}})
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
PROMPT = types.Prompt(name="test_input_required_result_prompt",
                      description="A prompt that asks the user for context (elicitation) before it is built")
ASK_CONTEXT = {"user_context": elicit("What context should the prompt use?", _name_schema("context"))}

CAPABILITY = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


def declared(ctx) -> set[str]:
    """The client capabilities this request declared (at 2026-07-28 its `_meta`; before, the handshake)."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None:
        return set()
    return {name for name in ("elicitation", "sampling", "roots") if getattr(capabilities, name, None) is not None}


def missing_capability(needed: set[str]) -> MCPError:
    data = types.MissingRequiredClientCapabilityErrorData(
        required_capabilities=types.ClientCapabilities(**{name: {} for name in sorted(needed)}))
    return MCPError(code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message=f"this request needs the client capabilities {sorted(needed)}, which it did not declare",
                    data=data.model_dump(by_alias=True, mode="json", exclude_none=True))


def ask(ctx, requests: dict, state: str | None) -> types.InputRequiredResult:
    """An InputRequiredResult for `requests`; refused with -32021 when the request cannot receive them."""
    needed = {CAPABILITY[request.method] for request in requests.values()} - declared(ctx)
    if needed:
        raise missing_capability(needed)
    return types.InputRequiredResult(result_type="input_required", input_requests=requests, request_state=state)


def said(response) -> str:
    """A short rendering of one input response (an ElicitResult, a CreateMessageResult or a ListRootsResult)."""
    if getattr(response, "roots", None) is not None:
        return ", ".join(str(root.uri) for root in response.roots)
    if getattr(response, "action", None) is not None:
        return f"{response.action} {response.content}"
    content = getattr(response, "content", None)
    return getattr(content, "text", None) or str(content)


async def list_tools(ctx, params) -> types.ListToolsResult:
    listed = await base.list_tools(ctx, params)
    for tool in listed.tools:
        if tool.name == "json_schema_2020_12_tool":
            tool.input_schema = SCHEMA_2020_12
    listed.tools.append(CUSTOM_HEADER_TOOL)
    listed.tools += [types.Tool(name=name, description=description, input_schema=NO_ARGS)
                     for name, (description, _, _) in MRTR_TOOLS.items()]
    listed.tools += [types.Tool(name=name, description=description, input_schema=NO_ARGS)
                     for name, description in DIAGNOSTIC_TOOLS.items()]
    return listed


async def mrtr_tool(ctx, params: types.CallToolRequestParams):
    name = params.name
    _, first, state = MRTR_TOOLS[name]
    responses = params.input_responses or {}
    if name == "test_input_required_result_capabilities":
        offered = {key: request for key, request in first.items() if CAPABILITY[request.method] in declared(ctx)}
        if not offered:
            raise missing_capability({"elicitation", "sampling", "roots"})
        if not all(key in responses for key in offered):
            return ask(ctx, offered, None)
        return base.result(base.text("Answered: " + "; ".join(f"{k}={said(responses[k])}" for k in offered)))
    if name == "test_input_required_result_multi_round":
        if params.request_state == "multi-round:2" and "step2" in responses:
            return base.result(base.text(f"Done: colour {said(responses['step2'])}"))
        if params.request_state == "multi-round:1" and "step1" in responses:
            return ask(ctx, STEP2, "multi-round:2")
        return ask(ctx, first, state)
    # One round: asked again until every response is there (wrong or missing keys re-ask, extra keys are ignored),
    # and the tools that minted a requestState want it back verbatim (the SDK already refused a tampered one).
    if not all(key in responses for key in first) or (state is not None and params.request_state != state):
        return ask(ctx, first, state)
    if name == "test_input_required_result_elicitation":
        content = getattr(responses["user_name"], "content", None) or {}
        return base.result(base.text(f"Hello, {content.get('name', 'stranger')}!"))
    answer = "; ".join(f"{key}={said(responses[key])}" for key in first)
    return base.result(base.text(("state-ok: " if state else "Answered: ") + answer))


async def call_tool(ctx, params: types.CallToolRequestParams):
    name = params.name
    if name in MRTR_TOOLS:
        return await mrtr_tool(ctx, params)
    if name == "test_missing_capability":
        if "sampling" not in declared(ctx):
            raise missing_capability({"sampling"})
        reply = (params.input_responses or {}).get("llm")
        if reply is None:
            return ask(ctx, {"llm": sample("Say hello", 20)}, None)
        return base.result(base.text(f"LLM response: {said(reply)}"))
    if name == "test_streaming_elicitation":
        reply = (params.input_responses or {}).get("user")
        if reply is None:
            return ask(ctx, {"user": ASK_NAME}, None)
        return base.result(base.text(f"User response: {said(reply)}"))
    if name == "test_custom_headers":
        return base.result(base.text(f"region {(params.arguments or {}).get('region')}"))
    if name == "test_logging_tool":
        for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            # The session drops these at 2026-07-28 unless the request's _meta asked for this level.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated at 2026-07-28, but the scenario calls it
                await ctx.session.send_log_message("info", message, logger="conformance",
                                                   related_request_id=ctx.request_id)
            await anyio.sleep(0.02)
        return base.result(base.text("Tool with logging executed successfully"))
    return await base.call_tool(ctx, params)


async def list_prompts(ctx, params) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[*base.PROMPTS, PROMPT])


async def get_prompt(ctx, params: types.GetPromptRequestParams):
    if params.name != PROMPT.name:
        return await base.get_prompt(ctx, params)
    reply = (params.input_responses or {}).get("user_context")
    if reply is None:
        return ask(ctx, ASK_CONTEXT, None)
    content = getattr(reply, "content", None) or {}
    return types.GetPromptResult(messages=[base.user(base.text(
        f"Use this context: {content.get('context', '')}"))])


async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri not in base.STATIC and not (uri.startswith("test://template/") and uri.endswith("/data")):
        raise MCPError(code=types.INVALID_PARAMS, message=f"Resource not found: {uri}", data={"uri": uri})
    return await base.read_resource(ctx, params)


def request_state_security() -> RequestStateSecurity:
    key = os.environ.get(STATE_KEY_ENV)
    return RequestStateSecurity(keys=[key]) if key else RequestStateSecurity.ephemeral()


def build() -> Server:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the logging capability is deprecated at 2026-07-28, not before
        server = Server(
            NAME,
            version="1.0.0",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=base.list_resources,
            on_list_resource_templates=base.list_resource_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=base.subscribe,
            on_unsubscribe_resource=base.unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=base.complete,
            on_set_logging_level=base.set_level,
        )
    server.middleware.append(RequestStateBoundary(request_state_security(), default_audience=NAME))
    return server


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(base.serve_stdio if "--stdio" in sys.argv[1:] else base.serve_http, build())
