"""One gated session: a client stream pair, its own upstream, Catalog, GuardHooks and Relay.

Every listening side (stdio, SSE, Streamable HTTP) hands `run_session` the
stream pair its transport yields; the upstream (a stdio child, an SSE or a
Streamable HTTP server) is opened for that session alone and closed with it,
so a session's end (DELETE, client gone, idle timeout) ends its upstream
session or child too.

`StreamRouter` sits between the Relay and a Streamable HTTP server transport.
A message that belongs to a client request (progress, a log message, a
server-to-client request) must go out on that request's POST, everything else
on the GET stream. The Relay forwards upstream messages as they came, so the
router works out the relation: from the upstream's own tag (a Streamable
HTTP upstream, see http_upstream), or for progress from the `progressToken`
the client put on its request. It writes such a message on the request's
`Answer` (http_answer: the transport runs in JSON mode, and an answer becomes
an SSE stream only when a call needs one). It also ends the answer of a
request the client cancelled: the SDK's server does that with a -32800 error
of its own (`on_request_unanswered`), which a relay never triggers, so the
router writes that error itself and drops a late upstream answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from proxy.catalog import Catalog
from proxy.gate import Gate
from proxy.guard import GuardHooks
from proxy.http_answer import SCOPE_KEY, Answer
from proxy.relay import Relay
from proxy.wire import WatchedReader, id_key, meta_of

logger = logging.getLogger("mcp-schema-gate")

REQUEST_CANCELLED = -32800  # what the SDK's Streamable HTTP server answers a cancelled request with


@dataclass
class UpstreamSpec:
    """Where each session's upstream is: a stdio command, or a URL with its transport."""

    command: list[str] | None = None
    cwd: str | None = None
    url: str | None = None
    transport: str = "http"
    headers: dict[str, str] | None = None

    def describe(self) -> str:
        return " ".join(self.command) if self.command else f"{self.url} ({self.transport})"


@dataclass
class GateSettings:
    """What every session's GuardHooks is built from."""

    compile_schema: Any
    reject_as: str = "tool-error"
    audit: Any = None
    summary: Any = None
    sessions_started: int = field(default=0)

    def hooks(self) -> GuardHooks:
        catalog = Catalog(self.compile_schema)
        kwargs = {} if self.summary is None else {"summary": self.summary}
        return GuardHooks(catalog, Gate(self.reject_as), self.audit, **kwargs)


def open_upstream(spec: UpstreamSpec, catalog: Catalog):
    if spec.command:
        from proxy.stdio import upstream_stdio

        return upstream_stdio(spec.command, cwd=spec.cwd)
    from proxy.http_upstream import upstream_http

    def schema_of(name: str) -> Any:
        entry = catalog.get(name)
        return entry.input_schema if entry is not None else None

    assert spec.url is not None
    return upstream_http(spec.url, spec.transport, schema_of, spec.headers)


async def run_session(client: tuple[Any, Any], spec: UpstreamSpec, settings: GateSettings) -> int:
    """Gate one client session until either side ends; 0: the client left, 1: the upstream went away."""
    hooks = settings.hooks()
    settings.sessions_started += 1
    relay: Relay | None = None
    try:
        async with open_upstream(spec, hooks.catalog) as upstream:
            relay = Relay(client, upstream, hooks)
            return await relay.run()
    except Exception as exc:  # an OSError, or an ExceptionGroup from an HTTP client transport
        reason = _leaf(exc)
        logger.warning("mcp-schema-gate: the upstream %s failed: %s", spec.describe(), reason)
        if relay is None:
            await _refuse(client, f"The upstream MCP server {spec.describe()} cannot be reached: {reason}")
        return 1


def _leaf(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


async def _refuse(client: tuple[Any, Any], reason: str) -> None:
    """No upstream: answer every client request with an error saying why, until the client leaves."""
    read_stream, write_stream = client
    async for item in read_stream:
        if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=reason)
            reply = types.JSONRPCError(jsonrpc="2.0", id=item.message.id, error=error)
            try:
                await write_stream.send(SessionMessage(reply))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return


