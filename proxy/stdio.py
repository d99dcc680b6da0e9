"""stdio on both sides of the proxy.

Client side: our own reader/writer on the process's fd 0 and fd 1 instead of
`mcp.server.stdio.stdio_server`, because that transport reads stdin in a worker
thread that blocks forever (the proxy could not exit when the upstream dies),
pays a thread hop per line, and parses ids lossily (see wire.parse_line).
It yields the SDK's stream pair shape, so the relay cannot tell it from any
other transport.

Upstream side: the SDK's `stdio_client` (spawn, pipes, and the spec's
close-stdin / SIGTERM / SIGKILL shutdown of the whole process group), given the
proxy's full environment, since by default it passes the child almost none.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage

from proxy.wire import dump, parse_line

# One JSON-RPC line may carry a whole file (write_file); the asyncio default of
# 64 KiB would abort the session on the first large request.
MAX_LINE_BYTES = 64 * 1024 * 1024


def _claim_fd(fd: int, diversion: str) -> int:
    """Take fd for the protocol and point the original number somewhere harmless.

    Stray writes to stdout (a print in a library, a child that inherits fd 1)
    would corrupt the protocol stream; after this they land on stderr instead.
    """
    private = os.dup(fd)
    if diversion == "stderr":
        os.dup2(2, fd)
    else:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, fd)
        os.close(null)
    os.set_inheritable(private, False)
    return private


def _is_pipe_like(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@asynccontextmanager
async def client_stdio(stdin_fd: int = 0, stdout_fd: int = 1) -> AsyncIterator[tuple]:
    """Serve the MCP client over this process's stdin/stdout; yields (read_stream, write_stream)."""
    loop = asyncio.get_running_loop()
    in_fd = _claim_fd(stdin_fd, "null")
    out_fd = _claim_fd(stdout_fd, "stderr")
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    in_file = os.fdopen(in_fd, "rb", buffering=0)
    out_file = os.fdopen(out_fd, "wb", buffering=0)
    reader: asyncio.StreamReader | None = None
    if _is_pipe_like(in_fd):
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), in_file)
    writer: asyncio.StreamWriter | None = None
    if _is_pipe_like(out_fd):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def read_line() -> bytes:
        if reader is not None:
            try:
                return await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                return exc.partial  # last line without a newline, or b"" at EOF
        # A regular file (`< requests.jsonl`) cannot block forever, so a thread is fine.
        return await anyio.to_thread.run_sync(in_file.readline)

    async def stdin_reader() -> None:
        async with read_send:
            while line := await read_line():
                item = parse_line(line)
                if item is not None:
                    await read_send.send(item)

    writer_done = anyio.Event()

    async def stdout_writer() -> None:
        try:
            await _write_all()
        finally:
            writer_done.set()

    async def _write_all() -> None:
        async with write_recv:
            async for message in write_recv:
                data = (dump(message) + "\n").encode()
                if writer is not None:
                    writer.write(data)
                    await writer.drain()
                else:
                    await anyio.to_thread.run_sync(out_file.write, data)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stdin_reader)
            tg.start_soon(stdout_writer)
            try:
                yield read_recv, write_send
            finally:
                # Let replies already handed over reach the client, then stop;
                # the reader may sit in a read that only EOF would end.
                write_send.close()
                with anyio.move_on_after(2, shield=True):
                    await writer_done.wait()
                tg.cancel_scope.cancel()
    finally:
        if writer is not None:
            with suppress(Exception):
                writer.close()
        with suppress(OSError):
            out_file.close()
        with suppress(OSError):
            in_file.close()


@asynccontextmanager
async def upstream_stdio(command: list[str], cwd: str | None = None) -> AsyncIterator[tuple]:
    """Spawn the upstream server; yields (read_stream, write_stream). Its stderr is ours."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ), cwd=cwd)
    async with stdio_client(params, errlog=sys.stderr) as streams:
        yield streams
