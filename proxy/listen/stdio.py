"""The client side over stdio: this process's stdin and stdout.

Our own reader and writer on fd 0 and fd 1 instead of
`mcp.server.stdio.stdio_server`, because that transport reads stdin in a
worker thread that blocks forever (the proxy could not exit when the upstream
dies), pays a thread hop per line, and parses ids lossily.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio

from proxy.core.framing import LineReader, PipeReadStream, PipeWriteStream
from proxy.core.streams import StreamPair
from proxy.session import GateSettings, UpstreamSpec, run_session


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
    # A character device other than a terminal (/dev/null) cannot be watched
    # by epoll; it is read like a regular file instead.
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


@asynccontextmanager
async def client_stdio(stdin_fd: int = 0, stdout_fd: int = 1) -> AsyncIterator[StreamPair]:
    """Serve the MCP client over this process's stdin/stdout; yields (read_stream, write_stream)."""
    loop = asyncio.get_running_loop()
    in_fd = _claim_fd(stdin_fd, "null")
    out_fd = _claim_fd(stdout_fd, "stderr")
    in_file = os.fdopen(in_fd, "rb", buffering=0)
    out_file = os.fdopen(out_fd, "wb", buffering=0)
    reader: LineReader | None = None
    read_transport: asyncio.BaseTransport | None = None
    if _is_pipe_like(in_fd):
        reader = LineReader()
        read_transport, _ = await loop.connect_read_pipe(lambda: reader, in_file)
    writer: asyncio.StreamWriter | None = None
    if _is_pipe_like(out_fd):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    try:
        yield PipeReadStream(reader, in_file, strict=True), PipeWriteStream(writer, out_file)
    finally:
        if writer is not None:
            # Let replies already written reach the client before the pipe closes.
            with anyio.move_on_after(2, shield=True):
                writer.close()
                with suppress(Exception):
                    await writer.wait_closed()
        # A pipe transport owns its file and closes it; closing the file under
        # a live transport would make the event loop read a dead descriptor.
        if read_transport is not None:
            read_transport.close()
        else:
            with suppress(OSError):
                in_file.close()
        if writer is None:
            with suppress(OSError):
                out_file.close()


async def serve_stdio(listen: None, spec: UpstreamSpec, settings: GateSettings, stop: anyio.Event) -> int:
    """One client on stdin/stdout, one upstream; the exit status says how the session ended."""
    async with client_stdio() as client:
        end = await run_session(client, spec, settings, stop=stop)
    if end.reason and end.reason != "stopped":
        print(f"mcp-schema-gate: exiting: {end.reason}", file=sys.stderr, flush=True)
    return end.status
