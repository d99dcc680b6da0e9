"""Relay: pump JSON-RPC messages between a client transport and an upstream one.

The relay knows JSON-RPC, not MCP tools: it forwards every message unchanged
(the SDK message object that was read is the one written), and offers a hooks
object the chance to consume a message first. It also owns what only a pump
can do correctly: requests of the proxy's own whose replies must not leak,
answering every client request exactly once even when the upstream dies, and
holding back upstream traffic behind a slot so ordering survives an
asynchronous detour (the catalog refresh before a list_changed is forwarded).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from proxy.wire import INTERNAL_ERROR, PARSE_ERROR, WireError, error_message, id_key

logger = logging.getLogger("mcp-schema-gate")

# After the client closes its input, requests it already sent still get their
# answers (a piped batch of requests is a legitimate client) for this long.
DRAIN_TIMEOUT = 10.0
OWN_REQUEST_TIMEOUT = 60.0


class Hooks(Protocol):
    async def from_client(self, relay: Relay, message: SessionMessage) -> bool: ...  # True = consumed
    async def from_upstream(self, relay: Relay, message: SessionMessage) -> bool: ...


class UpstreamError(Exception):
    def __init__(self, error: types.ErrorData) -> None:
        super().__init__(f"{error.message} ({error.code})")
        self.error = error


class UpstreamGone(Exception):
    pass


class _Slot:
    """A place in the upstream→client order, filled now or later."""

    __slots__ = ("message", "ready")

    def __init__(self, message: SessionMessage | None = None, ready: bool = True) -> None:
        self.message = message
        self.ready = ready


class Relay:
    def __init__(self, client: tuple[Any, Any], upstream: tuple[Any, Any], hooks: Hooks | None = None) -> None:
        self._client_read, self._client_write = client
        self._upstream_read, self._upstream_write = upstream
        self._hooks = hooks
        # Client requests not yet answered, by id_key -> the id as sent.
        self._unanswered: dict[tuple[bool, Any], Any] = {}
        # Of those, the standing ones (a stream a request opens, answered only when
        # it ends) do not hold the shutdown drain open; they are still answered if
        # the upstream dies.
        self._standing: set[tuple[bool, Any]] = set()
        self._drained = anyio.Event()
        self._own_prefix = f"mcp-schema-gate-{uuid.uuid4().hex}-"
        self._own_ids = itertools.count(1)
        self._own_waiters: dict[str, list[Any]] = {}  # id -> [event, outcome]
        self._held: deque[_Slot] = deque()
        self._flush_lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self.upstream_gone: str | None = None
        self.client_gone = False

    # ---- services for hooks -------------------------------------------------

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        assert self._tg is not None
        self._tg.start_soon(fn, *args)

    async def to_client(self, message: SessionMessage) -> None:
        """Send a message to the client (a reply of the proxy's own, or a forwarded one)."""
        try:
            await self._client_write.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The client is gone; its input will end too, which ends the session.
            if not self.client_gone:
                self.client_gone = True
                logger.warning("mcp-schema-gate: the client's output is closed; dropping messages for it")
        inner = message.message
        if isinstance(inner, types.JSONRPCResponse | types.JSONRPCError) and inner.id is not None:
            self.forget(inner.id)  # only now: forgetting the last one may end the session

    async def to_upstream(self, message: SessionMessage) -> None:
        try:
            await self._upstream_write.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The upstream is gone; its pump sees the end of its output and then
            # answers every request still waiting, this one included.
            pass

    def forget(self, request_id: Any) -> None:
        """The client request needs no answer any more (answered, or cancelled before forwarding)."""
        key = id_key(request_id)
        self._unanswered.pop(key, None)
        self._standing.discard(key)
        if self._settled():
            self._drained.set()

    def standing(self, request_id: Any) -> None:
        """The client request opens a stream that lasts until either side ends it (see __init__)."""
        self._standing.add(id_key(request_id))
        if self._settled():
            self._drained.set()

    def _settled(self) -> bool:
        return self._unanswered.keys() <= self._standing

    def is_own_id(self, request_id: Any) -> bool:
        return isinstance(request_id, str) and request_id.startswith(self._own_prefix)

    async def request_upstream(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send a request of the proxy's own; its response is never forwarded to the client."""
        if self.upstream_gone:
            raise UpstreamGone(self.upstream_gone)
        request_id = f"{self._own_prefix}{next(self._own_ids)}"
        waiter: list[Any] = [anyio.Event(), None]
        self._own_waiters[request_id] = waiter
        request = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method)
        if params is not None:
            request.params = params
        try:
            await self.to_upstream(SessionMessage(request))
            with anyio.fail_after(OWN_REQUEST_TIMEOUT):
                await waiter[0].wait()
        finally:
            self._own_waiters.pop(request_id, None)
        outcome = waiter[1]
        if isinstance(outcome, types.JSONRPCResponse):
            return outcome.result
        if isinstance(outcome, types.JSONRPCError):
            raise UpstreamError(outcome.error)
        raise UpstreamGone(str(outcome))

    def hold(self) -> _Slot:
        """Reserve the current place in the upstream→client order; later messages queue behind it."""
        slot = _Slot(ready=False)
        self._held.append(slot)
        return slot

    async def fill(self, slot: _Slot, message: SessionMessage | None) -> None:
        slot.message, slot.ready = message, True
        await self._flush()

    # ---- pumps -----------------------------------------------------------------

    async def run(self) -> int:
        """Pump until either side ends. 0: the client left; 1: the upstream went away."""
        status = 0
        async with anyio.create_task_group() as tg:
            self._tg = tg

            async def upstream_side() -> None:
                nonlocal status
                await self._pump_upstream()
                status = 1
                tg.cancel_scope.cancel()

            async def client_side() -> None:
                await self._pump_client()
                # Give requests already sent their answers, then stop.
                with anyio.move_on_after(DRAIN_TIMEOUT):
                    if not self._settled():
                        self._drained = anyio.Event()
                        await self._drained.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(upstream_side)
            tg.start_soon(client_side)
        return status

    async def _pump_client(self) -> None:
        async for item in self._client_read:
            if isinstance(item, Exception):
                await self._answer_bad_frame(item)
                continue
            inner = item.message
            if isinstance(inner, types.JSONRPCRequest):
                self._unanswered[id_key(inner.id)] = inner.id
            elif isinstance(inner, types.JSONRPCNotification) and inner.method == "notifications/cancelled":
                # A cancelled request may legitimately never be answered; do not
                # hold the shutdown drain open for it.
                if isinstance(inner.params, dict) and "requestId" in inner.params:
                    self.forget(inner.params["requestId"])
            if self._hooks is not None and await self._hooks.from_client(self, item):
                continue
            await self.to_upstream(item)

    async def _answer_bad_frame(self, exc: Exception) -> None:
        if isinstance(exc, WireError):
            reply = error_message(exc.reply_id, exc.code, exc.message)
        else:  # what an SDK transport delivers for a line it could not parse
            reply = error_message(None, PARSE_ERROR, f"Parse error: {exc}")
        logger.warning("mcp-schema-gate: answered a malformed client message: %s", reply.message.error.message)
        await self.to_client(reply)

    async def _pump_upstream(self) -> None:
        try:
            async for item in self._upstream_read:
                if isinstance(item, Exception):
                    logger.warning("mcp-schema-gate: dropped an unparseable line from the upstream server: %s", item)
                    continue
                inner = item.message
                if isinstance(inner, types.JSONRPCResponse | types.JSONRPCError):
                    waiter = self._own_waiters.get(inner.id) if isinstance(inner.id, str) else None
                    if waiter is not None:
                        waiter[1] = inner
                        waiter[0].set()
                        continue
                if self._hooks is not None and await self._hooks.from_upstream(self, item):
                    continue
                await self.forward_to_client(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        await self._upstream_ended()

    async def forward_to_client(self, message: SessionMessage) -> None:
        """Forward an upstream message, behind any held slot."""
        if self._held:
            self._held.append(_Slot(message))
            await self._flush()
            return
        await self.to_client(message)

    async def _flush(self) -> None:
        async with self._flush_lock:
            while self._held and self._held[0].ready:
                slot = self._held[0]
                if slot.message is not None:
                    await self.to_client(slot.message)
                self._held.popleft()  # only now, so the pump keeps queueing behind it meanwhile

    async def _upstream_ended(self) -> None:
        self.upstream_gone = "the upstream server closed the connection"
        for waiter in list(self._own_waiters.values()):
            waiter[1] = self.upstream_gone
            waiter[0].set()
        # Whatever was held can no longer be completed; deliver what is ready.
        for slot in self._held:
            slot.ready = True
        await self._flush()
        for request_id in list(self._unanswered.values()):
            await self.to_client(
                error_message(
                request_id, INTERNAL_ERROR, "The upstream MCP server exited before answering this request"
            )
            )
