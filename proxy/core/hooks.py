"""The hooks that put the Catalog and the Gate on the Relay's path.

Everything MCP-specific the proxy intercepts lives here: tools/call (gate),
tools/list results (catalog kept consistent with what the client sees),
notifications/tools/list_changed (refresh first, forward after), the moments
the session starts allowing requests (the proxy's own listing), and request
methods sent as notifications (dropped). Every other message is left to the
relay, which forwards it unchanged.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

import anyio
from mcp.shared.message import SessionMessage
from validator import InputSchemaError

from proxy.core.audit import AuditLog
from proxy.core.catalog import Catalog
from proxy.core.gate import Gate, ListenerCheck, Rejection
from proxy.core.jsonrpc import (
    REQUEST_METHODS,
    Envelope,
    envelope_of,
    error_message,
    modern_envelope,
    result_message,
    validated_copy,
)
from proxy.core.outputs import OutputChecker, Result, summary as output_summary
from proxy.core.relay import Relay, UpstreamError, UpstreamGone
from proxy.metrics import NO_METRICS, NoMetrics

logger = logging.getLogger("mcp-schema-gate")

MAX_PAGES = 1000  # a paginator that never ends must not hang the proxy
# How long a call waits for the revision a list_changed announced before it is
# refused: long enough for a slow server's listing, short of a client's timeout.
STALE_WAIT = 30.0
# An unknown tool name forces a relisting at most this often: a client calling
# unknown tools one at a time must not turn each call into a full listing.
UNKNOWN_REFRESH_INTERVAL = 2.0


class GuardHooks:
    def __init__(self, catalog: Catalog, gate: Gate, audit: AuditLog | None = None,
                 summary: TextIO = sys.stderr, outputs: OutputChecker | None = None,
                 metrics: NoMetrics = NO_METRICS, catalog_ttl: float | None = None) -> None:
        self.catalog = catalog
        self.catalog_ttl = catalog_ttl
        # A shared upstream (sessionless clients): the gate keeps a subscriptions/listen of its own.
        self.watch_changes = False
        self.gate = gate
        self.audit = audit
        self.outputs = outputs  # None: --check-output off
        self.metrics = metrics
        # A forwarded tools/call is remembered on its InFlight entry only when something needs it back.
        self._remember = outputs is not None or metrics.enabled
        self._summary = summary
        self._envelope: dict[str, Any] | None = None  # the client's 2026-07-28 envelope, once seen
        self._handshake = False  # the client chose the initialize handshake: no envelope on our requests
        self._build_started = False
        self._listing: anyio.Event | None = None  # set when the listing in flight is swapped in
        self._last_listed = -UNKNOWN_REFRESH_INTERVAL
        self._calls_answered = 0  # tools/call answered by the upstream since the last listing began
        # Set while a list_changed has announced a revision that is not swapped
        # in yet (`_changes` of them); calls wait for it rather than use the old one.
        self._stale: anyio.Event | None = None
        self._changes = 0

    # ---- client → upstream ------------------------------------------------------

    async def from_client(self, relay: Relay, message: SessionMessage) -> bool:
        inner = envelope_of(message)
        if inner.kind == "request":
            method = inner.method
            if method == "initialize":
                self._handshake, self._envelope = True, None
            envelope = None if self._handshake else modern_envelope(inner.params)
            if envelope is not None:
                self._envelope = envelope
                if method != "server/discover":
                    # A client pinned to 2026-07-28 may never send discover: its
                    # first enveloped request is the sign requests are allowed.
                    self._start_build(relay)
            if method == "tools/call":
                return await self._on_call(relay, message, inner)
            if method == "subscriptions/listen":
                relay.standing(inner.id)  # its answer is the end of the stream: no reason to wait for it at exit
            return False
        if inner.kind == "notification":
            if inner.method == "notifications/initialized":
                await relay.to_upstream(message)  # the upstream must see it before our tools/list
                self._start_build(relay)
                return True
            if inner.method in REQUEST_METHODS:
                self._drop_request_as_notification(inner)
                return True
        return False

    def _drop_request_as_notification(self, notification: Envelope) -> None:
        """A request method without an id: it can get no answer, and a server might still act on it."""
        name = notification.params.get("name") if isinstance(notification.params, dict) else None
        logger.warning("mcp-schema-gate: dropped a %s sent as a notification (no id): a request method "
                       "is never forwarded without an id", notification.method)
        if self.audit is not None:
            self.audit.record(Rejection(name if isinstance(name, str) else None, "notification_request",
                                        f"{notification.method} sent without an id; dropped"), None)

    async def _on_call(self, relay: Relay, message: SessionMessage, request: Envelope) -> bool:
        if self.metrics.enabled and (flight := relay.request(request.id)) is not None:
            flight.seen = time.perf_counter()
        # A listening side's own check of the call (proxy/core/gate.py), in the request's metadata.
        extra = message.metadata if type(message.metadata) is ListenerCheck else None
        if self.catalog.built.is_set() and self._stale is None and not self._expired():
            rejection = self._check(request.params, extra)
            if rejection is None or rejection.kind != "unknown_tool":
                return await self._finish(relay, message, request, rejection)
        # The catalog is not ready, a newer revision is on its way, or the tool
        # is unknown and may deserve a refresh: decide off the pump so other
        # traffic keeps flowing.
        scope = anyio.CancelScope()
        entry = relay.request(request.id)
        if entry is not None:
            entry.deciding = scope
        relay.spawn(self._deferred_call, relay, message, request, extra, scope)
        return True

    async def _deferred_call(self, relay: Relay, message: SessionMessage, request: Envelope,
                             extra: ListenerCheck | None, scope: anyio.CancelScope) -> None:
        with scope:
            rejection = await self._decide(relay, request, extra)
            entry = relay.request(request.id)
            if entry is not None:
                entry.deciding = None
            await self._finish(relay, message, request, rejection)

    async def _decide(self, relay: Relay, request: Envelope, extra: ListenerCheck | None) -> Rejection | None:
        if not self.catalog.built.is_set():
            self._start_build(relay)
            await self.catalog.built.wait()
        if self._expired():
            await self.refresh(relay)
        stale = self._stale
        if stale is not None:
            with anyio.move_on_after(STALE_WAIT):
                await stale.wait()
            if not stale.is_set():
                name = request.params.get("name") if isinstance(request.params, dict) else None
                error = InputSchemaError(
                    "execution_failure",
                    f"the server announced a change to its tools and the new list did not arrive within "
                    f"{STALE_WAIT:g} s, so the call could not be checked against the current schema; retry shortly")
                return Rejection(name if isinstance(name, str) else None, error.kind, error.message, error)
        rejection = self._check(request.params, extra)
        if rejection is not None and rejection.kind == "unknown_tool":
            # A call the upstream ran may have changed its tools; calls the gate
            # refused cannot have, so a stream of unknown names costs one listing.
            recent = anyio.current_time() - self._last_listed < UNKNOWN_REFRESH_INTERVAL
            if not recent or self._calls_answered or self._listing is not None:
                await self.refresh(relay)
                rejection = self._check(request.params, extra)
        return rejection

    def _expired(self) -> bool:
        """The catalog is older than --catalog-ttl (a server that never announces changes may still make them)."""
        ttl = self.catalog_ttl
        return ttl is not None and anyio.current_time() - self._last_listed >= ttl

    def _check(self, params: Any, extra: ListenerCheck | None) -> Rejection | None:
        if not self.metrics.enabled:
            return self.gate.check(params, self.catalog.tools, extra)
        start = time.perf_counter()
        rejection = self.gate.check(params, self.catalog.tools, extra)
        self.metrics.validation_time("arguments", time.perf_counter() - start)
        return rejection

    async def _finish(self, relay: Relay, message: SessionMessage, request: Envelope,
                      rejection: Rejection | None) -> bool:
        """Forward the request exactly as validated (re-serialized from its parsed value), or answer it here."""
        if rejection is None:
            if self._remember:
                self._forwarding(relay, request)
            await relay.to_upstream(validated_copy(message))
            return True
        await self._reject(relay, request, rejection)
        return True

    def _forwarding(self, relay: Relay, request: Envelope) -> None:
        """Note on the request's InFlight entry the tool (as validated) and when it was seen."""
        flight = relay.request(request.id)
        name = request.params.get("name")  # the gate checked params is a dict with a string name
        entry = self.catalog.get(name)
        if flight is None or entry is None or (entry.output_schema is None and not self.metrics.enabled):
            return  # nothing to check at its result, nothing to measure
        label = self.metrics.tool_label(name, self.catalog.tools)
        flight.forwarded = Result(entry, label, flight.seen)
        self.metrics.forwarded(label)

    async def _reject(self, relay: Relay, request: Envelope, rejection: Rejection) -> None:
        if rejection.kind == "unknown_tool" and self.catalog.failure:
            rejection = Rejection(rejection.tool, rejection.kind, f"{rejection.message} ({self.catalog.failure})")
        if self.audit is not None:
            self.audit.record(rejection, request.id)
        if self.metrics.enabled:
            self.metrics.refused(self.metrics.tool_label(rejection.tool, self.catalog.tools), rejection.kind)
        entry = self.catalog.get(rejection.tool) if rejection.tool is not None else None
        output_schema = entry.output_schema if entry is not None else None
        kind, payload = self.gate.reply(rejection, modern=modern_envelope(request.params) is not None,
                                        output_schema=output_schema)
        if kind == "result":
            await relay.answer_here(request.id, result_message(request.id, payload))
        else:
            code, text, data = payload
            await relay.answer_here(request.id, error_message(request.id, code, text, data))

    # ---- upstream → client ------------------------------------------------------

    async def from_upstream(self, relay: Relay, message: SessionMessage) -> bool:
        inner = envelope_of(message)
        if inner.kind == "response":
            request = relay.request(inner.id)
            if request is None:
                return False
            if request.method == "tools/list":
                tools = inner.result.get("tools")
                if isinstance(tools, list):
                    revision = self.catalog.revision
                    self.catalog.merge(tools)
                    self.metrics.catalog_revisions(self.catalog.revision - revision)
                    operator = self.catalog.operator
                    if operator is not None and operator.policy is not None and operator.policy.hide:
                        inner.result["tools"] = [t for t in tools if not (
                            isinstance(t, dict) and isinstance(t.get("name"), str) and operator.hidden(t["name"]))]
                # Re-serialized from the parsed value, so the client is shown
                # exactly the schemas the catalog compiled (a raw line with
                # duplicate keys could read differently in another parser).
                await relay.forward_to_client(validated_copy(message))
                return True
            if request.method == "server/discover":
                self._start_build(relay)
            elif request.method == "tools/call":
                self._calls_answered += 1
                if request.forwarded is not None:  # a call the gate forwarded: check, forward, measure
                    return await request.forwarded.deliver(relay, message, self.outputs, self.metrics)
        elif inner.kind == "error":
            request = relay.request(inner.id)
            if request is not None:
                self.metrics.upstream_error("error_response")
                if request.forwarded is not None:
                    return await request.forwarded.deliver(relay, message, None, self.metrics)
        elif inner.kind == "notification" and inner.method == "notifications/tools/list_changed":
            if self._stale is None:
                self._stale = anyio.Event()
            self._changes += 1
            slot = relay.hold()
            relay.spawn(self._refresh_then_forward, relay, slot, message)
            return True
        return False

    async def _refresh_then_forward(self, relay: Relay, slot: Any, message: SessionMessage) -> None:
        try:
            await self.refresh(relay, force=True)
        finally:
            self._changes -= 1
            if self._changes == 0 and self._stale is not None:
                self._stale.set()
                self._stale = None
            await relay.fill(slot, message)

    # ---- the proxy's own listing ------------------------------------------------

    def _start_build(self, relay: Relay) -> None:
        if not self._build_started:
            self._build_started = True
            relay.spawn(self._build, relay)

    async def _build(self, relay: Relay) -> None:
        await self.refresh(relay, True)
        if self.watch_changes and self._envelope is not None:
            await self._listen_for_changes(relay)

    async def _listen_for_changes(self, relay: Relay) -> None:
        """The gate's own `subscriptions/listen` for tool changes (a shared upstream, see proxy/listen/sessionless.py).

        Sessionless clients come and go, and none need be listening when a
        server changes its tools; the gate hears of it on its own stream and
        relists (from_upstream's list_changed path; the notification itself
        belongs to no client and goes nowhere). An upstream that refuses the
        request offers no such stream: its silent changes are caught by an
        unknown tool's relisting, or --catalog-ttl.
        """
        delay = 1.0
        while relay.upstream_gone is None:
            params = {"notifications": {"toolsListChanged": True}, "_meta": dict(self._envelope or {})}
            try:
                await relay.request_upstream("subscriptions/listen", params, timeout=None)
            except UpstreamError as exc:
                logger.info("mcp-schema-gate: the upstream offers no subscriptions/listen (%s); tool changes it "
                            "makes are caught by an unknown tool's relisting or --catalog-ttl", exc)
                return
            except UpstreamGone:
                return
            # The upstream ended the stream: listen again, and relist, since a change may have slipped between.
            await anyio.sleep(delay)
            delay = min(delay * 2, 60.0)
            await self.refresh(relay, force=True)

    async def refresh(self, relay: Relay, force: bool = False) -> None:
        """List every page and swap the new revision in.

        At most one listing is in flight: a caller that finds one running
        waits for it, unless `force` says the one running may predate the
        change it was told of, in which case it lists again after it.
        """
        while (listing := self._listing) is not None:
            await listing.wait()
            if not force:
                return
        done = self._listing = anyio.Event()
        self._calls_answered = 0
        try:
            tools = await self._list_all(relay)
            before = self._summary_lines() if self.catalog.built.is_set() else None
            self.catalog.replace(tools)
            self.metrics.catalog_revisions(1)
            after = self._summary_lines()
            if after != before:  # the startup summary, and again whenever a relisting changes it
                for line in after:
                    print(line, file=self._summary, flush=True)
        except Exception as exc:
            reason = f"tools/list failed: {exc}"
            print(f"mcp-schema-gate: {reason}; tools/call will be refused", file=self._summary, flush=True)
            self.catalog.fail(reason)
        finally:
            self._last_listed = anyio.current_time()
            self._listing = None
            done.set()

    def _summary_lines(self) -> list[str]:
        lines = self.catalog.summary()
        return lines if self.outputs is None else lines + output_summary(self.catalog.tools)

    async def _list_all(self, relay: Relay) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params: dict[str, Any] = {}
            if self._envelope:
                params["_meta"] = dict(self._envelope)
            if cursor is not None:
                params["cursor"] = cursor
            result = await relay.request_upstream("tools/list", params or None)
            page = result.get("tools")
            if isinstance(page, list):
                tools.extend(page)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                return tools
        raise RuntimeError(f"tools/list did not end after {MAX_PAGES} pages")
