"""Which HTTP stream each upstream message goes to, on the Streamable HTTP listening side.

`StreamRouter` sits between the Relay and a Streamable HTTP server transport.
A message that belongs to a client request (progress, a log message, a
server-to-client request) must go out on that request's POST, everything else
on the GET stream. The Relay forwards upstream messages as they came, so the
router works out the relation: from the upstream's own tag (a Streamable
HTTP upstream, see proxy/upstream/streamable_http.py), or for progress from
the `progressToken` the client put on its request. It writes such a message
on the request's `Answer` (proxy/listen/answer.py: the transport runs in JSON
mode, and an answer becomes an SSE stream only when a call needs one). A
request the client cancelled must have its answer ended too: the SDK's
server does that with a -32800 error of its own (`on_request_unanswered`),
which a relay never triggers, so the router asks the relay to write that
error itself and drop a late upstream answer (`Relay.answer_cancelled`).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from proxy.core.jsonrpc import envelope_of, id_key
from proxy.core.relay import InFlight, Relay
from proxy.core.streams import ReadStream, StreamPair, WriteStream
from proxy.listen.answer import SCOPE_KEY, Answer
from proxy.listen.posts import LeanPosts


class _RoutedWriter:
    def __init__(self, router: StreamRouter) -> None:
        self._router = router

    async def send(self, item: SessionMessage) -> None:
        await self._router.send(self._router.route(item))


class StreamRouter:
    """Puts each upstream message on the HTTP stream it belongs to (see the module docstring).

    It keeps no table of its own: what it needs to know about a request in
    flight (its progress token, the POST it came on) is in the relay's one
    in-flight table, which `bind` hands it when the session's relay exists.
    """

    def __init__(self, read_stream: ReadStream, write_stream: WriteStream, *, related_streams: bool = True,
                 posts: LeanPosts | None = None) -> None:
        self._write = write_stream
        self._posts = posts  # a reply to a POST on the lean path goes straight to it
        self._related_streams = related_streams  # False (JSON responses): everything but replies to the GET stream
        self._relay: Relay | None = None
        self.streams: StreamPair = (read_stream, _RoutedWriter(self))

    def bind(self, relay: Relay) -> None:
        self._relay = relay
        relay.answer_cancelled = True  # the SDK's server would end a cancelled request's POST with -32800

    def _request(self, request_id: Any) -> InFlight | None:
        return self._relay.request(request_id) if self._relay is not None else None

    async def send(self, item: SessionMessage) -> None:
        """Write a routed message: one that belongs to a call goes on the call's own POST answer."""
        if self._posts is not None and self._posts.deliver(item):
            return
        metadata = item.metadata
        if isinstance(metadata, ServerMessageMetadata) and metadata.related_request_id is not None:
            answer = _answer_of(self._request(metadata.related_request_id))
            if answer is not None:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                try:
                    if await answer.event(data):
                        return
                except OSError:  # the client is gone from that POST; the GET stream may still reach it
                    pass
            item = SessionMessage(item.message)  # its POST is already answered: the GET stream
        await self._write.send(item)

    def route(self, item: SessionMessage) -> SessionMessage:
        """The message with the id of the client request it belongs to in its metadata, or bare for the GET stream."""
        kind = envelope_of(item).kind
        if kind == "response" or kind == "error":
            return item  # a reply goes with its request: no SDK model built to learn that
        message = item.message
        if not self._related_streams:
            return SessionMessage(message)
        related: InFlight | None = None
        metadata = item.metadata
        if isinstance(metadata, ServerMessageMetadata) and metadata.related_request_id is not None:
            related = self._request(metadata.related_request_id)
        if related is None and self._relay is not None and isinstance(message, types.JSONRPCNotification) and (
                message.method == "notifications/progress"):
            token = (message.params or {}).get("progressToken")
            if isinstance(token, str | int) and not isinstance(token, bool):
                related = self._relay.by_token.get(id_key(token))
        if related is None:
            return SessionMessage(message)  # the GET stream
        return SessionMessage(message, metadata=ServerMessageMetadata(related_request_id=related.id))


def _answer_of(request: InFlight | None) -> Answer | None:
    """The POST answer a request came with: its SessionMessage metadata carries the starlette Request."""
    context = getattr(request.origin, "request_context", None) if request is not None else None
    return context.scope.get(SCOPE_KEY) if context is not None else None
