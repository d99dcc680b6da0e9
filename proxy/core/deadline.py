"""A deadline that is set and cleared far more often than it is reached.

A connection waits many times per second for data that comes within
milliseconds, but must give up if it ever waits `timeout` seconds. Arming an
event-loop timer for each wait and cancelling it a moment later costs a
timer object and a heap entry in the loop every time (under uvloop also a
libuv handle opened and closed), which was a few percent of a forwarded
call's instructions (docs/performance.md). `LazyDeadline` keeps one timer:
setting a deadline later than the armed one only records it, and when the
timer fires before the recorded deadline it re-arms itself for that
deadline. The callback runs once the recorded deadline has passed with the
deadline still set, never earlier.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


# uvloop counts time in whole milliseconds and rounds a timer's delay to them, so a timer can fire up
# to half a millisecond before its deadline; re-armed for less than that it would run at once, again
# and again, until the loop's clock moved. Re-arming at least this far ahead lets the clock move first.
MIN_REARM = 0.001


class LazyDeadline:
    """One reusable deadline on one event loop (see the module docstring). Not thread-safe, as the loop is not."""

    __slots__ = ("_loop", "_callback", "_deadline", "_timer", "_timer_at")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        self._loop = loop
        self._callback = callback
        self._deadline: float | None = None  # None: no deadline is set
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0  # when the armed timer fires

    @property
    def pending(self) -> bool:
        return self._deadline is not None

    def set(self, delay: float) -> None:
        """Set the deadline to `delay` seconds from now (moving it if one was set)."""
        deadline = self._loop.time() + delay
        self._deadline = deadline
        if self._timer is None or self._timer_at > deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(deadline, self._fire)
            self._timer_at = deadline

    def clear(self) -> None:
        """No deadline until the next `set`; a timer still armed finds nothing to do when it fires."""
        self._deadline = None

    def cancel(self) -> None:
        """Clear the deadline and release the timer (the owner is done for good)."""
        self._deadline = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None:
            return
        if self._loop.time() >= deadline:
            self._deadline = None
            self._callback()
        else:  # moved later since the timer was armed, or the timer fired a hair early (below)
            at = max(deadline, self._loop.time() + MIN_REARM)
            self._timer = self._loop.call_at(at, self._fire)
            self._timer_at = at
