"""stdio on both sides of the proxy.

Client side: our own reader/writer on the process's fd 0 and fd 1 instead of
`mcp.server.stdio.stdio_server`, because that transport reads stdin in a worker
thread that blocks forever (the proxy could not exit when the upstream dies),
pays a thread hop per line, and parses ids lossily (see wire.parse_line).
It yields the SDK's stream pair shape, so the relay cannot tell it from any
other transport.

Upstream side: our own spawn, for the same reason of speed: the SDK's
`stdio_client` puts a reader task, a writer task and two zero-buffer memory
streams between the relay and the pipes, which measured about 0.1 ms more per
tools/call round trip (scripts/bench_proxy.py). The shutdown is the SDK's:
the spec's close-stdin / wait / SIGTERM / SIGKILL sequence on the child's
process group, through `mcp.os.posix.utilities.terminate_posix_process_tree`.
The child gets the proxy's whole environment (`stdio_client` would pass it
almost none) and writes its stderr to the proxy's stderr.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from proxy.wire import dump, parse_line

# One JSON-RPC line may carry a whole file (write_file); the asyncio default of
# 64 KiB would abort the session on the first large request.
MAX_LINE_BYTES = 64 * 1024 * 1024
# As in the SDK's stdio_client: time to exit after stdin closes, and after SIGTERM.
EXIT_GRACE_SECONDS = 2.0


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


class _PipeReadStream:
    """Messages parsed as they are read from a pipe: no reader task, no hand-off.

    Iterated by the relay's pump itself, which saves event-loop passes per
    message over a task plus a memory stream; the read is an asyncio pipe read,
    so cancelling the pump really stops it (stdio_server's blocking read in a
    worker thread would keep the proxy alive after the upstream died).
    """

    def __init__(self, reader: asyncio.StreamReader | None, in_file: Any) -> None:
        self._reader = reader
        self._file = in_file

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
            item = parse_line(line)
            if item is not None:
                return item
        raise anyio.EndOfStream

    def __aiter__(self) -> _PipeReadStream:
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


class _PipeWriteStream:
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


@asynccontextmanager
async def client_stdio(stdin_fd: int = 0, stdout_fd: int = 1) -> AsyncIterator[tuple]:
    """Serve the MCP client over this process's stdin/stdout; yields (read_stream, write_stream)."""
    loop = asyncio.get_running_loop()
    in_fd = _claim_fd(stdin_fd, "null")
    out_fd = _claim_fd(stdout_fd, "stderr")
    in_file = os.fdopen(in_fd, "rb", buffering=0)
    out_file = os.fdopen(out_fd, "wb", buffering=0)
    reader: asyncio.StreamReader | None = None
    read_transport: asyncio.BaseTransport | None = None
    if _is_pipe_like(in_fd):
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), in_file)
    writer: asyncio.StreamWriter | None = None
    if _is_pipe_like(out_fd):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    try:
        yield _PipeReadStream(reader, in_file), _PipeWriteStream(writer, out_file)
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


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: SIGKILL the child if the proxy itself is killed (SIGKILL leaves no time to shut it down)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


@asynccontextmanager
async def upstream_stdio(command: list[str], cwd: str | None = None) -> AsyncIterator[tuple]:
    """Spawn the upstream server; yields (read_stream, write_stream). Its stderr is ours.

    Shutdown follows the MCP spec and the SDK's stdio_client: close its stdin,
    wait, then SIGTERM and SIGKILL the whole process group (it runs in a
    session of its own, so grandchildren such as `npx`'s node go too).
    """
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=sys.stderr,
        env=dict(os.environ), cwd=cwd, start_new_session=True, limit=MAX_LINE_BYTES,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )
    try:
        yield _PipeReadStream(process.stdout, None), _PipeWriteStream(process.stdin, None)
    finally:
        with anyio.CancelScope(shield=True):
            with suppress(Exception):
                process.stdin.close()
            # Poll returncode rather than wait(): on 3.11 wait() also waits for
            # pipe EOF, which a grandchild holding the pipe would postpone forever.
            deadline = anyio.current_time() + EXIT_GRACE_SECONDS
            while process.returncode is None and anyio.current_time() < deadline:
                await anyio.sleep(0.01)
            if process.returncode is None:
                await terminate_posix_process_tree(process, EXIT_GRACE_SECONDS)
