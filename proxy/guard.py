"""The hooks that put the Catalog and the Gate on the Relay's path.

Everything MCP-specific the proxy intercepts lives here: tools/call (gate),
tools/list results (catalog kept consistent with what the client sees),
notifications/tools/list_changed (refresh first, forward after), the moments
the session starts allowing requests (the proxy's own listing), and
cancellations of calls the gate already answered. Every other message is left
to the relay, which forwards it unchanged.
"""

from __future__ import annotations

import logging
import sys
from collections import OrderedDict
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from proxy.catalog import Catalog
from proxy.gate import AuditLog, Gate, Rejection
from proxy.relay import Relay
from proxy.wire import error_message, id_key, modern_envelope, result_message

logger = logging.getLogger("mcp-schema-gate")

MAX_PAGES = 1000  # a paginator that never ends must not hang the proxy
ANSWERED_MEMORY = 4096  # how many gate-answered ids to remember for late cancellations


class GuardHooks:
    def __init__(self, catalog: Catalog, gate: Gate, audit: AuditLog | None = None, summary=sys.stderr) -> None:
        self.catalog = catalog
        self.gate = gate
        self.audit = audit
        self._summary = summary
        self._envelope: dict[str, Any] | None = None  # the client's 2026-07-28 envelope, once seen
        self._build_started = False
        self._refresh_lock = anyio.Lock()
        self._refresh_done: anyio.Event | None = None
        self._discover_ids: set[tuple[bool, Any]] = set()
        self._list_ids: set[tuple[bool, Any]] = set()
        self._deferred: dict[tuple[bool, Any], anyio.CancelScope] = {}
        self._answered: OrderedDict[tuple[bool, Any], None] = OrderedDict()

    # ---- client → upstream ------------------------------------------------------

    async def from_client(self, relay: Relay, message: SessionMessage) -> bool:
        inner = message.message
        if isinstance(inner, types.JSONRPCRequest):
            envelope = modern_envelope(inner.params)
            if envelope is not None:
                self._envelope = envelope
            method = inner.method
            if method == "server/discover":
                self._discover_ids.add(id_key(inner.id))  # its success starts the listing
            elif envelope is not None:
                # A client pinned to 2026-07-28 may never send discover: its
                # first enveloped request is the sign requests are allowed.
                self._start_build(relay)
            if method == "tools/call":
                return await self._on_call(relay, inner)
            if method == "tools/list":
                self._list_ids.add(id_key(inner.id))
            elif method == "subscriptions/listen":
                relay.standing(inner.id)  # its answer is the end of the stream: no reason to wait for it at exit
            return False
        if isinstance(inner, types.JSONRPCNotification):
            if inner.method == "notifications/initialized":
                await relay.to_upstream(message)  # the upstream must see it before our tools/list
                self._start_build(relay)
                return True
            if inner.method == "notifications/cancelled":
                return self._on_cancelled(relay, inner)
        return False

    async def _on_call(self, relay: Relay, request: types.JSONRPCRequest) -> bool:
        if self.catalog.built.is_set():
            rejection = self.gate.check(request.params, self.catalog.tools)
            if rejection is None or rejection.kind != "unknown_tool":
                return await self._finish(relay, request, rejection)
        # The catalog is not ready, or the tool is unknown and deserves one
        # refresh: decide off the pump so other traffic keeps flowing.
        key = id_key(request.id)
        scope = anyio.CancelScope()
        self._deferred[key] = scope
        relay.spawn(self._deferred_call, relay, request, scope)
        return True

    async def _deferred_call(self, relay: Relay, request: types.JSONRPCRequest, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                if not self.catalog.built.is_set():
                    self._start_build(relay)
                    await self.catalog.built.wait()
                rejection = self.gate.check(request.params, self.catalog.tools)
                if rejection is not None and rejection.kind == "unknown_tool":
                    await self.refresh(relay)
                    rejection = self.gate.check(request.params, self.catalog.tools)
                await self._finish(relay, request, rejection)
        finally:
            self._deferred.pop(id_key(request.id), None)
        if scope.cancelled_caught:
            relay.forget(request.id)  # the client cancelled it before it was ever forwarded

    async def _finish(self, relay: Relay, request: types.JSONRPCRequest, rejection: Rejection | None) -> bool:
        """Forward the request exactly as validated, or answer it here."""
        if rejection is None:
            await relay.to_upstream(SessionMessage(request))
            return True
        await self._reject(relay, request, rejection)
        return True

    async def _reject(self, relay: Relay, request: types.JSONRPCRequest, rejection: Rejection) -> None:
        if rejection.kind == "unknown_tool" and self.catalog.failure:
            rejection = Rejection(rejection.tool, rejection.kind, f"{rejection.message} ({self.catalog.failure})")
        if self.audit is not None:
            self.audit.record(rejection, request.id)
        kind, payload = self.gate.reply(rejection, modern=modern_envelope(request.params) is not None)
        key = id_key(request.id)
        self._answered[key] = None
        if len(self._answered) > ANSWERED_MEMORY:
            self._answered.popitem(last=False)
        if kind == "result":
            await relay.to_client(result_message(request.id, payload))
        else:
            code, text, data = payload
            await relay.to_client(error_message(request.id, code, text, data))

    def _on_cancelled(self, relay: Relay, notification: types.JSONRPCNotification) -> bool:
        params = notification.params or {}
        if "requestId" not in params:
            return False
        key = id_key(params["requestId"])
        if key in self._answered:
            return True  # the upstream never saw that request; do not confuse it
        scope = self._deferred.get(key)
        if scope is not None:
            scope.cancel()
            return True
        return False

    # ---- upstream → client ------------------------------------------------------

    async def from_upstream(self, relay: Relay, message: SessionMessage) -> bool:
        inner = message.message
        if isinstance(inner, types.JSONRPCResponse):
            key = id_key(inner.id)
            if key in self._list_ids:
                self._list_ids.discard(key)
                tools = inner.result.get("tools")
                if isinstance(tools, list):
                    self.catalog.merge(tools)
                # Re-serialized from the parsed value, so the client is shown
                # exactly the schemas the catalog compiled (a raw line with
                # duplicate keys could read differently in another parser).
                await relay.forward_to_client(SessionMessage(inner))
                return True
            elif key in self._discover_ids:
                self._discover_ids.discard(key)
                self._start_build(relay)
        elif isinstance(inner, types.JSONRPCError):
            self._list_ids.discard(id_key(inner.id))
            self._discover_ids.discard(id_key(inner.id))
        elif isinstance(inner, types.JSONRPCNotification) and inner.method == "notifications/tools/list_changed":
            slot = relay.hold()
            relay.spawn(self._refresh_then_forward, relay, slot, message)
            return True
        return False

    async def _refresh_then_forward(self, relay: Relay, slot: Any, message: SessionMessage) -> None:
        try:
            await self.refresh(relay, force=True)
        finally:
            await relay.fill(slot, message)

    # ---- the proxy's own listing ------------------------------------------------

    def _start_build(self, relay: Relay) -> None:
        if not self._build_started:
            self._build_started = True
            relay.spawn(self.refresh, relay, True)

    async def refresh(self, relay: Relay, force: bool = False) -> None:
        """List every page and swap the new revision in. Concurrent callers share one listing."""
        if not force and self._refresh_done is not None and not self._refresh_done.is_set():
            await self._refresh_done.wait()
            return
        done = self._refresh_done = anyio.Event()
        try:
            async with self._refresh_lock:
                tools = await self._list_all(relay)
                before = self.catalog.summary() if self.catalog.built.is_set() else None
                self.catalog.replace(tools)
                after = self.catalog.summary()
                if after != before:  # the startup summary, and again whenever a relisting changes it
                    for line in after:
                        print(line, file=self._summary, flush=True)
        except Exception as exc:
            reason = f"tools/list failed: {exc}"
            print(f"mcp-schema-gate: {reason}; tools/call will be refused", file=self._summary, flush=True)
            self.catalog.fail(reason)
        finally:
            done.set()

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