class _RoutedWriter:
    def __init__(self, router: StreamRouter) -> None:
        self._router = router

    async def send(self, item: SessionMessage) -> None:
        item = self._router.to_client(item)
        if item is not None:
            await self._router.send(item)


class StreamRouter:
    """Puts each upstream message on the HTTP stream it belongs to (see the module docstring)."""

    def __init__(self, read_stream: Any, write_stream: Any, *, related_streams: bool = True) -> None:
        self._write = write_stream
        self._related_streams = related_streams  # False (JSON responses): everything but replies to the GET stream
        self._open: dict[tuple[bool, Any], Any] = {}  # client requests whose stream is open: key -> id
        self._tokens: dict[tuple[bool, Any], Any] = {}  # progressToken key -> request id
        self._token_of: dict[tuple[bool, Any], tuple[bool, Any]] = {}  # request key -> token key
        self._cancelled: set[tuple[bool, Any]] = set()
        self._answers: dict[tuple[bool, Any], Answer] = {}  # request key -> its POST's answer (http_answer)
        self.streams = (WatchedReader(read_stream, self.from_client, whole=True), _RoutedWriter(self))

    async def send(self, item: SessionMessage) -> None:
        """Write a routed message: one that belongs to a call goes on the call's own POST answer."""
        metadata = item.metadata
        if isinstance(metadata, ServerMessageMetadata) and metadata.related_request_id is not None:
            answer = self._answers.get(id_key(metadata.related_request_id))
            if answer is not None:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                try:
                    if await answer.event(data):
                        return
                except OSError:  # the client is gone from that POST; the GET stream may still reach it
                    pass
            item = SessionMessage(item.message)  # its POST is already answered: the GET stream
        await self._write.send(item)

    async def from_client(self, item: Any) -> None:
        message = item.message if isinstance(item, SessionMessage) else item
        if isinstance(message, types.JSONRPCRequest):
            key = id_key(message.id)
            self._cancelled.discard(key)
            self._open[key] = message.id
            context = getattr(getattr(item, "metadata", None), "request_context", None)  # its POST's starlette Request
            answer = context.scope.get(SCOPE_KEY) if context is not None else None
            if answer is not None:
                self._answers[key] = answer
            token = (meta_of(message.params) or {}).get("progressToken")
            if isinstance(token, str | int) and not isinstance(token, bool):
                self._tokens[id_key(token)] = message.id
                self._token_of[key] = id_key(token)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            params = message.params or {}
            if "requestId" in params:
                key = id_key(params["requestId"])
                if key in self._open:
                    request_id = self._close(key)
                    self._cancelled.add(key)
                    error = types.ErrorData(code=REQUEST_CANCELLED, message="Request cancelled")
                    reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
                    try:
                        await self._write.send(SessionMessage(reply))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        pass

    def _close(self, key: tuple[bool, Any]) -> Any:
        self._answers.pop(key, None)
        request_id = self._open.pop(key, None)
        token = self._token_of.pop(key, None)
        if token is not None:
            self._tokens.pop(token, None)
        return request_id

    def to_client(self, item: SessionMessage) -> SessionMessage | None:
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            key = id_key(message.id)
            if key in self._cancelled:
                self._cancelled.discard(key)
                return None  # its stream was already ended for the cancellation
            self._close(key)
            return item
        if not self._related_streams:
            return SessionMessage(message)  # the GET stream
        related = None
        metadata = item.metadata
        if isinstance(metadata, ServerMessageMetadata) and metadata.related_request_id is not None:
            related = self._open.get(id_key(metadata.related_request_id))
        if related is None and isinstance(message, types.JSONRPCNotification) and message.method == (
            "notifications/progress"
        ):
            token = (message.params or {}).get("progressToken")
            if isinstance(token, str | int) and not isinstance(token, bool):
                related = self._tokens.get(id_key(token))
        if related is None:
            return SessionMessage(message)  # the GET stream
        return SessionMessage(message, metadata=ServerMessageMetadata(related_request_id=related))
