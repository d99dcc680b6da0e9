"""proxy/core/tasks.py: plain asyncio tasks that keep a task group's promises."""

from __future__ import annotations

import asyncio
import warnings

import anyio
import pytest

from proxy.core.tasks import Spawner


async def test_tasks_still_running_when_the_group_is_cancelled_are_cancelled_and_awaited_before_it_exits() -> None:
    events: list[str] = []

    async def worker(name: str) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            await asyncio.sleep(0)  # cleanup that itself waits: the group must wait for it
            events.append(name)

    async with anyio.create_task_group() as tg:
        spawner = Spawner()
        await tg.start(spawner.run)
        spawner.start_soon(worker, "a")
        spawner.start_soon(worker, "b")
        await asyncio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert sorted(events) == ["a", "b"]


async def test_a_task_that_fails_fails_the_group_and_its_siblings_are_cancelled() -> None:
    cancelled: list[str] = []

    async def sibling() -> None:
        try:
            await anyio.sleep_forever()
        except asyncio.CancelledError:
            cancelled.append("sibling")
            raise

    async def failing() -> None:
        await asyncio.sleep(0)
        raise LookupError("boom")

    with pytest.raises(BaseExceptionGroup) as caught, anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            spawner = Spawner()
            await tg.start(spawner.run)
            spawner.start_soon(sibling)
            spawner.start_soon(failing)
            tg.start_soon(anyio.sleep_forever)  # a task of the group's own is cancelled too
    assert caught.group_contains(LookupError, match="boom")
    assert cancelled == ["sibling"]


async def test_a_task_that_absorbs_a_cancellation_is_cancelled_again_until_it_ends() -> None:
    absorbed: list[int] = []

    async def stubborn() -> None:
        for _ in range(3):
            try:
                await asyncio.sleep(2)  # without a repeated cancellation each wait would run its course
            except asyncio.CancelledError:
                absorbed.append(1)  # swallowed: only a cancellation repeated later ends it

    async with anyio.create_task_group() as tg:
        spawner = Spawner()
        await tg.start(spawner.run)
        spawner.start_soon(stubborn)
        await asyncio.sleep(0.01)
        began = anyio.current_time()
        tg.cancel_scope.cancel()
    assert len(absorbed) == 3
    assert anyio.current_time() - began < 1.0


async def test_a_task_started_after_the_group_ended_never_runs_and_leaves_no_unawaited_coroutine() -> None:
    ran: list[str] = []

    async def late() -> None:
        ran.append("late")

    async with anyio.create_task_group() as tg:
        spawner = Spawner()
        await tg.start(spawner.run)
        tg.cancel_scope.cancel()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spawner.start_soon(late)
        await asyncio.sleep(0.01)
    assert ran == []
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_start_soon_before_run_is_a_clear_error() -> None:
    async def nothing() -> None:
        pass

    with pytest.raises(RuntimeError, match="before Spawner.run"):
        Spawner().start_soon(nothing)
