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

- A stream is resumable (`Answer.resume`): a client whose connection
  dropped GETs the rest with Last-Event-ID, as the protocol provides since
  2025-11-25.
- When the reply has not come within STREAM_AFTER seconds, the answer
  becomes an SSE stream anyway, with nothing in it yet: the client gets its
  headers now rather than when a long call ends (Node's fetch gives up
  after 300 s without headers), and a comment every KEEPALIVE seconds keeps
  idle-timeout proxies from cutting the stream.

One lock orders the router's events and the transport's body on the wire.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any
from uuid import uuid4

import anyio

STREAM_AFTER = 1.0
KEEPALIVE = 15.0
RETRY_MS = 2000  # how soon a client that lost a stream should come back for the rest
MAX_LOGGED_BYTES = 4 * 1024 * 1024  # per stream; older events are forgotten (and cannot be resumed) past it
MAX_SESSION_BYTES = 8 * 1024 * 1024  # per session, all streams: the oldest streams are forgotten past it
MAX_STREAMS = 256  # per session: the newest streams stay resumable
SCOPE_KEY = "mcp_schema_gate.answer"  # where the ASGI scope carries a POST's answer, for the router
RESUMABLE_SINCE = "2025-11-25"  # the protocol version that gave clients priming events and resumption
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform"),
                (b"x-accel-buffering", b"no")]


def sse_event(data: bytes, event_id: str | None = None) -> bytes:
    # JSON from model_dump_json has no raw line breaks, so one data line carries it.
    head = b"id: " + event_id.encode() + b"\r\n" if event_id is not None else b""
    return head + b"event: message\r\ndata: " + data + b"\r\n\r\n"


class Streams:
    """One session's answer streams by id, so that a client that lost one can resume it (bounded)."""

    def __init__(self) -> None:
        self._by_id: OrderedDict[str, Answer] = OrderedDict()
        self._bytes = 0

    def add(self, answer: Answer) -> None:
        self._by_id[answer.stream_id] = answer
        while len(self._by_id) > MAX_STREAMS:
            self._forget_oldest()

    def charged(self, size: int) -> None:
        """A stream logged `size` more bytes (negative: it forgot some); the oldest streams go past the budget."""
        self._bytes += size
        while self._bytes > MAX_SESSION_BYTES and len(self._by_id) > 1:
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        _, answer = self._by_id.popitem(last=False)
        self._bytes -= answer.forget_log()

    def find(self, last_event_id: str) -> tuple[Answer, int] | None:
        stream_id, _, seq = last_event_id.partition(":")
        answer = self._by_id.get(stream_id)
        if answer is None or not seq.isdigit():
            return None
        return answer, int(seq)


