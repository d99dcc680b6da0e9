"""Relay: pump JSON-RPC messages between a client transport and an upstream one.

The relay knows JSON-RPC, not MCP tools: it forwards every message unchanged
(the message object that was read is the one written), and offers a hooks
object the chance to consume a message first. It also owns what only a pump
can do correctly:

- the one table of client requests in flight (`InFlight` by `id_key`), which
  every way a session can end walks to answer each open request exactly once:
  the upstream's death, a stop (a signal), the drain after the client closed
  its input running out, the end of the session;
- requests of the proxy's own, whose replies must not leak to the client;
- holding back upstream traffic behind a slot so ordering survives an
  asynchronous detour (the catalog refresh before a list_changed is forwarded).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

from proxy.core.jsonrpc import INTERNAL_ERROR, PARSE_ERROR, Envelope, WireError, envelope_of, error_message, id_key
from proxy.core.streams import ReadStream, StreamPair, WriteStream

logger = logging.getLogger("mcp-schema-gate")

# After the client closes its input, requests it already sent still get their
# answers (a piped batch of requests is a legitimate client) for this long.
DRAIN_TIMEOUT = 10.0
OWN_REQUEST_TIMEOUT = 60.0
# Ids the gate answered itself, remembered so that a late cancellation of one
# is not forwarded to an upstream that never saw the request.
ANSWERED_MEMORY = 4096

Key = tuple[bool, Any]
REQUEST_CANCELLED = -32800  # what the SDK's Streamable HTTP server answers a cancelled request with


class Hooks(Protocol):
    async def from_client(self, relay: Relay, message: SessionMessage) -> bool: ...  # True = consumed

    async def from_upstream(self, relay: Relay, message: SessionMessage) -> bool: ...


class UpstreamError(Exception):
    def __init__(self, error: types.ErrorData) -> None:
        super().__init__(f"{error.message} ({error.code})")
        self.error = error


class UpstreamGone(Exception):
    pass


@dataclass(eq=False)
class InFlight:
    """One client request not yet answered, and what the session knows about it."""

    id: Any  # as the client sent it
    method: str
    # A request that opens a stream lasting until either side ends it
    # (subscriptions/listen): answered when the session ends, but it does not
    # hold the exit drain open.
    standing: bool = False
    # The gate is still deciding it (catalog not built, refresh pending):
    # cancelling this scope withdraws it before it was ever forwarded.
    deciding: anyio.CancelScope | None = None
    # The progressToken the client put on it: progress notifications carrying
    # it belong to this request.
    progress_token: Key | None = None
    # Where the request came from, as its transport described it (the
    # SessionMessage's metadata): the HTTP listener finds the request's POST
    # answer there. Opaque to the relay.
    origin: Any = None
    # A tools/call the gate forwarded: what the hooks need back at its result (outputs.Result), when
    # --check-output or metrics want it; and when it was seen (perf_counter), with metrics on.
    forwarded: Any = None
    seen: float = 0.0


class _Slot:
    """A place in the upstream→client order, filled now or later."""

    __slots__ = ("message", "ready")

    def __init__(self, message: SessionMessage | None = None, ready: bool = True) -> None:
        self.message = message
        self.ready = ready


class Relay:
    def __init__(self, client: StreamPair, upstream: StreamPair, hooks: Hooks | None = None, *,
                 drain_timeout: float = DRAIN_TIMEOUT) -> None:
        self._drain_timeout = drain_timeout
        self._client_read: ReadStream = client[0]
        self._client_write: WriteStream = client[1]
        self._upstream_read: ReadStream = upstream[0]
        self._upstream_write: WriteStream = upstream[1]
        self._hooks = hooks
        self.inflight: dict[Key, InFlight] = {}
        self.by_token: dict[Key, InFlight] = {}  # the same entries, by progress token
        self._answered_here: OrderedDict[Key, None] = OrderedDict()
        # Set by a listening side whose transport must answer a cancelled
        # request itself (Streamable HTTP ends its POST with -32800); the
        # upstream's late answer is then dropped.
        self.answer_cancelled = False
        self._cancel_answered: OrderedDict[Key, None] = OrderedDict()
        self._drained = anyio.Event()
        self._draining = False  # the client closed its input: _drained is awaited (checked on every answer)
        self._own_prefix = f"mcp-schema-gate-{uuid.uuid4().hex}-"
        self._own_ids = itertools.count(1)
        self._own_waiters: dict[str, list[Any]] = {}  # id -> [event, outcome]
        self._held: deque[_Slot] = deque()
        self._flush_lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self.upstream_gone: str | None = None
        self.client_gone = False
        self.end_reason: str | None = None  # why the session ended, when the client did not simply leave

    @property
    def hooks(self) -> Hooks | None:
        return self._hooks

    # ---- services for hooks -------------------------------------------------

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        assert self._tg is not None
        self._tg.start_soon(fn, *args)

    def request(self, request_id: Any) -> InFlight | None:
        return self.inflight.get(id_key(request_id))

    async def to_client(self, message: SessionMessage) -> None:
        """Send a message to the client (a reply of the proxy's own, or a forwarded one)."""
        try:
            await self._client_write.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The client is gone; its input will end too, which ends the session.
            if not self.client_gone:
                self.client_gone = True
                logger.warning("mcp-schema-gate: the client's output is closed; dropping messages for it")
        inner = envelope_of(message)
        if (inner.kind == "response" or inner.kind == "error") and inner.id is not None:
            self.forget(inner.id)  # only now: forgetting the last one may end the session

    async def answer_here(self, request_id: Any, reply: SessionMessage) -> None:
        """Answer a client request on the gate's behalf; the upstream never sees it."""
        key = id_key(request_id)
        self._answered_here[key] = None
        if len(self._answered_here) > ANSWERED_MEMORY:
            self._answered_here.popitem(last=False)
        await self.to_client(reply)

    def answered_here(self, request_id: Any) -> bool:
        return id_key(request_id) in self._answered_here

    async def to_upstream(self, message: SessionMessage) -> None:
        try:
            await self._upstream_write.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The upstream is gone; its pump sees the end of its output and then
            # answers every request still waiting, this one included.
            pass

    def forget(self, request_id: Any) -> None:
        """The client request needs no answer any more (answered, or cancelled by the client)."""
        entry = self.inflight.pop(id_key(request_id), None)
        if entry is not None and entry.progress_token is not None:
            self.by_token.pop(entry.progress_token, None)
        if self._draining and self._settled():
            self._drained.set()

    def standing(self, request_id: Any) -> None:
        """The client request opens a stream that lasts until either side ends it (see InFlight)."""
        entry = self.inflight.get(id_key(request_id))
        if entry is not None:
            entry.standing = True
        if self._draining and self._settled():
            self._drained.set()

    def _settled(self) -> bool:
        return all(entry.standing for entry in self.inflight.values())

    def is_own_id(self, request_id: Any) -> bool:
        return isinstance(request_id, str) and request_id.startswith(self._own_prefix)

    async def request_upstream(self, method: str, params: dict[str, Any] | None, *,
                               timeout: float | None = OWN_REQUEST_TIMEOUT) -> dict[str, Any]:
        """Send a request of the proxy's own; its response is never forwarded to the client.

        `timeout` None: a request that stays open as long as the upstream
        wants (the gate's own subscriptions/listen).
        """
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
            with anyio.fail_after(timeout):
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

    async def run(self, stop: anyio.Event | None = None) -> int:
        """Pump until either side ends, or `stop` is set. 0: the client left; 1: the upstream went away.

        Whichever way it ends, every client request still open has had
        exactly one answer by the time this returns.
        """
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
                with anyio.move_on_after(self._drain_timeout):
                    self._draining = True
                    if not self._settled():
                        self._drained = anyio.Event()
                        await self._drained.wait()
                if self.inflight:
                    unanswered = sum(not entry.standing for entry in self.inflight.values())
                    if unanswered:
                        self.end_reason = (f"{unanswered} request(s) still unanswered {self._drain_timeout:g} s "
                                           "after the client closed its input were answered with errors")
                    await self.answer_all(
                        f"The upstream MCP server did not answer within {self._drain_timeout:g} s after the client "
                        "closed its input; the gate is exiting")
                tg.cancel_scope.cancel()

            async def stop_side() -> None:
                assert stop is not None
                await stop.wait()
                self.end_reason = "stopped"
                await self.answer_all("The gate is shutting down; the request was not completed")
                tg.cancel_scope.cancel()

            tg.start_soon(upstream_side)
            tg.start_soon(client_side)
            if stop is not None:
                tg.start_soon(stop_side)
        return status

    async def answer_all(self, reason: str) -> None:
        """Answer every client request still open with an error saying why (shielded: this runs while ending)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            for entry in list(self.inflight.values()):
                if entry.deciding is not None:
                    entry.deciding.cancel()
                await self.to_client(error_message(entry.id, INTERNAL_ERROR, reason))

    async def _pump_client(self) -> None:
        try:
            await self._pump_client_items()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass  # the transport ended the session (a DELETE, a dropped connection): the client left

    async def _pump_client_items(self) -> None:
        async for item in self._client_read:
            if isinstance(item, Exception):
                await self._answer_bad_frame(item)
                continue
            inner = envelope_of(item)
            if inner.kind == "request":
                self._register(inner, item.metadata)
            elif inner.kind == "notification" and inner.method == "notifications/cancelled":
                if isinstance(inner.params, dict) and "requestId" in inner.params and self._cancelled(
                        inner.params["requestId"]):
                    continue
            if self._hooks is not None and await self._hooks.from_client(self, item):
                continue
            await self.to_upstream(item)

    def _register(self, request: Envelope, origin: Any) -> None:
        key = id_key(request.id)
        self._cancel_answered.pop(key, None)  # an id used again is a new request
        entry = InFlight(request.id, request.method, origin=origin)
        meta = request.params.get("_meta") if isinstance(request.params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, str | int) and not isinstance(token, bool):
            entry.progress_token = id_key(token)
            self.by_token[entry.progress_token] = entry
        self.inflight[key] = entry

    def _cancelled(self, request_id: Any) -> bool:
        """The client cancelled a request; True when the upstream must not hear of it.

        A cancelled request may legitimately never be answered, so it no longer
        holds the exit drain open. One the gate answered itself, or is still
        deciding (then withdrawn here), never reached the upstream.
        """
        entry = self.inflight.get(id_key(request_id))
        if entry is not None and entry.deciding is not None:
            self.forget(request_id)
            entry.deciding.cancel()
            return True
        if entry is not None and self.answer_cancelled:
            # Marked now, so that an upstream answer arriving from here on is dropped.
            self._cancel_answered[id_key(entry.id)] = None
            if len(self._cancel_answered) > ANSWERED_MEMORY:
                self._cancel_answered.popitem(last=False)
            self.spawn(self.to_client, error_message(entry.id, REQUEST_CANCELLED, "Request cancelled"))
        else:
            self.forget(request_id)
        return self.answered_here(request_id)

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
                inner = envelope_of(item)
                if inner.kind == "response" or inner.kind == "error":
                    waiter = self._own_waiters.get(inner.id) if isinstance(inner.id, str) else None
                    if waiter is not None:
                        waiter[1] = item.message
                        waiter[0].set()
                        continue
                    if self._cancel_answered.pop(id_key(inner.id), "absent") is None:
                        continue  # the cancellation was answered already
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
        self.end_reason = self.upstream_gone
        for waiter in list(self._own_waiters.values()):
            waiter[1] = self.upstream_gone
            waiter[0].set()
        # Whatever was held can no longer be completed; deliver what is ready.
        for slot in self._held:
            slot.ready = True
        await self._flush()
        await self.answer_all("The upstream MCP server exited before answering this request")
