"""Many independent clients on one relay: the client side of a shared upstream, with ids multiplexed.

At 2026-07-28 every request is self-contained, so one upstream (one
long-lived stdio child, or one Streamable HTTP client) can serve every
sessionless client. A `Relay` still wants one client stream pair; the
`Multiplexer` is that pair. Each client request goes in under an id of the
multiplexer's own, so two clients that both send id 1 (they all do) never
share a slot, and comes back out under the id its client sent. What a
client sent that the upstream echoes back to pick out its traffic is
renamed the same way: the request's `progressToken` (progress
notifications carry it) and, for `subscriptions/listen`, the request id the
upstream stamps on every event as the subscription id.

A message from the upstream reaches a client only when it can be traced to
one of that client's requests: its reply, a notification the upstream
transport tagged with the request it arrived for (a Streamable HTTP POST's
stream), a progress notification by its token, a subscription event by its
subscription id. Anything else is dropped, so no client can see another's
traffic.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from proxy.core.gate import ListenerCheck
from proxy.core.jsonrpc import Envelope, Frame, envelope_of
from proxy.core.streams import StreamPair, mailbox

logger = logging.getLogger("mcp-schema-gate")

SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"

# The reply to one request, under the client's id: a Frame when the upstream's reply was one (no SDK
# model built for it), else the SDK model in a SessionMessage.
Reply = SessionMessage
EventSink = Callable[[SessionMessage], Awaitable[None]]


class Exchange:
    """One client request in flight through the shared relay."""

    __slots__ = ("client_id", "upstream_id", "token", "client_token", "on_event", "reply", "done")

    def __init__(self, client_id: Any, upstream_id: int, on_event: EventSink | None) -> None:
        self.client_id = client_id
        self.upstream_id = upstream_id
        self.token: int | None = None  # the progress token the upstream sees
        self.client_token: Any = None  # the one the client chose
        self.on_event = on_event
        self.reply: Reply | None = None
        # asyncio's event rather than anyio's, which wraps one and adds a checkpoint and
        # cancel-scope bookkeeping to every wait: one per request, on the gate's asyncio loop.
        self.done = asyncio.Event()


class Withdrawn(Exception):
    """The exchange was withdrawn before its reply: its client went away, and the upstream was told."""


class Withdrawal:
    """How another task withdraws one exchange (a sessionless client closing its POST).

    Explicit rather than a cancel scope around the exchange: nothing but the
    wait for the reply needs stopping, and a scope costs the caller more
    than the rest of the withdrawal machinery on every request.
    """

    __slots__ = ("_entry", "called")

    def __init__(self) -> None:
        self._entry: Exchange | None = None
        self.called = False

    def withdraw(self) -> None:
        self.called = True
        if self._entry is not None:
            self._entry.done.set()  # with no reply: exchange() tells the upstream and raises Withdrawn


class _Writer:
    def __init__(self, mux: Multiplexer) -> None:
        self._mux = mux

    async def send(self, item: SessionMessage) -> None:
        await self._mux.deliver(item)


class Multiplexer:
    """The stream pair a shared relay sees as its one client (see the module docstring)."""

    def __init__(self) -> None:
        send, receive = mailbox()
        self._send = send
        self.streams: StreamPair = (receive, _Writer(self))
        self._ids = itertools.count(1)
        self._by_id: dict[int, Exchange] = {}
        self._by_token: dict[int, Exchange] = {}
        self.dropped = 0  # upstream messages no client could be found for

    @property
    def open_exchanges(self) -> int:
        return len(self._by_id)

    async def exchange(self, request: Envelope, on_event: EventSink | None = None,
                       check: ListenerCheck | None = None, withdrawal: Withdrawal | None = None) -> Reply:
        """Send one client request through the relay and return its reply, under the client's own id.

        `on_event` is shown every upstream message that belongs to the
        request before its reply (progress, a log message, subscription
        events), already renamed back to the client's names. `check` goes
        with a tools/call for the hooks to run where the gate decides it.
        `withdrawal.withdraw()`, or cancelling the caller, withdraws the
        request: the relay is told as if the client had sent
        notifications/cancelled (and the former raises Withdrawn here).
        """
        if withdrawal is not None and withdrawal.called:
            raise Withdrawn
        upstream_id = next(self._ids)
        entry = Exchange(request.id, upstream_id, on_event)
        if withdrawal is not None:
            withdrawal._entry = entry
        params = request.params
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            entry.client_token = meta["progressToken"]
            entry.token = upstream_id
            params = {**params, "_meta": {**meta, "progressToken": upstream_id}}
            self._by_token[upstream_id] = entry
        self._by_id[upstream_id] = entry
        # A Frame, as a pipe transport delivers: the relay and an upstream read it without an SDK model.
        renamed = {"jsonrpc": "2.0", "id": upstream_id, "method": request.method}
        if params is not None:
            renamed["params"] = params
        try:
            await self._send.send(Frame("request", renamed, metadata=check))
            await entry.done.wait()
            if entry.reply is None:
                raise Withdrawn
        except BaseException:
            if entry.reply is None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    await self._cancel(upstream_id)
            raise
        finally:
            self._forget(entry)
        return entry.reply

    async def _cancel(self, upstream_id: int) -> None:
        cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": upstream_id, "reason": "the client went away"}}
        try:
            await self._send.send(Frame("notification", cancelled))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _forget(self, entry: Exchange) -> None:
        self._by_id.pop(entry.upstream_id, None)
        if entry.token is not None:
            self._by_token.pop(entry.token, None)

    async def close(self) -> None:
        """No more requests: the shared relay's client side ends (it drains what is open, then stops)."""
        await self._send.aclose()

    # ---- what the relay writes to its "client" ---------------------------------------

    async def deliver(self, item: SessionMessage) -> None:
        envelope = envelope_of(item)
        if envelope.kind == "response" or envelope.kind == "error":
            entry = self._by_id.get(envelope.id) if _is_int(envelope.id) else None
            if entry is None or entry.done.is_set():
                return  # withdrawn already, or the relay's -32800 after a cancellation
            if type(item) is Frame:
                entry.reply = Frame(envelope.kind, {**item.value, "id": entry.client_id})  # no raw: the id changed
            else:
                entry.reply = SessionMessage(item.message.model_copy(update={"id": entry.client_id}))
            entry.done.set()
            return
        message = item.message
        entry = self._owner(item)
        if entry is None or entry.on_event is None or entry.done.is_set():
            self.dropped += 1
            logger.debug("mcp-schema-gate: dropped an upstream %s that belongs to no open sessionless request",
                         getattr(message, "method", "message"))
            return
        await entry.on_event(SessionMessage(self._renamed(message, entry)))

    def _owner(self, item: SessionMessage) -> Exchange | None:
        metadata = item.metadata
        if isinstance(metadata, ServerMessageMetadata) and _is_int(metadata.related_request_id):
            entry = self._by_id.get(metadata.related_request_id)  # type: ignore[arg-type]
            if entry is not None:
                return entry
        message = item.message
        if not isinstance(message, types.JSONRPCNotification) or not isinstance(message.params, dict):
            return None  # a server-to-client request: 2026-07-28 has none, and no client could answer it here
        params = message.params
        if message.method == "notifications/progress" and _is_int(token := params.get("progressToken")):
            return self._by_token.get(token)
        meta = params.get("_meta")
        if isinstance(meta, dict) and _is_int(subscription := meta.get(SUBSCRIPTION_ID_META_KEY)):
            return self._by_id.get(subscription)
        return None

    @staticmethod
    def _renamed(message: Any, entry: Exchange) -> Any:
        """The message with the names the client chose put back."""
        if not isinstance(message, types.JSONRPCNotification) or not isinstance(message.params, dict):
            return message
        params = dict(message.params)
        if entry.token is not None and params.get("progressToken") == entry.token:
            params["progressToken"] = entry.client_token
        meta = params.get("_meta")
        if isinstance(meta, dict) and meta.get(SUBSCRIPTION_ID_META_KEY) == entry.upstream_id:
            params["_meta"] = {**meta, SUBSCRIPTION_ID_META_KEY: entry.client_id}
        return message.model_copy(update={"params": params})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)

