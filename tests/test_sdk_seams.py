"""The private parts of the SDK and uvicorn the gate relies on, pinned: an upgrade that moves one fails here, loudly.

pyproject.toml pins `mcp`, `httpx2` and `uvicorn` to the minor versions these
signatures were read from; docs/architecture.md says why each seam exists
and what SDK change would remove it.
"""

from __future__ import annotations

import inspect
import re

import pytest


def signature(obj) -> str:
    return str(inspect.signature(obj))


STREAMABLE_CLIENT = {
    # overridden by proxy/upstream/streamable_http.py:_TaggingTransport
    "_handle_sse_event": "(self, sse: 'ServerSentEvent', read_stream_writer: 'StreamWriter', original_request_id: "
                         "'RequestId | None' = None, resumption_callback: 'Callable[[str], Awaitable[None]] | None' "
                         "= None) -> 'bool'",
    "_handle_sse_response": "(self, response: 'httpx2.Response', ctx: 'RequestContext') -> 'None'",
    "_handle_post_request": "(self, ctx: 'RequestContext') -> 'None'",
    # called by it
    "_resolve_abandoned_request": "(self, read_stream_writer: 'StreamWriter', request_id: 'RequestId', message: "
                                  "'str', *, code: 'int' = -32000) -> 'None'",
    "_handle_reconnection": "(self, ctx: 'RequestContext', last_event_id: 'str', retry_interval_ms: 'int | None' = "
                            "None, attempt: 'int' = 0) -> 'None'",
    "_prepare_headers": "(self) -> 'dict[str, str]'",
    "post_writer": "(self, client: 'httpx2.AsyncClient', write_stream_reader: 'StreamReader', read_stream_writer: "
                   "'StreamWriter', write_stream: 'ContextSendStream[SessionMessage]', start_get_stream: "
                   "'Callable[[], None]', tg: 'TaskGroup') -> 'None'",
    "handle_get_stream": "(self, client: 'httpx2.AsyncClient', read_stream_writer: 'StreamWriter') -> 'None'",
    "terminate_session": "(self, client: 'httpx2.AsyncClient') -> 'None'",
    "__init__": "(self, url: 'str', *, max_sse_event_size: 'int | None' = 1048576) -> 'None'",
}


@pytest.mark.parametrize("name", sorted(STREAMABLE_CLIENT))
def test_streamable_http_client_transport_members(name: str) -> None:
    from mcp.client.streamable_http import StreamableHTTPTransport

    assert signature(getattr(StreamableHTTPTransport, name)) == STREAMABLE_CLIENT[name]


def test_streamable_http_client_transport_attributes() -> None:
    """Instance state the lean POST path reads and writes."""
    from mcp.client.streamable_http import StreamableHTTPTransport

    transport = StreamableHTTPTransport("http://127.0.0.1:9/mcp")
    for attribute in ("session_id", "max_sse_event_size"):
        assert hasattr(transport, attribute), attribute


def test_post_writer_handles_each_message_itself_when_its_reader_carries_no_sender_context() -> None:
    """proxy/upstream/streamable_http.py gives post_writer a `MailboxReceiver` (last_context None): this branch."""
    from mcp.client.streamable_http import StreamableHTTPTransport

    source = inspect.getsource(StreamableHTTPTransport.post_writer)
    assert "async for session_message in write_stream_reader:" in source
    assert "sender_ctx = write_stream_reader.last_context" in source
    assert "if sender_ctx is not None:" in source and "await _handle_message(session_message)" in source


def test_post_writer_s_request_branch_is_what_dispatch_mirrors() -> None:
    """proxy/upstream/streamable_http.py:_TaggingTransport.dispatch does this branch itself for a request."""
    import dataclasses

    from mcp.client.streamable_http import RequestContext, StreamableHTTPTransport, _InFlightPost

    assert [f.name for f in dataclasses.fields(RequestContext)] == [
        "client", "session_id", "session_message", "metadata", "read_stream_writer"]
    assert [f.name for f in dataclasses.fields(_InFlightPost)] == ["scope", "modern"]
    source = inspect.getsource(StreamableHTTPTransport.post_writer) + inspect.getsource(
        StreamableHTTPTransport._consume_modern_cancellation)
    for line in ("self._protocol_version_header = stamped_version",
                 "scope=anyio.CancelScope(),",
                 "modern=self._protocol_version_header in MODERN_PROTOCOL_VERSIONS,",
                 "if not post.modern:",  # in _consume_modern_cancellation: an older POST is never aborted
                 "superseded = self._in_flight_posts.get(message.id)",
                 "superseded.scope.cancel()",
                 "self._in_flight_posts[message.id] = post",
                 "tg.start_soon(self._run_request_post, handle_request_async, post, message.id)"):
        assert line in source, line
    # dispatch runs the POST in a task of its own and gives `_InFlightPost` a `_TaskAbort` for its scope,
    # which cancels that task: right only while the SDK does nothing with a scope it did not enter itself
    # but cancel it, and drops the entry after the POST as dispatch's done callback does.
    import mcp.client.streamable_http as sdk_module

    uses = re.findall(r"[.]scope\b.{0,10}", inspect.getsource(sdk_module))
    assert sorted(set(uses)) == [".scope.cancel()", ".scope:"], uses
    run = inspect.getsource(StreamableHTTPTransport._run_request_post)
    assert "with post.scope:" in run and "if self._in_flight_posts.get(request_id) is post:" in run
    transport = StreamableHTTPTransport("http://127.0.0.1:9/mcp")
    assert transport._protocol_version_header is None and transport._in_flight_posts == {}


