"""A lean HTTP/1.1 client for the one hot exchange of a Streamable HTTP upstream: a message's POST.

Why not httpx2 here: under concurrency the SDK client's POST path was the
largest share of the gate's CPU (docs/performance.md), spent mostly in
httpx2/httpcore2 layers a relay does not need: the pool calls `has_expired`
on every pooled connection for every request (each call builds anyio's extra
attribute table), and the body passes through four iterator layers. Here a
connection is an `asyncio.Protocol` that feeds h11 as bytes arrive: a dead
keep-alive connection is known the moment its peer closes it (no readability
probe), and a response is one h11 event loop.

Only plain `http://` endpoints with no proxy configured in the environment
take this path (see `eligible`); everything else, and everything but request
POSTs (the GET stream, resumption, redirects, DELETE), stays with the SDK's
transport and httpx2.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import anyio
import h11

CONNECT_TIMEOUT = 30.0  # the SDK's create_mcp_http_client defaults
READ_TIMEOUT = 300.0
MAX_IDLE_SECONDS = 4.0  # below the 5 s keep-alive of uvicorn and node, so an idle connection is never reused as it closes
MAX_IDLE_CONNECTIONS = 128
PAUSE_AT = 1 << 20  # stop reading the socket while this much is buffered and unread


class HTTPError(Exception):
    """The exchange failed below HTTP: the connection could not be made, broke, or timed out."""


def eligible(url: str) -> bool:
    """Whether POSTs to `url` may take the lean path: plain http, and no proxy the environment asks for."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if "http" in proxies or "all" in proxies:
        return bool(urllib.request.proxy_bypass(parts.hostname))
    return True


def _expire(wakeup: asyncio.Future) -> None:
    if not wakeup.done():
        wakeup.set_exception(TimeoutError())


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.eof = False
        self.error: BaseException | None = None
        self.idle_since = 0.0
        self._wakeup: asyncio.Future | None = None
        self._paused = False

    # -- asyncio.Protocol --------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.h11.receive_data(data)
        if len(self.h11.trailing_data[0]) > PAUSE_AT and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self.h11.receive_data(b"")
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    # -- used by the pool and the response ---------------------------------
    def reusable(self) -> bool:
        return (
            not self.lost
            and self.h11.our_state is h11.IDLE
            and self.h11.their_state is h11.IDLE
            and not self.h11.trailing_data[0]  # bytes nobody asked for: the next response would not be ours
            and time.monotonic() - self.idle_since < MAX_IDLE_SECONDS
        )

    async def next_event(self) -> object:
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                if self.eof or self.lost:  # h11's word for a body or head cut short by the peer's close
                    raise HTTPError("the upstream closed the connection mid-response") from exc
                raise HTTPError(f"the upstream broke HTTP/1.1: {exc}") from exc
            if event is not h11.NEED_DATA:
                return event
            if self._paused:
                self._paused = False
                self.transport.resume_reading()
            if self.lost:
                raise HTTPError(f"the upstream closed the connection mid-response ({self.error or 'EOF'})")
            loop = asyncio.get_running_loop()
            self._wakeup = wakeup = loop.create_future()
            # A timer on the future, not a cancel scope: this wait happens two or
            # three times per call, and a scope costs more than the rest of it.
            timer = loop.call_later(READ_TIMEOUT, _expire, wakeup)
            try:
                await wakeup
            except TimeoutError as exc:
                raise HTTPError(f"no data from the upstream for {READ_TIMEOUT:g} s") from exc
            finally:
                timer.cancel()
                self._wakeup = None

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


class Response:
    """One response: status and headers at once, the body as it arrives."""

    def __init__(self, pool: PostPool, conn: _Connection, head: h11.Response) -> None:
        self.status = head.status_code
        headers: dict[str, str] = {}
        for name, value in head.headers:
            key = name.decode("latin-1")
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.headers = headers
        self._pool = pool
        self._conn: _Connection | None = conn

    async def chunks(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while conn is not None:
            event = await conn.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._conn = None
                self._pool.release(conn)
                return
            elif isinstance(event, h11.ConnectionClosed):
                raise HTTPError("the upstream closed the connection mid-response")

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    def close(self) -> None:
        """Abandon the rest of the body; the connection cannot be reused."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class PostPool:
    """Keep-alive connections to one origin, for POSTs to one URL."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or ""
        self._port = parts.port or 80
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host_header = parts.netloc.rpartition("@")[2]
        self._base = {"host": host_header, "user-agent": "mcp-schema-gate", "accept-encoding": "identity"}
        self._base.update({name.lower(): value for name, value in (headers or {}).items()})
        self._idle: list[_Connection] = []
        self._closed = False

    async def post(self, headers: dict[str, str], body: bytes) -> Response:
        """Send a POST and wait for the status and headers of its response."""
        conn = self._take_idle() or await self._connect()
        merged = dict(self._base)
        merged.update({name.lower(): value for name, value in headers.items()})
        merged["content-length"] = str(len(body))
        try:
            request = h11.Request(method="POST", target=self._target, headers=list(merged.items()))
            data = conn.h11.send(request) + conn.h11.send(h11.Data(data=body)) + conn.h11.send(h11.EndOfMessage())
        except h11.LocalProtocolError as exc:  # a header value the caller put CR/LF in
            conn.close()
            raise HTTPError(f"cannot send this request: {exc}") from exc
        conn.transport.write(data)
        try:
            while True:
                try:
                    event = await conn.next_event()
                except HTTPError as exc:
                    if conn.eof or conn.lost:
                        raise HTTPError("the upstream closed the connection without answering") from exc
                    raise
                if isinstance(event, h11.Response):
                    return Response(self, conn, event)
                if isinstance(event, h11.ConnectionClosed):
                    raise HTTPError("the upstream closed the connection without answering")
                # h11.InformationalResponse (1xx): the real one follows
        except BaseException:
            conn.close()
            raise

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable():
                return conn
            conn.close()
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            with anyio.fail_after(CONNECT_TIMEOUT):
                _, conn = await loop.create_connection(_Connection, self._host, self._port)
        except (OSError, TimeoutError) as exc:
            raise HTTPError(f"cannot connect to {self._host}:{self._port}: {exc!r}") from exc
        return conn

    def release(self, conn: _Connection) -> None:
        if self._closed or conn.lost or len(self._idle) >= MAX_IDLE_CONNECTIONS:
            conn.close()
            return
        try:
            conn.h11.start_next_cycle()
        except h11.LocalProtocolError:  # the server asked to close, or spoke HTTP/1.0
            conn.close()
            return
        conn.idle_since = time.monotonic()
        self._idle.append(conn)

    def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
