"""Streamable HTTP POSTs of an open session, answered without the SDK transport's per-request machinery.

The SDK's `StreamableHTTPServerTransport` answers a POST in JSON mode by
checking the headers, parsing the body with pydantic into its model, opening
a memory stream for the request, handing the model to the session, and
waiting for its `message_router` task to pass the reply along; then it
serialises the reply with pydantic. By the time a POST reaches the gate's
session table the gate has already read the body and parsed it under the
wire rule (proxy/core/jsonrpc.py), so most of that work is done twice, and
each call pays two extra task switches. On one call at a time it was the
largest single share of the listening side's CPU (docs/performance.md).

`LeanPosts` takes the common case only: a POST to a session that exists and
is not ending, with the headers the transport would accept and a body in a
shape `Frame` takes (a request other than `initialize`, a notification or a
response). It hands the `Frame` to the session's inbox, the mailbox the
relay reads and the transport's own read stream is forwarded into, so the
relay sees it exactly as it sees the transport's messages, and the reply
comes back through `StreamRouter.send`, which calls `deliver`
before the transport's write stream. Everything else (a refusal the SDK
words, an `initialize` on an open session, a terminated session, GET and
DELETE) still goes to the SDK transport, which stays the authority on what
the protocol says about them.

It keeps the transport's idle countdown as `handle_request` does (a request
in flight holds the session; the session ends once no request has been in
flight for the idle timeout), and a request still waiting when the session
ends is answered as the transport answers it then (HTTP 500). The countdown
after its own requests runs on a `LazyDeadline` rather than on the
transport's cancel scope: moving the scope's deadline arms and cancels a loop
timer twice per POST, the lazy deadline about once per idle timeout.
"""

from __future__ import annotations

import asyncio
import math
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request

from proxy.core.deadline import LazyDeadline
from proxy.core.jsonrpc import Frame, dump, envelope_of, frame_of, id_key
from proxy.core.streams import MailboxSender

_JSON = b"application/json"
_TERMINATED = b'{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"Session terminated before the request ' \
    b'completed"}}' % types.INTERNAL_ERROR


def accepts_json(accept: str) -> bool:
    """The Accept header admits application/json, with the wildcards the SDK's `check_accept_headers` honours."""
    for media_type in accept.split(","):
        media_type = media_type.split(";")[0].strip().lower()
        if media_type in ("application/json", "application/*", "*/*"):
            return True
    return False


def is_json_content(content_type: str) -> bool:
    """What both of the SDK's content-type checks on a POST accept: its security check's and its transport's."""
    return content_type.lower().startswith("application/json") and any(
        part.strip() == "application/json" for part in content_type.split(";")[0].split(","))


class LeanPosts:
    """The lean path for one session's POSTs (see the module docstring)."""

    def __init__(self, transport: StreamableHTTPServerTransport, session_id: str,
                 inbox: MailboxSender[SessionMessage | Exception]) -> None:
        self._transport = transport
        self._inbox = inbox
        self._loop = asyncio.get_running_loop()  # made by the session's task; once, as it costs a system call on 3.11
        self._headers = [(b"content-type", _JSON), (MCP_SESSION_ID_HEADER.encode(), session_id.encode("latin-1"))]
        # Each waiting request's future: its reply, or None when the session ended first.
        self._waiting: dict[tuple[bool, Any], asyncio.Future[SessionMessage | None]] = {}
        self._closed = False
        self._idle = LazyDeadline(self._loop, self._idle_expired)

    def take(self, scope: dict, headers: Headers, value: Any) -> Frame | None:
        """The POST as a Frame for the lean path, or None when the SDK transport must answer it.

        `value` is the body as the wire rule parsed it.
        """
        transport = self._transport
        idle = transport.idle_scope
        if self._closed or transport.is_terminated or (idle is not None and idle.cancel_called):
            return None
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None
        if not is_json_content(headers.get("content-type", "")) or not accepts_json(headers.get("accept", "")):
            return None
        frame = frame_of(value)
        if frame is None or frame.method == "initialize":
            return None
        if frame.kind == "request" and id_key(frame.id) in self._waiting:
            return None  # an id still in flight: the SDK's own handling of the clash applies
        # As the transport frames it: the router finds the POST's answer through the request's scope.
        frame.metadata = ServerMessageMetadata(request_context=Request(scope), can_send_request=False)
        return frame

    async def answer(self, frame: Frame, send: Any) -> None:
        """Hand the message to the session; answer the POST with its reply (a request) or 202 (anything else)."""
        inbox = self._inbox
        held = self._hold()
        try:
            if frame.kind != "request":
                await self._respond(send, 202, b"")
                with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    await inbox.send(frame)  # the session ended meanwhile: as the transport drops it then
                return
            key = id_key(frame.id)
            waiter = self._waiting[key] = self._loop.create_future()
            reply: SessionMessage | None = None
            try:
                await inbox.send(frame)
                reply = await waiter
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the session ended before it took the request: answered below as terminated
            finally:
                self._waiting.pop(key, None)
            if reply is None:
                await self._respond(send, 500, _TERMINATED)
                return
            await self._respond(send, 200, dump(reply).rstrip(b"\r\n"))
        finally:
            if held:
                self._release()

    def deliver(self, item: SessionMessage) -> bool:
        """Give a reply to the lean POST waiting for it; False when none is (the transport's streams take it)."""
        if not self._waiting:
            return False
        envelope = envelope_of(item)
        if envelope.kind != "response" and envelope.kind != "error":
            return False
        waiter = self._waiting.pop(id_key(envelope.id), None)
        if waiter is None:
            return False
        if not waiter.done():
            waiter.set_result(item)
        return True

    def close(self) -> None:
        """The session ended: every POST still waiting is answered as the transport answers it then."""
        self._closed = True
        self._idle.cancel()
        for waiter in self._waiting.values():
            if not waiter.done():
                waiter.set_result(None)
        self._waiting.clear()

    async def _respond(self, send: Any, status: int, body: bytes) -> None:
        headers = [*self._headers, (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # A request in flight holds the session: the transport's idle countdown, kept as its handle_request
    # keeps it (its in-flight count shared). Two plain calls around answer()'s body rather than a
    # generator context manager, which cost more than the countdown itself on every POST.

    def _hold(self) -> bool:
        """Count the request in, stopping the countdown; False when the transport keeps none (nothing to release)."""
        transport = self._transport
        idle = transport.idle_scope
        if idle is None or transport._idle_timeout is None:
            return False
        transport._requests_in_flight += 1
        self._idle.clear()
        if idle.deadline != math.inf:  # a countdown the transport started after a request of its own
            idle.deadline = math.inf
        return True

    def _release(self) -> None:
        transport = self._transport
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            self._idle.set(transport._idle_timeout)  # type: ignore[arg-type]

    def _idle_expired(self) -> None:
        """Idle for the timeout since this path's last request: end the session as the transport's countdown would.

        Not while a request is in flight (the transport's own, such as an
        open GET stream), nor when the transport restarted its countdown
        after a request of its own that ended later than ours (its deadline
        is then finite and decides).
        """
        transport = self._transport
        idle = transport.idle_scope
        if idle is not None and not transport._requests_in_flight and idle.deadline == math.inf:
            idle.cancel()