def test_private_sdk_modules() -> None:
    from mcp.shared._httpx_utils import create_mcp_http_client

    assert signature(create_mcp_http_client) == (
        "(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None "
        "= None) -> httpx2.AsyncClient")
    # proxy/upstream/http_client.py builds that client itself, with one shared TLS context: what it mirrors.
    from mcp.shared import _httpx_utils

    assert (_httpx_utils.MCP_DEFAULT_TIMEOUT, _httpx_utils.MCP_DEFAULT_SSE_READ_TIMEOUT) == (30.0, 300.0)
    code = inspect.getsource(create_mcp_http_client).split("Note:")[-1]
    assert "httpx2.AsyncClient(**kwargs)" in code and "verify" not in code and "follow_redirects" not in code


def test_streamable_http_server_transport() -> None:
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    assert signature(StreamableHTTPServerTransport.__init__) == (
        "(self, mcp_session_id: str | None, is_json_response_enabled: bool = False, event_store: "
        "mcp.server.streamable_http.EventStore | None = None, security_settings: "
        "mcp.server.transport_security.TransportSecuritySettings | None = None, retry_interval: int | None = None, "
        "idle_timeout: float | None = None) -> None")
    transport = StreamableHTTPServerTransport(mcp_session_id="x", idle_timeout=5)
    assert hasattr(transport, "idle_scope") and hasattr(transport, "is_terminated")


async def test_server_transport_members_the_lean_post_path_uses() -> None:
    """proxy/listen/posts.py: LeanPosts keeps the transport's idle countdown; its inbox ends with the transport."""
    import anyio
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    transport = StreamableHTTPServerTransport(mcp_session_id="x", is_json_response_enabled=True, idle_timeout=5)
    assert transport._requests_in_flight == 0 and transport._idle_timeout == 5
    # handle_request holds the session while a request is in flight, as LeanPosts._hold and _release mirror.
    source = inspect.getsource(StreamableHTTPServerTransport.handle_request)
    for line in ("self._requests_in_flight += 1", "self.idle_scope.deadline = math.inf",
                 "self._requests_in_flight -= 1",
                 "self.idle_scope.deadline = anyio.current_time() + self._idle_timeout"):
        assert line in source, line
    async with transport.connect() as (read_stream, _):
        assert transport.idle_scope is not None
        # proxy/listen/http.py:_forward ends the session's inbox when the transport's read stream ends.
        await transport.terminate()  # closes the stream's reading end itself: reading it fails as closed
        with anyio.fail_after(5), pytest.raises(anyio.ClosedResourceError):
            await read_stream.receive()


def test_uvicorn_httptools_protocol_members_the_header_deadline_and_limit_use() -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert signature(HttpToolsProtocol.connection_made) == "(self, transport: 'asyncio.Transport') -> 'None'"
    assert signature(HttpToolsProtocol.data_received) == "(self, data: 'bytes') -> 'None'"
    assert signature(HttpToolsProtocol.on_headers_complete) == "(self) -> 'None'"
    assert signature(HttpToolsProtocol.on_response_complete) == "(self) -> 'None'"
    assert signature(HttpToolsProtocol.send_400_response) == "(self, msg: 'str') -> 'None'"
    # The parser feeds callbacks from data_received; a request's headers end in on_headers_complete.
    assert "self.parser.feed_data(data)" in inspect.getsource(HttpToolsProtocol.data_received)
    assert "self.transport = transport" in inspect.getsource(HttpToolsProtocol.connection_made)


def test_uvicorn_server_capture_signals_is_the_override_point() -> None:
    import uvicorn

    assert signature(uvicorn.Server.capture_signals) == "(self) -> 'Generator[None, None, None]'"
    assert "with self.capture_signals():" in inspect.getsource(uvicorn.Server.serve)


def test_the_sdk_s_param_header_check_passes_anything_for_a_schema_that_declares_no_valid_header() -> None:
    """The sessionless path skips the check for such a schema (`ToolEntry.declares_param_headers`, worked out once
    per tool), which is only right while the SDK's check can then never refuse."""
    from mcp.shared.inbound import find_invalid_x_mcp_header, validate_mcp_param_headers, x_mcp_header_map

    lying = {"mcp-param-region": "us-east", "Mcp-Param-Dry": "true", "mcp-param-x": "1"}
    undeclared = {"type": "object", "properties": {"region": {"type": "string"}}}
    invalid = {"type": "object", "properties": {"region": {"type": "object", "x-mcp-header": "Region"}}}
    declared = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    for schema in (undeclared, invalid):
        assert find_invalid_x_mcp_header(schema) is not None or not x_mcp_header_map(schema)
        assert validate_mcp_param_headers(schema, {"region": "eu-west"}, lying) is None
        assert validate_mcp_param_headers(schema, {}, lying) is None
    assert find_invalid_x_mcp_header(declared) is None and x_mcp_header_map(declared) == {("region",): "Region"}
    assert validate_mcp_param_headers(declared, {"region": "eu-west"}, lying) is not None


def test_pins_match_what_these_seams_were_read_from() -> None:
    from importlib.metadata import version

    assert version("mcp").startswith("2.3.")
    assert version("httpx2").startswith("2.16.")
    assert version("uvicorn").startswith("0.55.")
    assert version("httptools").startswith("0.9.")
