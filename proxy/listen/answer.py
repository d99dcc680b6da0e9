"""The answer to one Streamable HTTP request POST: one JSON body, or an SSE stream when the call needs one.

The specification lets a server answer each request POST either way, and
clients must accept both. The SDK's server transport decides per transport
(`is_json_response_enabled`), before anything is known about the call. Its
SSE answer costs much more than its JSON one (docs/performance.md): the SDK's
own server serves far more calls per second with JSON bodies. Most calls
produce nothing but their reply, so the gate decides per call, when it
knows:

- The transport runs in JSON mode. Its JSON body passes through the wrapped
  ASGI `send` unchanged when nothing else was sent for the call.
- When a message belonging to the call (progress, a log message, a
  server-to-client request) arrives before the reply, `StreamRouter` hands it
  to `event()`. That starts an SSE response on the POST and writes it there,
  and every later one goes the same way. When the transport's JSON body for
  the reply finally comes through `send`, it becomes the last event of the
  stream, and the stream ends.

- When the reply has not come within STREAM_AFTER seconds, the answer
  becomes an SSE stream anyway, with nothing in it yet: the client gets its
  headers now rather than when a long call ends (Node's fetch gives up
  after 300 s without headers), and a comment every KEEPALIVE seconds keeps
  idle-timeout proxies from cutting the stream.

One lock orders the router's events and the transport's body on the wire.
"""

from __future__ import annotations

from typing import Any

import anyio

STREAM_AFTER = 1.0
KEEPALIVE = 15.0
SCOPE_KEY = "mcp_schema_gate.answer"  # where the ASGI scope carries a POST's answer, for the router
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform"),
                (b"x-accel-buffering", b"no")]


def sse_event(data: bytes) -> bytes:
    # JSON from model_dump_json has no raw line breaks, so one data line carries it.
    return b"event: message\r\ndata: " + data + b"\r\n\r\n"


class Answer:
    """The ASGI `send` of one request POST, which may turn its answer into an SSE stream (module docstring)."""

    def __init__(self, send: Any, session_id: str | None) -> None:
        self._send = send
        self._headers = list(_SSE_HEADERS)
        if session_id:
            self._headers.append((b"mcp-session-id", session_id.encode("latin-1")))
        self._lock = anyio.Lock()
        self.streaming = False
        self.passing = False  # the transport's own answer has begun: nothing else may go on this POST
        self.finished = False
        self._body: list[bytes] = []

    async def stream_when_slow(self) -> None:
        """Run beside the transport's handling of the POST (see the module docstring); cancelled when it ends."""
        await anyio.sleep(STREAM_AFTER)
        while True:
            async with self._lock:
                if self.finished or self.passing:
                    return
                if not self.streaming:
                    await self._send({"type": "http.response.start", "status": 200, "headers": self._headers})
                    self.streaming = True
                await self._send({"type": "http.response.body", "body": b": waiting for the reply\r\n\r\n",
                                  "more_body": True})
            await anyio.sleep(KEEPALIVE)

    async def event(self, data: bytes) -> bool:
        """Write one message of the call on its POST; False when the answer is already complete."""
        async with self._lock:
            if self.finished or self.passing:
                return False
            if not self.streaming:
                await self._send({"type": "http.response.start", "status": 200, "headers": self._headers})
                self.streaming = True
            await self._send({"type": "http.response.body", "body": sse_event(data), "more_body": True})
            return True

    async def send(self, message: dict) -> None:
        """The transport's own ASGI send: its JSON answer, passed through or made the stream's last event."""
        async with self._lock:
            if not self.streaming:
                self.passing = True
                await self._send(message)
                return
            if message["type"] != "http.response.body":
                return  # the JSON answer's status line and headers: the stream's went out already
            self._body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            self.finished = True
            body = b"".join(self._body).strip()
            await self._send({"type": "http.response.body", "body": sse_event(body) if body else b"",
                              "more_body": False})
