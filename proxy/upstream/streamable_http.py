"""The upstream side over HTTP: the SDK's `sse_client` and Streamable HTTP client, plus what a relay must add.

Two things the SDK client transports leave to the session layer above them,
which a relay (no session layer) has to supply itself:

- Headers. The Streamable HTTP client stamps `MCP-Protocol-Version`,
  `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` only from a message's
  `ClientMessageMetadata.headers`, which the SDK's `ClientSession` fills in.
  Relayed messages carry the listening transport's metadata (or none), so
  without `HeaderStamper` every request after `initialize` would go out with
  no protocol-version header and the upstream would assume 2025-03-26.
- Which request a message belongs to. A notification or server-to-client
  request that arrives on the SSE stream of one POST is put on the read
  stream bare, so a Streamable HTTP listening side could only send it to the
  client's GET stream. `_TaggingTransport` marks it with
  `ServerMessageMetadata(related_request_id=...)`, the id of the request
  whose POST it arrived on (the client's id: the relay forwards ids unchanged).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
import urllib.request
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
from httpx2 import EventSource, ServerSentEvent
from mcp.client.streamable_http import MCP_SESSION_ID, RequestContext, StreamableHTTPTransport, _InFlightPost
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
    find_invalid_x_mcp_header,
    mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.message import ClientMessageMetadata, ServerMessageMetadata, SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from proxy.core.jsonrpc import PROTOCOL_VERSION_META_KEY, Frame, dump, envelope_of, json_frame, meta_of
from proxy.core.streams import MailboxSender, StreamPair, WatchedReader, mailbox
from proxy.core.tasks import Spawner
from proxy.upstream.http_client import http_client
from proxy.upstream.post_pool import CONNECT_TIMEOUT, HTTPError, PostPool
from proxy.upstream.post_pool import eligible as lean_posts_for
from proxy.upstream.sse_decoder import SSEDecoder, SSEError

if TYPE_CHECKING:
    from proxy.core.catalog import Catalog
    from proxy.session import UpstreamSpec

logger = logging.getLogger("mcp-schema-gate")
DRAIN_SECONDS = 1.0  # how long to wait for the end of an upstream POST's SSE stream after its reply


def transport_for(url: str, explicit: str | None = None) -> str:
    """`sse` for a URL whose path ends in /sse (the legacy HTTP+SSE convention), else `http`."""
    if explicit:
        return explicit
    path = urlsplit(url).path.rstrip("/")
    return "sse" if path.endswith("/sse") else "http"


class _TaskAbort:
    """The abort of one 2026-07-28 request POST, for the SDK's `_InFlightPost.scope`: it cancels the POST's task.

    The SDK aborts a POST by calling `post.scope.cancel()` (a cancelled
    request, a reused id) and, in its own `_run_request_post`, runs the POST
    inside that anyio scope. Here the POST has a plain task to itself
    (`Spawner`), so cancelling the task is the same abort, without a cancel
    scope entered and left on every request (tests/test_sdk_seams.py pins
    that `cancel()` is all the SDK asks of it).
    """

    __slots__ = ("task",)

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


class HeaderStamper:
    """Works out the per-message HTTP headers a Streamable HTTP upstream expects.

    `schema_of(name)` returns the cached inputSchema of a tool (the session's
    Catalog), whose `x-mcp-header` annotations ask for `Mcp-Param-*` headers.
    """

    def __init__(self, schema_of: Callable[[str], Any]) -> None:
        self._schema_of = schema_of
        self._initialize_ids: set[Any] = set()
        self.negotiated: str | None = None
        self._header_maps: dict[int, tuple[Any, dict]] = {}

    def observe_reply(self, item: SessionMessage) -> None:
        if not self._initialize_ids:
            return
        reply = envelope_of(item)  # a Frame is read without building the SDK's model
        if reply.kind == "response" and reply.id in self._initialize_ids:
            self._initialize_ids.discard(reply.id)
            version = reply.result.get("protocolVersion") if isinstance(reply.result, dict) else None
            if isinstance(version, str):
                self.negotiated = version

    async def observe(self, item: SessionMessage) -> None:  # the WatchedReader callback
        self.observe_reply(item)

    def headers_for(self, message: Any) -> dict[str, str] | None:
        """The headers for one outgoing message: an SDK model, or an Envelope (a Frame, read without a model)."""
        envelope = message if isinstance(message, Frame) else envelope_of(SessionMessage(message))
        method, params = envelope.method, envelope.params
        if envelope.kind != "request":
            # Notifications and the client's responses are HTTP requests too:
            # they carry the negotiated version (and a notification its method).
            headers = {}
            if envelope.kind == "notification":
                headers[MCP_METHOD_HEADER] = method
                version = (meta_of(params) or {}).get(PROTOCOL_VERSION_META_KEY)
                if isinstance(version, str):
                    headers[MCP_PROTOCOL_VERSION_HEADER] = version
            if MCP_PROTOCOL_VERSION_HEADER not in headers and self.negotiated:
                headers[MCP_PROTOCOL_VERSION_HEADER] = self.negotiated
            return headers or None
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            self._initialize_ids.add(envelope.id)
            return {MCP_METHOD_HEADER: method}
        headers: dict[str, str] = {MCP_METHOD_HEADER: method}
        meta = meta_of(params) or {}
        version = meta.get(PROTOCOL_VERSION_META_KEY)
        version = version if isinstance(version, str) else self.negotiated
        if version:
            headers[MCP_PROTOCOL_VERSION_HEADER] = version
        name_key = NAME_BEARING_METHODS.get(method)
        if name_key is not None and isinstance(name := params.get(name_key), str):
            headers[MCP_NAME_HEADER] = encode_header_value(name)
        if method == "tools/call" and isinstance(name := params.get("name"), str):
            arguments = params.get("arguments")
            if isinstance(arguments, dict) and arguments:
                header_map = self._header_map(self._schema_of(name))
                if header_map:
                    headers.update(mcp_param_headers(header_map, arguments))
        return headers

    def _header_map(self, schema: Any) -> dict:
        if not isinstance(schema, dict):
            return {}
        cached = self._header_maps.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        # An invalid annotation mirrors nothing (the SDK client refuses such a tool outright).
        header_map = {} if find_invalid_x_mcp_header(schema) else x_mcp_header_map(schema)
        if len(self._header_maps) > 4096:  # old catalog revisions' schemas
            self._header_maps.clear()
        self._header_maps[id(schema)] = (schema, header_map)
        return header_map


class _StampingWriter:
    """The upstream write stream, with each message's headers put in its ClientMessageMetadata."""

    def __init__(self, inner: MailboxSender[SessionMessage], stamper: HeaderStamper,
                 dispatch: Callable[[Frame, dict[str, str]], bool] | None = None) -> None:
        self._inner = inner
        self._stamper = stamper
        self._dispatch = dispatch  # _TaggingTransport.dispatch, bound to its session

    async def send(self, item: SessionMessage) -> None:
        if type(item) is Frame:
            headers = self._stamper.headers_for(item)
            if self._dispatch is not None and self._dispatch(item, headers or {}):
                return
        else:
            headers = self._stamper.headers_for(item.message)
        await self._inner.send(SessionMessage(item.message, metadata=ClientMessageMetadata(headers=headers)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()


class _Tagger:
    """A read-stream writer that marks everything but the response with the request it arrived for."""

    def __init__(self, inner: Any, request_id: Any) -> None:
        self._inner = inner
        self._request_id = request_id

    async def send(self, item: Any) -> None:
        if isinstance(item, SessionMessage) and not isinstance(
            item.message, types.JSONRPCResponse | types.JSONRPCError
        ):
            item.metadata = ServerMessageMetadata(related_request_id=self._request_id)
        await self._inner.send(item)


def _is_reply(data: str) -> bool:
    """Whether an SSE event's data is a JSON-RPC response or error (which ends a POST's stream)."""
    if not data or ('"result"' not in data and '"error"' not in data):
        return False
    try:
        value = json.loads(data)
    except ValueError:
        return False
    return isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value)


class _TaggingTransport(StreamableHTTPTransport):
    async def _handle_sse_event(self, sse, read_stream_writer, original_request_id=None, resumption_callback=None):
        if original_request_id is not None:
            read_stream_writer = _Tagger(read_stream_writer, original_request_id)
        return await super()._handle_sse_event(sse, read_stream_writer, original_request_id, resumption_callback)

    async def _handle_sse_response(self, response: Any, ctx: Any) -> None:
        """The SDK's POST stream reader (httpx2), through the one event loop below."""
        events = aiter(EventSource(response, max_event_size=self.max_sse_event_size))

        async def finish() -> None:
            async for _ in events:
                pass

        try:
            await self._read_events(ctx, events, finish)
        finally:
            await response.aclose()

    async def _read_events(self, ctx: Any, events: AsyncIterator[ServerSentEvent],
                           finish: Callable[[], Awaitable[None]]) -> None:
        """Hand a POST's SSE events to the SDK; at the reply, read the body to its end first.

        Both POST paths (httpx2 and the lean pool) come through here. The SDK
        closes the response as soon as the reply event is parsed, a few bytes
        before the server ends the chunked body, so the connection cannot go
        back to the pool and every upstream request pays for a new TCP
        connection (on both sides). The server ends the stream right after the
        reply; reading on to that end (`finish`) first means the connection is
        back in the pool before the client can send its next request. A stream
        that does not end within DRAIN_SECONDS is closed as the SDK would.
        """
        request_id = envelope_of(ctx.session_message).id
        last_event_id: str | None = None
        retry_interval_ms: int | None = None
        callback = ctx.metadata.on_resumption_token_update if ctx.metadata else None
        try:
            async for sse in events:
                if sse.id:
                    last_event_id = sse.id
                if sse.retry is not None:
                    retry_interval_ms = sse.retry
                reply = _is_reply(sse.data)
                if reply:
                    with anyio.move_on_after(DRAIN_SECONDS):
                        await finish()
                await self._handle_sse_event(sse, ctx.read_stream_writer, original_request_id=request_id,
                                             resumption_callback=callback)
                if reply:
                    return
        except (httpx2.SSEError, SSEError) as exc:
            await self._resolve_abandoned_request(ctx.read_stream_writer, request_id, f"SSE stream failed: {exc}")
            return
        except Exception:  # the connection broke (httpx2's or the pool's error): resume or answer below
            logger.debug("SSE stream ended", exc_info=True)
        await self._ended_without_reply(ctx, request_id, last_event_id, retry_interval_ms)

    async def _ended_without_reply(self, ctx, request_id: Any, last_event_id: str | None,
                                   retry_interval_ms: int | None) -> None:
        """A POST's stream ended before its reply: resume it from the last event id, else answer with an error."""
        if last_event_id is not None:
            await self._handle_reconnection(ctx, last_event_id, retry_interval_ms)
        else:
            await self._resolve_abandoned_request(ctx.read_stream_writer, request_id,
                                                  "SSE stream ended without a response")

    def __init__(self, url: str, pool: PostPool | None = None) -> None:
        super().__init__(url)
        self._pool = pool
        # Chosen once: the lean pool for plain http:// without a proxy, else the SDK's httpx2 POST.
        self._post: Callable[[Any], Awaitable[None]] = (
            functools.partial(self._post_lean, pool=pool) if pool is not None else super()._handle_post_request)

    async def _handle_post_request(self, ctx) -> None:
        try:
            await self._post(ctx)
        except (httpx2.TransportError, HTTPError) as exc:
            # The SDK lets a connection error escape the POST task, which tears
            # the whole transport down and leaves the request unanswered; a relay
            # answers it (the upstream may be back for the next request).
            envelope = envelope_of(ctx.session_message)
            if envelope.kind == "request":
                await self._resolve_abandoned_request(
                    ctx.read_stream_writer, envelope.id, f"The upstream MCP server is unreachable: {exc}",
                    code=types.INTERNAL_ERROR,
                )

    def dispatch(self, frame: Frame, headers: dict[str, str], client: Any, read_stream_writer: Any,
                 tasks: Spawner) -> bool:
        """Start the POST of a request the relay forwarded, without `post_writer`; False when it must go there.

        For a request other than `initialize`, over the lean pool, this is
        `post_writer`'s request branch: record the stamped protocol version
        and run `_handle_post_request` in a task of its own (a `Spawner` task). At 2026-07-28 the
        POST is registered for abort as `post_writer` registers it, since
        closing the POST is how a request is cancelled there (and a reused id
        cuts its predecessor short); its abort cancels its task (`_TaskAbort`),
        which runs nothing else. Before 2026-07-28 the abort has no use but
        the latter, and is left out: a request whose id the client reuses
        while it is in flight still gets its own answer. This saves the
        branch's stream hop, per-message context, pydantic model and eager
        debug repr. Everything else (notifications, replies, `initialize`, the
        SDK's own httpx2 POST) goes through `post_writer`.
        """
        if self._pool is None or frame.kind != "request" or frame.method == "initialize":
            return False
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None:
            self._protocol_version_header = version
        metadata = ClientMessageMetadata(headers=headers)
        ctx = RequestContext(client=client, session_id=self.session_id,
                             session_message=Frame("request", frame.value, metadata=metadata), metadata=metadata,
                             read_stream_writer=read_stream_writer)
        if self._protocol_version_header not in MODERN_PROTOCOL_VERSIONS:
            tasks.start_soon(self._handle_post_request, ctx)
            return True
        abort = _TaskAbort()
        post = _InFlightPost(scope=abort, modern=True)  # type: ignore[arg-type] # the SDK only calls scope.cancel()
        superseded = self._in_flight_posts.get(frame.id)
        if superseded is not None:
            superseded.scope.cancel()
        self._in_flight_posts[frame.id] = post
        abort.task = tasks.start_soon(self._handle_post_request, ctx)
        # However the task ends (even cancelled before its first step), its entry goes, unless a
        # reused id has registered a successor under the same key (as `_run_request_post` guards).
        abort.task.add_done_callback(functools.partial(self._post_ended, frame.id, post))
        return True

    def _post_ended(self, request_id: Any, post: _InFlightPost, _task: Any) -> None:
        if self._in_flight_posts.get(request_id) is post:
            del self._in_flight_posts[request_id]

    async def _post_lean(self, ctx, pool: PostPool) -> None:
        """The SDK's `_handle_post_request`, over `PostPool` (see proxy/upstream/post_pool.py for why).

        Statuses, content types and errors are handled as the SDK does; a
        redirect is handed back to the SDK's own POST (no body was processed,
        so sending it again is safe), which follows it within the origin or
        answers with an error naming the location.
        """
        session_message = ctx.session_message
        envelope = envelope_of(session_message)
        headers = self._prepare_headers()
        if ctx.metadata is not None and ctx.metadata.headers is not None:
            headers.update(ctx.metadata.headers)
        response = await pool.post(headers, dump(session_message).rstrip(b"\n"))
        try:
            status = response.status
            if 300 <= status < 400:
                response.close()
                await super()._handle_post_request(ctx)
                return
            request_id = envelope.id if envelope.kind == "request" else None
            content_type = response.headers.get("content-type", "").lower()
            if status == 202:
                if request_id is not None:
                    await self._resolve_abandoned_request(ctx.read_stream_writer, request_id,
                                                          "server answered a request with 202 Accepted",
                                                          code=types.INVALID_REQUEST)
                return
            if status >= 400:
                if request_id is not None:
                    await self._send_status_error(ctx, request_id, status, content_type, response)
                return
            if envelope.kind == "request" and envelope.method == "initialize" and (
                    session_id := response.headers.get(MCP_SESSION_ID)):
                self.session_id = session_id
            if request_id is None:
                return
            if content_type.startswith("application/json"):
                await self._lean_json(ctx, request_id, response)
            elif content_type.startswith("text/event-stream"):
                await self._lean_sse(ctx, request_id, response)
            else:
                await self._resolve_abandoned_request(ctx.read_stream_writer, request_id,
                                                      f"Unexpected content type: {content_type}",
                                                      code=types.INVALID_REQUEST)
        finally:
            response.close()

    async def _send_status_error(self, ctx, request_id: Any, status: int, content_type: str, response: Any) -> None:
        if content_type.startswith("application/json"):
            # A JSON-RPC error in the body of a non-2xx answer is the real answer.
            try:
                parsed = types.jsonrpc_message_adapter.validate_json(await response.read(), by_name=False)
            except ValidationError:
                parsed = None
            if isinstance(parsed, types.JSONRPCError):
                await ctx.read_stream_writer.send(
                    SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=parsed.error)))
                return
        if status == 404:
            error = (types.ErrorData(code=types.METHOD_NOT_FOUND, message="Not Found") if self.session_id is None
                     else types.ErrorData(code=types.INVALID_REQUEST, message="Session terminated"))
        else:
            error = types.ErrorData(code=types.INTERNAL_ERROR, message="Server returned an error response")
        await ctx.read_stream_writer.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)))

    async def _lean_json(self, ctx, request_id: Any, response: Any) -> None:
        body = await response.read()
        frame = json_frame(body)
        if frame is not None:  # the usual shapes, relayed without the SDK's model (see Frame)
            await ctx.read_stream_writer.send(frame)
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(body, by_name=False)
        except ValidationError as exc:
            error = types.ErrorData(code=types.PARSE_ERROR, message=f"Failed to parse JSON response: {exc}")
            message = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        await ctx.read_stream_writer.send(SessionMessage(message))

    async def _lean_sse(self, ctx, request_id: Any, response: Any) -> None:
        """The lean pool's SSE answer, through the same event loop as httpx2's (`_read_events`)."""
        decoder = SSEDecoder(self.max_sse_event_size)
        chunks = aiter(response.chunks())

        async def events() -> AsyncIterator[ServerSentEvent]:
            async for chunk in chunks:
                for sse in decoder.feed(chunk):
                    yield sse

        async def finish() -> None:
            async for _ in chunks:
                pass

        await self._read_events(ctx, events(), finish)


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str] | None) -> AsyncIterator[tuple[Any, Any, Any]]:
    """`mcp.client.streamable_http.streamable_http_client`, with `_TaggingTransport` in it (and `http_client`).

    Yields the read and write streams and the transport's `dispatch`, bound to this session.
    """
    client = http_client(headers=headers)
    transport = _TaggingTransport(url, PostPool(url, headers) if lean_posts_for(url) else None)
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(client)
        if transport._pool is not None:
            stack.callback(transport._pool.close)
        # The gate's own mailboxes, not the SDK's context streams: the sender
        # (the relay) carries no context a POST needs, so post_writer handles
        # each message directly instead of in a task group of its own.
        read_stream_writer, read_stream = mailbox()
        write_stream, write_stream_reader = mailbox()
        async with read_stream_writer, read_stream, write_stream, write_stream_reader, anyio.create_task_group() as tg:

            def start_get_stream() -> None:
                tg.start_soon(transport.handle_get_stream, client, read_stream_writer)

            tg.start_soon(
                transport.post_writer, client, write_stream_reader, read_stream_writer, write_stream,
                start_get_stream, tg,
            )
            # The request POSTs `dispatch` starts, a task each: plain asyncio tasks owned by this group.
            posts = Spawner()
            await tg.start(posts.run)
            try:
                yield read_stream, write_stream, functools.partial(
                    transport.dispatch, client=client, read_stream_writer=read_stream_writer, tasks=posts)
            finally:
                if transport.session_id:
                    with anyio.move_on_after(5, shield=True):
                        await transport.terminate_session(client)  # DELETE: the upstream session ends too
                tg.cancel_scope.cancel()


