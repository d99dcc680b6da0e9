"""Newline-delimited JSON-RPC over asyncio pipes: the stream pair both stdio sides use.

The SDK's stdio transports put a task and a zero-buffer memory stream between
the pipe and the session for every message; these streams are read and
written from the relay's own tasks instead, and parse ids without the SDK's
losses (see jsonrpc.parse_line). They have the shape of the SDK's streams
(`receive()` / `send()` of `SessionMessage`), so the relay cannot tell them
from any other transport.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
from mcp.shared.message import SessionMessage

from proxy.core.jsonrpc import dump, parse_line

# One JSON-RPC line may carry a whole file (write_file); the asyncio default of
# 64 KiB would abort the session on the first large request.
MAX_LINE_BYTES = 64 * 1024 * 1024


class PipeReadStream:
    """Messages parsed as they are read from a pipe: no reader task, no hand-off.

    Iterated by the relay's pump itself, which saves event-loop passes per
    message over a task plus a memory stream; the read is an asyncio pipe read,
    so cancelling the pump really stops it (stdio_server's blocking read in a
    worker thread would keep the proxy alive after the upstream died).
    """

    def __init__(self, reader: asyncio.StreamReader | None, in_file: Any, *, strict: bool) -> None:
        self._reader = reader
        self._file = in_file
        self._strict = strict  # the client's side: the wire rule applies (jsonrpc.strict_loads)

    async def _read_line(self) -> bytes:
        if self._reader is not None:
            try:
                return await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                return exc.partial  # a last line without a newline, or b"" at EOF
            except (asyncio.LimitOverrunError, ValueError):
                # Over MAX_LINE_BYTES: drop what is buffered and answer like any unreadable frame.
                await self._reader.read(MAX_LINE_BYTES)
                return b"\x00 message too large"
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
        self._file = out_file
        self._lock = anyio.Lock()
        self._closed = False

    async def send(self, message: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        data = dump(message)
        try:
            if self._writer is not None:
                self._writer.write(data)
                await self._writer.drain()
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
