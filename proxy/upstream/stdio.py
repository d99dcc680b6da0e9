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


@asynccontextmanager
async def upstream_stdio(command: list[str], cwd: str | None = None) -> AsyncIterator[StreamPair]:
    """Spawn the upstream server; yields (read_stream, write_stream). Its stderr is ours.

    Shutdown follows the MCP spec and the SDK's stdio_client: close its stdin,
    wait, then SIGTERM and SIGKILL the whole process group (it runs in a
    session of its own, so grandchildren such as `npx`'s node go too).

    The pipes are our own, read and written as plain asyncio pipes (as the
    client's side is): asyncio's subprocess pipes hand every chunk read to
    their protocol through one more event-loop pass (see docs/performance.md).
    """
    loop = asyncio.get_running_loop()
    child_in, to_child = os.pipe()
    from_child, child_out = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=child_in, stdout=child_out, stderr=sys.stderr,
            env=dict(os.environ), cwd=cwd, start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    except BaseException:
        for fd in (to_child, from_child):
            os.close(fd)
        raise
    finally:
        os.close(child_in)  # the child has its copies; ours would keep its stdin from ever ending, its stdout too
        os.close(child_out)
    reader = LineReader(MAX_LINE_BYTES)
    read_transport: asyncio.BaseTransport | None = None
    writer: asyncio.StreamWriter | None = None
    try:
        read_transport, _ = await loop.connect_read_pipe(
            lambda: reader, os.fdopen(from_child, "rb", buffering=0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(to_child, "wb", buffering=0))
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        yield PipeReadStream(reader, None, strict=False), PipeWriteStream(writer, None)
    finally:
        with anyio.CancelScope(shield=True):
            with suppress(Exception):
                if writer is not None:
                    writer.close()  # the child's stdin ends
            # Poll returncode rather than wait(): on 3.11 wait() also waits for
            # pipe EOF, which a grandchild holding the pipe would postpone forever.
            deadline = anyio.current_time() + EXIT_GRACE_SECONDS
            while process.returncode is None and anyio.current_time() < deadline:
                await anyio.sleep(0.01)
            if process.returncode is None:
                await terminate_posix_process_tree(process, EXIT_GRACE_SECONDS)
            if read_transport is not None:
                read_transport.close()


def open_stdio(spec: UpstreamSpec, catalog: Catalog) -> AbstractAsyncContextManager[StreamPair]:
    """The upstream of one session (session.UPSTREAMS): its own child process."""
    assert spec.command
    return upstream_stdio(spec.command, cwd=spec.cwd)