async def reachable(url: str) -> None:
    """Raise OSError when nothing listens at the URL's host and port.

    The SDK's client connects lazily, at the first POST, and answers that
    request with an error; a session whose upstream was never there should
    end saying so (a stdio gate exits non-zero) rather than answer every
    request with an error. Skipped where the environment routes through a
    proxy, which is what the connection would reach.
    """
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if (parts.scheme in proxies or "all" in proxies) and not urllib.request.proxy_bypass(parts.hostname or ""):
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    with anyio.fail_after(CONNECT_TIMEOUT):
        stream = await anyio.connect_tcp(parts.hostname or "", port)
    await stream.aclose()


@asynccontextmanager
async def open_streamable_http(spec: UpstreamSpec, catalog: Catalog) -> AsyncIterator[StreamPair]:
    """The upstream of one session (session.UPSTREAMS): its own Streamable HTTP session, headers stamped."""
    assert spec.url is not None

    def schema_of(name: str) -> Any:
        entry = catalog.get(name)
        return entry.input_schema if entry is not None else None

    await reachable(spec.url)
    stamper = HeaderStamper(schema_of)
    async with _streamable_http(spec.url, spec.headers) as (read_stream, write_stream, dispatch):
        yield WatchedReader(read_stream, stamper.observe), _StampingWriter(write_stream, stamper, dispatch)
