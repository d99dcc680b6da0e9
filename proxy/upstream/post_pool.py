"""A lean HTTP/1.1 client for the one hot exchange of a Streamable HTTP upstream: a message's POST.

Why not httpx2 here: under concurrency the SDK client's POST path was the
largest share of the gate's CPU (docs/performance.md), spent mostly in
httpx2/httpcore2 layers a relay does not need: the pool calls `has_expired`
on every pooled connection for every request (each call builds anyio's extra
attribute table), and the body passes through four iterator layers. Here a
connection is an `asyncio.Protocol` that feeds httptools (llhttp, the C
parser uvicorn and Node use) as bytes arrive: a dead keep-alive connection is
known the moment its peer closes it (no readability probe), and the parser's
callbacks queue a response's head, body chunks and end for the one reader.
The request is written by hand, after its header names and values pass the
same checks h11 makes, so nothing a caller put in a header can split it.

Only plain `http://` endpoints with no proxy configured in the environment
take this path (see `eligible`); everything else, and everything but request
POSTs (the GET stream, resumption, redirects, DELETE), stays with the SDK's
transport and httpx2.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterator
from urllib.parse import quote, urlsplit

import anyio
import httptools

from proxy.core.deadline import LazyDeadline

CONNECT_TIMEOUT = 30.0  # the SDK's create_mcp_http_client defaults
READ_TIMEOUT = 300.0
MAX_IDLE_SECONDS = 4.0  # below the 5 s keep-alive of uvicorn and node, so an idle connection is never reused as it closes
MAX_IDLE_CONNECTIONS = 128
MAX_CACHED_FIELDS = 256  # checked header lines kept per pool; a session's headers repeat on every POST
PAUSE_AT = 1 << 20  # stop reading the socket while this much is buffered and unread

# RFC 9110 field names and values, as h11 checks them: a value never holds CR, LF or NUL,
# and never starts or ends with whitespace.
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"(?:[\x21-\x7e\x80-\xff]+(?:[ \t]+[\x21-\x7e\x80-\xff]+)*)?")
# What a request target may hold as is; anything else is percent-encoded (UTF-8), as httpx does.
_TARGET_SAFE = "".join(map(chr, range(0x21, 0x7F)))
_END = object()  # the response's body ended


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


def _field(name: str, value: str) -> bytes:
    try:
        raw_name, raw_value = name.encode("ascii"), value.encode("ascii")
    except UnicodeEncodeError as exc:
        raise HTTPError(f"cannot send this request: header {name!r} is not ASCII") from exc
    if not _TOKEN.fullmatch(raw_name) or not _FIELD_VALUE.fullmatch(raw_value):
        raise HTTPError(f"cannot send this request: illegal header name or value for {name!r}")
    return raw_name + b": " + raw_value + b"\r\n"


def _checked_field(name: str, value: str) -> bytes | None:
    try:
        return _field(name, value)
    except HTTPError:
        return None


class _Head:
    __slots__ = ("status", "headers")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.status, self.headers = status, headers


class _Connection(asyncio.Protocol):
    """One keep-alive connection; parser callbacks queue what arrives, one reader at a time takes it."""

    _loop: asyncio.AbstractEventLoop  # set by connection_made, before anything reads or waits
    _read_deadline: LazyDeadline

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.eof = False
        self.error: BaseException | None = None
        self.broken: HTTPError | None = None  # the peer broke HTTP/1.1: nothing more can be read
        self.idle_since = 0.0
        self.keep_alive = True
        self._events: deque[object] = deque()
        self._buffered = 0  # body bytes queued and not yet read
        self._headers: list[tuple[bytes, bytes]] = []
        self._in_message = False
        self._informational = False
        self._close_delimited = False  # a body with neither length nor chunking ends at the peer's close
        self._wakeup: asyncio.Future | None = None
        self._paused = False

    # -- asyncio.Protocol --------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._loop = loop = asyncio.get_running_loop()
        # One lazily moved timer for every wait on this connection: a wait happens two or three
        # times per call, and arming a loop timer for each cost more than the rest of the wait.
        self._read_deadline = LazyDeadline(loop, self._read_timed_out)

    def data_received(self, data: bytes) -> None:
        if self.broken is None:
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                self.broken = HTTPError("the upstream switched protocols on a POST")
            except httptools.HttpParserError as exc:
                self.broken = HTTPError(f"the upstream broke HTTP/1.1: {exc}")
            if self._buffered > PAUSE_AT and not self._paused:
                self._paused = True
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        if self._in_message and self._close_delimited and self.broken is None:
            self._in_message = False
            self.keep_alive = False
            self._events.append(_END)
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.error = exc
        self._wake()
        self._read_deadline.cancel()

    # -- parser callbacks --------------------------------------------------
    def on_message_begin(self) -> None:
        self._in_message = True
        self._headers = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        self._informational = 100 <= status < 200  # a 1xx answer: the real one follows
        if self._informational:
            return
        names = {name for name, _ in self._headers}
        self._close_delimited = (b"content-length" not in names and b"transfer-encoding" not in names
                                 and status not in (204, 304))
        self._events.append(_Head(status, self._headers))

    def on_body(self, body: bytes) -> None:
        self._buffered += len(body)
        self._events.append(bytes(body))

    def on_message_complete(self) -> None:
        self._in_message = False
        if self._informational:
            self._informational = False
            return
        self.keep_alive = self.parser.should_keep_alive()
        self._events.append(_END)

    def _read_timed_out(self) -> None:
        if self._wakeup is not None:
            _expire(self._wakeup)

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    # -- used by the pool and the response ---------------------------------
    def reusable_now(self) -> bool:
        return (
            not self.lost
            and not self.eof
            and self.broken is None
            and self.keep_alive
            and not self._in_message
            and not self._events  # bytes nobody asked for: the next response would not be ours
        )

    def reusable(self) -> bool:
        return self.reusable_now() and time.monotonic() - self.idle_since < MAX_IDLE_SECONDS

    async def next_event(self) -> object:
        """The next of: a `_Head`, a body chunk (bytes), or `_END`."""
        while True:
            if self._events:
                event = self._events.popleft()
                if type(event) is bytes:
                    self._buffered -= len(event)
                return event
            if self.broken is not None:
                raise self.broken
            if self._paused:
                self._paused = False
                self.transport.resume_reading()
            if self.lost or self.eof:
                reason = self.error or "EOF"
                raise HTTPError(f"the upstream closed the connection mid-response ({reason})")
            self._wakeup = wakeup = self._loop.create_future()
            # A deadline that fails the future, not a cancel scope: a scope costs more than the rest of the wait.
            deadline = self._read_deadline
            deadline.set(READ_TIMEOUT)
            try:
                await wakeup
            except TimeoutError as exc:
                raise HTTPError(f"no data from the upstream for {READ_TIMEOUT:g} s") from exc
            finally:
                deadline.clear()
                self._wakeup = None

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


class Response:
    """One response: status and headers at once, the body as it arrives."""

    def __init__(self, pool: PostPool, conn: _Connection, head: _Head) -> None:
        self.status = head.status
        headers: dict[str, str] = {}
        for name, value in head.headers:
            key = name.decode("latin-1")
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.headers = headers
        self._pool = pool
        self._conn: _Connection | None = conn

    async def next_chunk(self) -> bytes | None:
        """The next piece of the body, or None once it has ended (the connection then goes back to the pool)."""
        conn = self._conn
        if conn is None:
            return None
        event = await conn.next_event()
        if event is _END:
            self._conn = None
            self._pool.release(conn)
            return None
        return event  # type: ignore[return-value]

    async def chunks(self) -> AsyncIterator[bytes]:
        while (chunk := await self.next_chunk()) is not None:
            yield chunk

    async def read(self) -> bytes:
        # A loop of its own rather than over chunks(): an async generator is registered with the
        # event loop's finalizer hooks (a weak set entry per generator), which costs more than the
        # rest of reading a one-chunk JSON body.
        chunks: list[bytes] = []
        while (chunk := await self.next_chunk()) is not None:
            chunks.append(chunk)
        return b"".join(chunks)

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
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._target = quote(target, safe=_TARGET_SAFE).encode("ascii")
        host_header = parts.netloc.rpartition("@")[2]
        self._base = {"host": host_header, "user-agent": "mcp-schema-gate", "accept-encoding": "identity"}
        self._base.update({name.lower(): value for name, value in (headers or {}).items()})
        # The request line and the fixed header lines, encoded once. A header that fails its check
        # is None here, and refuses every POST that does not replace it (see post).
        self._request_line = b"POST " + self._target + b" HTTP/1.1\r\n"
        self._base_lines = {name: _checked_field(name, value) for name, value in self._base.items()}
        # Request header lines already checked and encoded, by (name as given, value): the session id,
        # protocol version, content type and accept of one session are the same on every POST.
        self._fields: dict[tuple[str, str], tuple[str, bytes]] = {}
        self._idle: list[_Connection] = []
        self._closed = False

    async def post(self, headers: dict[str, str], body: bytes) -> Response:
        """Send a POST and wait for the status and headers of its response."""
        lines = dict(self._base_lines)
        fields = self._fields
        for item in headers.items():
            cached = fields.get(item)
            if cached is None:
                name = item[0].lower()
                cached = name, _field(name, item[1])  # raises before anything is sent
                if len(fields) >= MAX_CACHED_FIELDS:
                    fields.clear()
                fields[item] = cached
            lines[cached[0]] = cached[1]
        lines["content-length"] = b"content-length: %d\r\n" % len(body)
        if None in lines.values():
            for name, line in lines.items():
                if line is None:
                    _field(name, self._base[name])  # raises: a fixed header no request header replaced
        conn = self._take_idle() or await self._connect()
        conn.transport.write(b"".join([self._request_line, *lines.values(), b"\r\n", body]))
        try:
            try:
                event = await conn.next_event()
            except HTTPError as exc:
                if (conn.eof or conn.lost) and conn.broken is None:
                    raise HTTPError("the upstream closed the connection without answering") from exc
                raise
            assert type(event) is _Head  # the callbacks queue a head before any body, and skip 1xx answers
            return Response(self, conn, event)
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
        if self._closed or not conn.reusable_now() or len(self._idle) >= MAX_IDLE_CONNECTIONS:
            conn.close()  # the server asked to close, spoke HTTP/1.0, or sent more than was asked
            return
        conn.idle_since = time.monotonic()
        self._idle.append(conn)

    def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
