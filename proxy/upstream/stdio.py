"""The upstream side over stdio: the server as a child process.

Our own spawn: the SDK's `stdio_client` puts a reader task, a writer task and
two zero-buffer memory streams between the relay and the pipes (measured in
docs/performance.md). The shutdown is the SDK's: the spec's close-stdin /
wait / SIGTERM / SIGKILL sequence on the child's process group, through
`mcp.os.posix.utilities.terminate_posix_process_tree`. The child gets the
proxy's whole environment (`stdio_client` would pass it almost none) and
writes its stderr to the proxy's stderr.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import TYPE_CHECKING

import anyio
from mcp.os.posix.utilities import terminate_posix_process_tree

from proxy.core.framing import MAX_LINE_BYTES, LineReader, PipeReadStream, PipeWriteStream

if TYPE_CHECKING:
    from proxy.core.catalog import Catalog
    from proxy.core.streams import StreamPair
    from proxy.session import UpstreamSpec

# As in the SDK's stdio_client: time to exit after stdin closes, and after SIGTERM.
EXIT_GRACE_SECONDS = 2.0


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: SIGKILL the child if the proxy itself is killed (SIGKILL leaves no time to shut it down)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class _LineProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's protocol for create_subprocess_exec, with the child's stdout read by a LineReader."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self.stdout is not None:  # no data has arrived yet: swap the reader before any does
            self.stdout = LineReader(MAX_LINE_BYTES)
            self.stdout.set_transport(transport.get_pipe_transport(1))  # type: ignore[attr-defined]


@asynccontextmanager
async def upstream_stdio(command: list[str], cwd: str | None = None) -> AsyncIterator[StreamPair]:
    """Spawn the upstream server; yields (read_stream, write_stream). Its stderr is ours.

    Shutdown follows the MCP spec and the SDK's stdio_client: close its stdin,
    wait, then SIGTERM and SIGKILL the whole process group (it runs in a
    session of its own, so grandchildren such as `npx`'s node go too).
    """
    # asyncio.create_subprocess_exec, spelled out to choose the protocol.
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _LineProtocol(limit=MAX_LINE_BYTES, loop=loop),
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=sys.stderr,
        env=dict(os.environ), cwd=cwd, start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )
    process = asyncio.subprocess.Process(transport, protocol, loop)
    try:
        yield PipeReadStream(process.stdout, None, strict=False), PipeWriteStream(process.stdin, None)
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


def open_stdio(spec: UpstreamSpec, catalog: Catalog) -> AbstractAsyncContextManager[StreamPair]:
    """The upstream of one session (session.UPSTREAMS): its own child process."""
    assert spec.command
    return upstream_stdio(spec.command, cwd=spec.cwd)
