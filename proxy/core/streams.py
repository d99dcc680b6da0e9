"""The two stream shapes every transport gives the relay, a watching wrapper, and the gate's own in-process hop.

The shapes are the SDK's (`anyio` memory streams of `SessionMessage`, with an
Exception on the read side for a frame that could not be parsed), written as
Protocols so that the proxy's own pipe streams, the SDK's transports and the
wrappers here are interchangeable and checked by type, not by convention.

`mailbox` is the in-process hop the gate creates itself (between the relay
and an HTTP transport, into a shared relay): anyio's memory-stream API,
without anyio's per-item cost (see `mailbox`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, Self, TypeVar, runtime_checkable

import anyio
from mcp.shared.message import SessionMessage


@runtime_checkable
class ReadStream(Protocol):
    """What the relay reads: messages, or an Exception for a frame that could not be parsed."""

    async def receive(self) -> SessionMessage | Exception: ...

    def __aiter__(self) -> Any: ...


@runtime_checkable
class WriteStream(Protocol):
    async def send(self, item: SessionMessage) -> None: ...


StreamPair = tuple[ReadStream, WriteStream]
T = TypeVar("T")


_EMPTY = object()


class _Channel(Generic[T]):
    __slots__ = ("items", "capacity", "receivers", "senders", "send_closed", "receive_closed", "loop")

    def __init__(self, capacity: int) -> None:
        self.items: deque[T] = deque()
        self.capacity = capacity
        self.receivers: deque[asyncio.Future[None]] = deque()  # parked in receive()
        # Parked in send(), each with its item, in the order they came: an item is taken from here
        # in that order, so no sender loses its place to one that came later.
        self.senders: deque[tuple[asyncio.Future[None], T]] = deque()
        self.send_closed = False
        self.receive_closed = False
        # Looked up once, at the first wait: on Python 3.11 every get_running_loop() is a getpid() system call.
        self.loop: asyncio.AbstractEventLoop | None = None

    def get_loop(self) -> asyncio.AbstractEventLoop:
        loop = self.loop
        if loop is None:
            loop = self.loop = asyncio.get_running_loop()
        return loop


def _wake(waiters: deque[asyncio.Future[None]]) -> bool:
    """Wake the first waiter still waiting; False when there was none."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            return True
    return False


def _wake_all(waiters: deque[asyncio.Future[None]]) -> None:
    while _wake(waiters):
        pass


def _next_parked(senders: deque[tuple[asyncio.Future[None], T]]) -> Any:
    """The item of the first sender still parked, which is released as delivered; _EMPTY if none is."""
    while senders:
        waiter, item = senders.popleft()
        if not waiter.done():  # done: cancelled while parked, its item withdrawn
            waiter.set_result(None)
            return item
    return _EMPTY


def _fail_parked(senders: deque[tuple[asyncio.Future[None], Any]], error: type[Exception]) -> None:
    while senders:
        waiter, _ = senders.popleft()
        if not waiter.done():
            waiter.set_exception(error())


class _End:
    """What both ends of a mailbox share: closing, also as an async context manager."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


class MailboxSender(_End, Generic[T]):
    """The sending end of a `mailbox`: anyio's MemoryObjectSendStream API. Any number of tasks may send on it."""

    __slots__ = ("_channel", "_closed")

    def __init__(self, channel: _Channel[T]) -> None:
        self._channel = channel
        self._closed = False

    def send_nowait(self, item: T) -> None:
        """Queue the item for a parked receiver or into free room; WouldBlock when neither exists."""
        channel = self._channel
        if self._closed:
            raise anyio.ClosedResourceError
        if channel.receive_closed:
            raise anyio.BrokenResourceError
        # Free room means no sender is parked: a taken item's room goes to the first parked one.
        if _wake(channel.receivers) or len(channel.items) < channel.capacity:
            # The item goes on the queue even when the receiver it wakes is
            # cancelled before it runs: the next receive() gets it, nothing is lost.
            channel.items.append(item)
            return
        raise anyio.WouldBlock

    async def send(self, item: T) -> None:
        """Queue the item, or wait in line with it until a receiver takes it.

        A parked send is done once its item is taken: if the task is cancelled
        after that, the item is delivered all the same (as with anyio). Cancelled
        while still in line, it withdraws the item.
        """
        try:
            self.send_nowait(item)
            return
        except anyio.WouldBlock:
            pass
        channel = self._channel
        waiter = channel.get_loop().create_future()
        channel.senders.append((waiter, item))
        try:
            await waiter  # raises what closing either end set on it
        finally:
            if not waiter.done():
                waiter.cancel()  # withdrawn: receivers skip it
            elif not waiter.cancelled():
                waiter.exception()  # a closing error counts as seen even when this task was cancelled first

    def close(self) -> None:
        """No more items: receivers get what is queued, then EndOfStream; a send still in line fails as closed."""
        if not self._closed:
            self._closed = True
            self._channel.send_closed = True
            _wake_all(self._channel.receivers)
            _fail_parked(self._channel.senders, anyio.ClosedResourceError)


