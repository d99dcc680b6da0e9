"""Which HTTP stream each upstream message goes to, on the Streamable HTTP listening side.

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

from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from proxy.core.jsonrpc import id_key, meta_of
from proxy.core.streams import ReadStream, WatchedReader, WriteStream
from proxy.listen.answer import SCOPE_KEY, Answer

REQUEST_CANCELLED = -32800  # what the SDK's Streamable HTTP server answers a cancelled request with


class _RoutedWriter:
    def __init__(self, router: StreamRouter) -> None:
        self._router = router

    async def send(self, item: SessionMessage) -> None:
        item = self._router.to_client(item)
        if item is not None:
            await self._router.send(item)


class StreamRouter:
    """Puts each upstream message on the HTTP stream it belongs to (see the module docstring)."""

    def __init__(self, read_stream: ReadStream, write_stream: WriteStream, *, related_streams: bool = True) -> None:
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
