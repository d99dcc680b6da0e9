"""The two stream shapes every transport gives the relay, and a watching wrapper.

They are the SDK's (`anyio` memory streams of `SessionMessage`, with an
Exception on the read side for a frame that could not be parsed), written as
Protocols so that the proxy's own pipe streams, the SDK's transports and the
wrappers here are interchangeable and checked by type, not by convention.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio
from anyio.streams.memory import MemoryObjectSendStream
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


async def hand_over(stream: MemoryObjectSendStream[T], item: T) -> None:
    """`stream.send(item)`, without a turn of the event loop when a receiver is already waiting.

    anyio's `send` takes a checkpoint (a yield to the event loop) before
    every item; on a hop where the receiving task is already parked, as it is
    on a relay's streams between messages, that is a scheduling round per
    hop that carries nothing. `send_nowait` hands the item straight to the
    waiting receiver (one whose cancellation is pending is skipped), and
    only a stream with nobody waiting falls back to `send`.
    """
    try:
        stream.send_nowait(item)
    except anyio.WouldBlock:
        await stream.send(item)


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
