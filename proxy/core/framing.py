"""Newline-delimited JSON-RPC over asyncio pipes: the stream pair both stdio sides use.

The SDK's stdio transports put a task and a zero-buffer memory stream between
the pipe and the session for every message; these streams are read and
written from the relay's own tasks instead, and parse ids without the SDK's
losses (see jsonrpc.parse_line). What they read is a `jsonrpc.Frame` for the
usual message (no pydantic model), and what they write is the raw line when
the message has one. They have the shape of the SDK's streams
(`receive()` / `send()` of `SessionMessage`), so the relay cannot tell them
from any other transport.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import anyio
from mcp.shared.message import SessionMessage

from proxy.core.jsonrpc import dump, parse_line

# One JSON-RPC line may carry a whole file (write_file); the asyncio default of
# 64 KiB would abort the session on the first large request.
MAX_LINE_BYTES = 64 * 1024 * 1024
TOO_LARGE = b"\x00 message too large"  # stands for a line over MAX_LINE_BYTES: answered as unreadable


class LineReader(asyncio.Protocol):
    """A read pipe's protocol that cuts lines as the bytes arrive, so taking the next line is a deque pop.

    The pipe transport calls it directly (no StreamReaderProtocol and
    StreamReader between them: two more Python calls and a buffer per chunk);
    `next_line` replaces readuntil, which searches and copies a shared buffer
    for every line (see docs/performance.md). A line over the limit is
    replaced by TOO_LARGE and the rest of it, up to its newline, is dropped.
    Reading pauses while more than twice the limit is queued, as
    StreamReader's does.
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._max = limit
        self._lines: deque[bytes] = deque()
        self._queued = 0  # bytes in _lines
        self._partial = bytearray()  # the start of a line whose newline has not arrived
        self._dropping = False  # inside a line over the limit
        self._ended = False
        self._failure: BaseException | None = None
        self._line_waiter: asyncio.Future[None] | None = None
        self._running_loop: asyncio.AbstractEventLoop | None = None
        self._pipe: Any = None
        self._reading_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._pipe = transport

    def data_received(self, data: bytes) -> None:
        if not data:
            return
        size = len(data)
        if data[-1] == 10 and not (self._partial or self._dropping) and size <= self._max and \
                data.find(b"\n") == size - 1:
            self._push(data)  # the usual chunk: exactly one whole line, kept without a copy
            return
        start = 0
        if self._partial or self._dropping:
            newline = data.find(b"\n")
            if newline < 0:
                self._hold(data)
                return
            if self._dropping:
                self._dropping = False
            else:
                self._partial += data[:newline]
                self._push(bytes(self._partial))
                self._partial.clear()
            start = newline + 1
        end = data.rfind(b"\n") + 1
        if end > start:
            for line in data[start:end - 1].split(b"\n"):
                if line:  # a blank line is nothing; b"" is the end of the stream to next_line's caller
                    self._push(line)
        if end < size:
            self._hold(data[max(start, end):])

    def _hold(self, data: bytes) -> None:
        if self._dropping:
            return
        self._partial += data
        if len(self._partial) > self._max:
            self._partial.clear()
            self._dropping = True
            self._push(TOO_LARGE)

    def _push(self, line: bytes) -> None:
        if len(line) > self._max and not line.endswith(b"\n"):
            line = TOO_LARGE
        self._lines.append(line)
        self._queued += len(line)
        self._wake()
        if self._queued > 2 * self._max and self._pipe is not None and not self._reading_paused:
            self._pipe.pause_reading()
            self._reading_paused = True

    def _wake(self) -> None:
        waiter = self._line_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def eof_received(self) -> None:
        self._end()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and not self._ended:
            self._failure = exc
            self._wake()
        self._end()

    def _end(self) -> None:
        if self._ended:
            return
        if self._partial and not self._dropping and self._partial.strip():
            self._push(bytes(self._partial))  # a last line without a newline
            self._partial.clear()
        self._ended = True
        self._wake()

    async def next_line(self) -> bytes:
        """The next line (a whole chunk keeps its newline, a cut one has none), or b"" at the end of the stream."""
        while not self._lines:
            if self._failure is not None:
                raise self._failure
            if self._ended:
                return b""
            if self._running_loop is None:  # looked up once: on 3.11 each lookup costs a getpid() system call
                self._running_loop = asyncio.get_running_loop()
            self._line_waiter = self._running_loop.create_future()
            try:
                await self._line_waiter
            finally:
                self._line_waiter = None
        line = self._lines.popleft()
        self._queued -= len(line)
        if self._reading_paused and self._queued <= self._max:
            self._reading_paused = False
            self._pipe.resume_reading()
        return line


class PipeReadStream:
    """Messages parsed as they are read from a pipe: no reader task, no hand-off.

    Iterated by the relay's pump itself, which saves event-loop passes per
    message over a task plus a memory stream; the read is an asyncio pipe read,
    so cancelling the pump really stops it (stdio_server's blocking read in a
    worker thread would keep the proxy alive after the upstream died).
    """

    def __init__(self, reader: LineReader | None, in_file: Any, *, strict: bool) -> None:
        self._reader = reader
        self._file = in_file
        self._strict = strict  # the client's side: the wire rule applies (jsonrpc.strict_loads)

    async def _read_line(self) -> bytes:
        if self._reader is not None:
            return await self._reader.next_line()
        # A regular file (`< requests.jsonl`) cannot block forever, so a thread is fine.
        return await anyio.to_thread.run_sync(self._file.readline)

    async def receive(self) -> SessionMessage | Exception:
        while line := await self._read_line():
            item = parse_line(line, strict=self._strict)
            if item is not None:
                return item
        raise anyio.EndOfStream

    def __aiter__(self) -> PipeReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        reader = self._reader
        if reader is not None:  # receive() without its layers: this runs for every message
            while line := await reader.next_line():
                item = parse_line(line, strict=self._strict)
                if item is not None:
                    return item
            raise StopAsyncIteration
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


class PipeWriteStream:
    """Writes each message as one line, directly from the sending task.

    One write() call per line, so concurrent senders can never interleave
    bytes of two messages.
    """

    def __init__(self, writer: asyncio.StreamWriter | None, out_file: Any) -> None:
        self._writer = writer
        # Written to directly: StreamWriter.write only forwards to it, a Python call per message.
        self._transport = writer.transport if writer is not None else None
        self._file = out_file
        self._lock = anyio.Lock()
        self._closed = False

    async def send(self, message: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        data = dump(message)
        try:
            transport = self._transport
            if transport is not None:
                transport.write(data)
                # drain() only waits when the pipe is full or closing; skipping the call otherwise saves a
                # coroutine per message.
                if transport.is_closing() or transport.get_write_buffer_size():
                    await self._writer.drain()  # type: ignore[union-attr]
            else:
                async with self._lock:
                    await anyio.to_thread.run_sync(self._file.write, data)
        except (OSError, RuntimeError) as exc:  # the peer is gone (EPIPE, connection lost)
            self._closed = True
            raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True
