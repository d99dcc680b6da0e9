"""proxy/core/deadline.py: one timer for a deadline moved on every wait, firing only once it has passed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from proxy.core.deadline import LazyDeadline

LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
EPSILON = 1e-9  # loop times are floats: a deadline met exactly can read a hair short after subtraction


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Callable[[Callable[[asyncio.AbstractEventLoop], Coroutine[Any, Any, Any]]], Any]:
    """Run a coroutine function on a fresh loop of each kind the gate runs on (--event-loop)."""

    def run_on(main: Callable[[asyncio.AbstractEventLoop], Coroutine[Any, Any, Any]]) -> Any:
        loop = LOOPS[request.param]()
        try:
            return loop.run_until_complete(main(loop))
        finally:
            loop.close()

    return run_on


class Armed:
    """Counts the timers LazyDeadline arms on a loop: the cost it exists to avoid."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.count = 0
        original = loop.call_at

        def call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            if getattr(callback, "__self__", None).__class__ is LazyDeadline:
                self.count += 1
            return original(when, callback, *args, **kwargs)

        loop.call_at = call_at  # type: ignore[method-assign]


@pytest.mark.parametrize("armed_before", [None, 30.0], ids=["set-once", "moved-earlier-than-the-armed-timer"])
def test_the_callback_runs_once_when_the_deadline_passes_and_not_before(run, armed_before: float | None) -> None:
    async def main(loop: asyncio.AbstractEventLoop) -> tuple[list[float], float]:
        fired: list[float] = []
        deadline = LazyDeadline(loop, lambda: fired.append(loop.time()))
        if armed_before is not None:
            deadline.set(armed_before)  # a timer far out, which the earlier deadline must not wait for
        start = loop.time()
        deadline.set(0.05)
        await asyncio.sleep(0.2)
        return fired, start

    fired, start = run(main)
    assert len(fired) == 1
    assert 0.05 - EPSILON <= fired[0] - start < 1.0


def test_a_deadline_moved_later_on_every_wait_fires_only_after_the_last_one_and_arms_no_timer_per_wait(run) -> None:
    async def main(loop: asyncio.AbstractEventLoop) -> tuple[list[float], float, int]:
        fired: list[float] = []
        deadline = LazyDeadline(loop, lambda: fired.append(loop.time()))
        armed = Armed(loop)
        for _ in range(40):  # 40 short waits of 10 ms each under a 0.5 s deadline: never reached
            deadline.set(0.5)
            await asyncio.sleep(0.01)
            deadline.clear()
        assert fired == []
        last = loop.time()
        deadline.set(0.5)  # the last wait, which nothing ends
        await asyncio.sleep(0.8)
        return fired, last, armed.count

    fired, last, armed = run(main)
    assert len(fired) == 1
    assert fired[0] - last >= 0.5 - EPSILON
    # One timer armed at the first set and re-armed when it fired before the moved deadline (once or
    # twice over 0.4 s of waits, then for the last; each fire perhaps once more if it came a hair
    # early): a timer per wait would be 41.
    assert armed <= 8


def test_a_cleared_or_cancelled_deadline_never_fires(run) -> None:
    async def main(loop: asyncio.AbstractEventLoop) -> list[str]:
        fired: list[str] = []
        cleared = LazyDeadline(loop, lambda: fired.append("cleared"))
        cancelled = LazyDeadline(loop, lambda: fired.append("cancelled"))
        cleared.set(0.02)
        cancelled.set(0.02)
        cleared.clear()
        cancelled.cancel()
        await asyncio.sleep(0.1)
        assert not cleared.pending and not cancelled.pending
        return fired

    assert run(main) == []


def test_a_deadline_set_again_after_it_fired_fires_again(run) -> None:
    async def main(loop: asyncio.AbstractEventLoop) -> int:
        fired: list[float] = []
        deadline = LazyDeadline(loop, lambda: fired.append(loop.time()))
        deadline.set(0.02)
        await asyncio.sleep(0.1)
        deadline.set(0.02)
        await asyncio.sleep(0.1)
        return len(fired)

    assert run(main) == 2