class Answer:
    """The ASGI `send` of one request POST, which may turn its answer into an SSE stream (module docstring).

    Once streaming, every event carries an id (`<stream>:<n>`) and is kept,
    so a client whose connection dropped can GET the rest with Last-Event-ID
    (`resume`); the stream opens with a priming event (an id and no data), as
    the protocol asks of resumable streams since RESUMABLE_SINCE.
    """

    def __init__(self, send: Any, session_id: str | None, *, resumable: bool = False,
                 streams: Streams | None = None) -> None:
        self._send = send
        self._session_id = session_id  # its header is made only if the answer becomes a stream
        # Uncontended, as on a call that sends nothing but its reply, taking it yields nothing to the loop.
        # asyncio's lock rather than anyio's: anyio's builds a record of its owner task on every
        # acquire, a measurable share of a fast call (docs/performance.md), and Answer runs on asyncio.
        self._lock = asyncio.Lock()
        self.streaming = False
        self.passing = False  # the transport's own answer has begun: nothing else may go on this POST
        self.finished = False
        self._body: list[bytes] = []
        self._stream_id: str | None = None  # made when the answer becomes a stream
        self._resumable = resumable and streams is not None
        self._streams = streams
        self._log: list[tuple[int, bytes]] = []  # (seq, event bytes), oldest first
        self._logged = 0
        self._seq = 0
        self._seq_forgotten = 0  # events up to this one were dropped from the log
        self._followers: list[Any] = []  # sends of GETs that resumed this stream
        self._done: anyio.Event | None = None  # made by the first resumption, which waits for the stream's end
        self._settled = False
        self._settled_event: anyio.Event | None = None  # made once the call is slow: the keep-alive waits on it
        self._slow_timer: asyncio.TimerHandle | None = None
        self._keep_alive_task: asyncio.Task[None] | None = None  # spawned once the call is slow

    def _stream_headers(self) -> list[tuple[bytes, bytes]]:
        # A new list each time: a middleware may add to a response's headers in place.
        session = [(b"mcp-session-id", self._session_id.encode("latin-1"))] if self._session_id else []
        return [*_SSE_HEADERS, *session]

    @property
    def stream_id(self) -> str:
        if self._stream_id is None:
            self._stream_id = uuid4().hex[:16]
        return self._stream_id

    async def _start(self) -> None:
        await self._send({"type": "http.response.start", "status": 200, "headers": self._stream_headers()})
        self.streaming = True
        if self._resumable:
            assert self._streams is not None
            self._streams.add(self)
            priming = b"id: " + f"{self.stream_id}:0".encode() + b"\r\nretry: " + str(RETRY_MS).encode() + \
                b"\r\ndata: \r\n\r\n"
            await self._write(priming)

    async def _write(self, chunk: bytes, more: bool = True) -> None:
        for send in (self._send, *self._followers):
            try:
                await send({"type": "http.response.body", "body": chunk, "more_body": more})
            except OSError:
                pass  # that connection is gone; the event is in the log for a resumption

    async def _emit(self, data: bytes, more: bool = True) -> None:
        if not self._resumable:
            await self._write(sse_event(data), more)
            return
        self._seq += 1
        event = sse_event(data, f"{self.stream_id}:{self._seq}")
        self._log.append((self._seq, event))
        self._logged += len(event)
        dropped = 0
        while self._logged > MAX_LOGGED_BYTES and len(self._log) > 1:
            size = len(self._log.pop(0)[1])
            self._logged -= size
            dropped += size
        if self._streams is not None:
            self._streams.charged(len(event) - dropped)
        await self._write(event, more)

    def forget_log(self) -> int:
        """Drop the kept events (the stream can no longer be resumed); how many bytes that freed."""
        freed, self._logged = self._logged, 0
        self._log.clear()
        self._seq_forgotten = self._seq
        return freed

    def watch(self) -> None:
        """Make the answer a stream if the call still runs after STREAM_AFTER (module docstring), until `close()`.

        A timer until then, not a task: most calls are answered well within
        it, and a task per POST (spawned, woken at the end, its scope torn
        down) was a measurable share of a fast call. The keep-alive that a
        slow call gets is a plain asyncio task that `close()` ends and waits
        for, rather than a member of a task group around every POST, which
        each fast call would pay for and never use.
        """
        self._slow_timer = asyncio.get_running_loop().call_later(STREAM_AFTER, self._spawn_keep_alive)

    def _spawn_keep_alive(self) -> None:
        if not self._settled:
            self._keep_alive_task = asyncio.get_running_loop().create_task(self._keep_alive())

    async def _keep_alive(self) -> None:
        """The call is slow: start the stream, then a comment every KEEPALIVE seconds until `settle()`.

        It ends on the settle event rather than by cancellation: anyio's
        `CancelScope.cancel` formats the calling task's repr.
        """
        self._settled_event = settled = anyio.Event()
        while not self._settled:
            async with self._lock:
                if self.finished or self.passing:
                    return
                if not self.streaming:
                    await self._start()
                await self._write(b": waiting for the reply\r\n\r\n")
            with anyio.move_on_after(KEEPALIVE):
                await settled.wait()

    def settle(self) -> None:
        """The POST's handling is over: no stream is started for it any more, and the keep-alive stops."""
        self._settled = True
        if self._slow_timer is not None:
            self._slow_timer.cancel()
        if self._settled_event is not None:
            self._settled_event.set()

    async def close(self, *, abandoned: bool = False) -> None:
        """`settle()`, then wait until the keep-alive (if the call was slow) has stopped; call it before returning.

        `abandoned`: the POST's handling failed or is being cancelled, so its
        answer may never be complete; the keep-alive is cancelled rather than
        left to write one more comment after the ASGI app has returned.
        Otherwise, a keep-alive that failed has its error raised here, once
        the call is over.
        """
        self.settle()
        task = self._keep_alive_task
        if task is None:
            return
        if abandoned:
            task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait((task,))
        if not abandoned and not task.cancelled() and (error := task.exception()) is not None:
            raise error

    async def start_stream(self) -> None:
        """Answer with an SSE stream now, before any event (a stream that is the answer, like subscriptions/listen)."""
        async with self._lock:
            if not (self.streaming or self.passing or self.finished):
                await self._start()

    async def event(self, data: bytes) -> bool:
        """Write one message of the call on its POST; False when the answer is already complete."""
        async with self._lock:
            if self.finished or self.passing:
                return False
            if not self.streaming:
                await self._start()
            await self._emit(data)
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
            if body:
                await self._emit(body, more=False)
            else:
                await self._write(b"", more=False)
            if self._done is not None:
                self._done.set()

    async def resume(self, after: int, send: Any) -> bool:
        """Serve a GET with Last-Event-ID `<stream>:<after>`: the events since, then the rest as they come.

        False when events after `after` were already forgotten (the log is
        bounded), so the stream cannot be resumed without a gap.
        """
        async with self._lock:
            first = self._log[0][0] if self._log else self._seq_forgotten + 1
            if first > after + 1:
                return False
            await send({"type": "http.response.start", "status": 200, "headers": self._stream_headers()})
            for seq, event in self._log:
                if seq > after:
                    await send({"type": "http.response.body", "body": event, "more_body": True})
            if self.finished:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return True
            self._followers.append(send)
            if self._done is None:
                self._done = anyio.Event()
            done = self._done
        await done.wait()
        return True