class MailboxReceiver(_End, Generic[T]):
    """The receiving end of a `mailbox`: anyio's MemoryObjectReceiveStream API, read by one task at a time."""

    __slots__ = ("_channel", "_closed")
    # The SDK's client post_writer runs each message in the sender's context
    # when its stream carries one (a task group and a task per message); the
    # gate's senders set no context variables, so there is none to carry.
    last_context = None

    def __init__(self, channel: _Channel[T]) -> None:
        self._channel = channel
        self._closed = False

    def _take(self) -> Any:
        """The next item, or _EMPTY when there is none yet (no exception on the common, waiting path)."""
        channel = self._channel
        if self._closed:
            raise anyio.ClosedResourceError
        if channel.items:
            item = channel.items.popleft()
            if channel.senders:  # the room just freed goes to the first sender in line
                parked = _next_parked(channel.senders)
                if parked is not _EMPTY:
                    channel.items.append(parked)
            return item
        if channel.senders:
            item = _next_parked(channel.senders)
            if item is not _EMPTY:
                return item
        if channel.send_closed:
            raise anyio.EndOfStream
        return _EMPTY

    def receive_nowait(self) -> T:
        item = self._take()
        if item is _EMPTY:
            raise anyio.WouldBlock
        return item

    async def receive(self) -> T:
        channel = self._channel
        while (item := self._take()) is _EMPTY:
            waiter = channel.get_loop().create_future()
            channel.receivers.append(waiter)
            try:
                await waiter
            finally:
                if not waiter.done():  # cancelled while parked: no wake-up may go to it any more
                    waiter.cancel()
        return item

    def __aiter__(self) -> MailboxReceiver[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Nobody reads any more: queued items are dropped and senders get BrokenResourceError."""
        if not self._closed:
            self._closed = True
            self._channel.receive_closed = True
            self._channel.items.clear()
            _fail_parked(self._channel.senders, anyio.BrokenResourceError)


def mailbox(capacity: int = 0) -> tuple[MailboxSender[Any], MailboxReceiver[Any]]:
    """An in-process stream with anyio's memory-stream API (one end each, no clones), at a fraction of its cost.

    anyio's memory stream takes a checkpoint (a turn of the event loop)
    before every send and every receive, and builds an Event and a waiter
    record per parked receive: about 17 µs per hop on the development
    machine against about 3 µs here (docs/performance.md), paid two to three
    times per relayed call. Here an item goes on a deque and wakes the parked
    receiver's future; nothing yields unless it must wait. `capacity` 0 keeps
    anyio's zero-buffer backpressure: a send waits until a receiver is
    parked. Senders that wait are served first come, first served, each in
    line with its item (as anyio's are): were a woken sender to try again
    and find its room taken, it would go to the back of the line, and under
    load some calls would wait many turns while later ones passed. Items queued for a receiver that is cancelled before it runs stay
    queued for the next receive. The ends behave as anyio's do when closed:
    the receiver gets EndOfStream after the last item, a sender whose
    receiver closed gets BrokenResourceError, and an end used after its own
    close gets ClosedResourceError. Only for code running on asyncio.
    """
    channel: _Channel[Any] = _Channel(capacity)
    return MailboxSender(channel), MailboxReceiver(channel)


class WatchedReader:
    """A read stream that shows each SessionMessage to ``watch`` (an async callable) before passing it on.

    The Streamable HTTP upstream uses it to learn from traffic without
    touching it: the negotiated protocol version for header stamping.
    """

    def __init__(self, inner: ReadStream, watch: Callable[[Any], Awaitable[None]]) -> None:
        self._inner = inner
        self._watch = watch

    def __aiter__(self) -> WatchedReader:
        return self

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        if isinstance(item, SessionMessage):
            await self._watch(item)
        return item

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
