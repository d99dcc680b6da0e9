"""A task per message without anyio's per-task cost, still owned by an anyio task group.

anyio's `TaskGroup.start_soon` gives every task a handle with a cancel scope
of its own, an event, a task-state record and a done callback that walks
them; for the Streamable HTTP upstream, which starts a task per forwarded
request, that was about a tenth of a call's instructions
(docs/performance.md). `Spawner` starts plain asyncio tasks instead, and
keeps the two promises a task group makes about them: they do not outlive
the group (cancelled and awaited when it ends), and a task's failure is the
group's failure (re-raised in the group, which cancels the rest). Only for
code running on asyncio.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

# While the group ends, tasks still running are cancelled again at this
# interval: a task that absorbed one cancellation (a shielded cleanup, say)
# is cancelled again when it next waits, as anyio keeps doing for its own.
RECANCEL_INTERVAL = 0.05


class Spawner:
    """Plain asyncio tasks tied to the task group `run` is started in (see the module docstring)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failed: asyncio.Future[BaseException] | None = None
        self._ended = False

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start this in the owning task group (`tg.start`): until the group ends, start_soon may be called.

        Returns never; raises the first exception a task raised (other than
        its cancellation), so the group fails as it would for a task of its
        own. On the way out every task still running is cancelled and awaited.
        """
        self._loop = asyncio.get_running_loop()
        self._failed = self._loop.create_future()
        task_status.started()
        try:
            raise await self._failed
        finally:
            self._ended = True
            with anyio.CancelScope(shield=True):
                while self._tasks:
                    for task in self._tasks:
                        task.cancel()
                    await asyncio.wait(list(self._tasks), timeout=RECANCEL_INTERVAL)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> asyncio.Task[Any]:
        """Run `fn(*args)` in a task of its own, and return it (cancelling it ends it as the group would).

        Once the group is ending, the task is cancelled before it starts.
        """
        if self._loop is None:
            raise RuntimeError("Spawner.start_soon before Spawner.run was started in a task group")
        task = self._loop.create_task(fn(*args))
        if self._ended:
            task.cancel()  # never runs a line; awaited by no one, as the group has been left
            return task
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        failure = task.exception()
        if failure is not None and self._failed is not None and not self._failed.done():
            self._failed.set_result(failure)
