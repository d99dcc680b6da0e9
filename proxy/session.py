"""The one place a gated session is assembled: a client stream pair, its own upstream, Catalog, hooks and Relay.

Every listening side (stdio, SSE, Streamable HTTP) hands `run_session` the
stream pair its transport yields. The upstream (a stdio child, an SSE or a
Streamable HTTP server) is opened for that session alone, from the
`UPSTREAMS` table, and closed with it, so a session's end (stdin closed, a
DELETE, the SSE connection dropped, an idle timeout, a signal) ends its
upstream session or child too.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from proxy.core.audit import AuditLog
from proxy.core.catalog import Catalog
from proxy.core.gate import Gate, RejectAs
from proxy.core.hooks import GuardHooks
from proxy.core.operator import OperatorControl
from proxy.core.outputs import OutputChecker
from proxy.core.relay import DRAIN_TIMEOUT, Relay
from proxy.core.streams import StreamPair
from proxy.metrics import NO_METRICS, NoMetrics

logger = logging.getLogger("mcp-schema-gate")

# Upstream transports by kind, imported only when used (as uvicorn's HTTP_PROTOCOLS):
# each is an async context manager factory `(spec, catalog) -> StreamPair`.
UPSTREAMS: dict[str, str] = {
    "stdio": "proxy.upstream.stdio:open_stdio",
    "sse": "proxy.upstream.sse:open_sse",
    "http": "proxy.upstream.streamable_http:open_streamable_http",
}

# Session outcomes (also the CLI's exit statuses where a session is the whole run).
CLIENT_LEFT = 0
UPSTREAM_GONE = 1
UPSTREAM_UNREACHABLE = 69  # EX_UNAVAILABLE
COMMAND_NOT_STARTED = 127  # as a shell says of a command it cannot run


def load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass
class UpstreamSpec:
    """Where each session's upstream is: a stdio command, or a URL with its transport."""

    command: list[str] | None = None
    cwd: str | None = None
    url: str | None = None
    transport: str = "http"
    headers: dict[str, str] | None = None

    @property
    def kind(self) -> str:
        return "stdio" if self.command else self.transport

    def describe(self) -> str:
        return " ".join(self.command) if self.command else f"{self.url} ({self.transport})"


@dataclass
class GateSettings:
    """What every session's hooks are built from."""

    dialect: str = "contract"
    reject_as: RejectAs = "tool-error"
    audit: AuditLog | None = None
    summary: TextIO = field(default_factory=lambda: sys.stderr)
    drain_timeout: float = DRAIN_TIMEOUT
    operator: OperatorControl | None = None  # the lock and the policy, shared by every session
    sessions_started: int = 0
    check_output: str = "warn"  # off | warn | strict (proxy/core/outputs.py)
    # One registry for the whole process (proxy/metrics.py); NO_METRICS when metrics are off.
    metrics: NoMetrics = NO_METRICS
    catalog_ttl: float | None = None  # relist before a call once the catalog is this old (None: never by age)
    _outputs: OutputChecker | None = field(default=None, init=False, repr=False)

    @property
    def outputs(self) -> OutputChecker | None:
        """The process-wide output policy (None when off), so 'once per tool' holds across sessions."""
        if self.check_output != "off" and self._outputs is None:
            self._outputs = OutputChecker(self.check_output, self.audit, self.metrics)
        return self._outputs if self.check_output != "off" else None

    def hooks(self) -> GuardHooks:
        return GuardHooks(Catalog(self.dialect, self.operator), Gate(self.reject_as), self.audit,
                          summary=self.summary, outputs=self.outputs, metrics=self.metrics,
                          catalog_ttl=self.catalog_ttl)


def open_upstream(spec: UpstreamSpec, catalog: Catalog) -> AbstractAsyncContextManager[StreamPair]:
    opener: Callable[[UpstreamSpec, Catalog], AbstractAsyncContextManager[StreamPair]] = load(UPSTREAMS[spec.kind])
    return opener(spec, catalog)


@dataclass
class SessionEnd:
    status: int
    reason: str | None = None  # one line for stderr when the session did not end because the client left


async def run_session(client: StreamPair, spec: UpstreamSpec, settings: GateSettings, *,
                      stop: anyio.Event | None = None, bind: Callable[[Relay], None] | None = None,
                      shared: bool = False) -> SessionEnd:
    """Gate one client session until either side ends, or `stop` is set.

    When the upstream cannot be opened, every client request is answered
    with an error saying why, until the client leaves (or `stop`); the
    session's status then says which failure it was, and a stdio gate
    exits with it. `bind` is shown the session's relay before it runs (the
    HTTP listener's stream router reads its in-flight table). `shared`: the
    client side is many sessionless clients (proxy/listen/sessionless.py),
    so the gate listens for the upstream's tool changes itself.
    """
    hooks = settings.hooks()
    hooks.watch_changes = shared
    settings.sessions_started += 1
    relay: Relay | None = None
    metrics = settings.metrics
    try:
        async with open_upstream(spec, hooks.catalog) as upstream:
            relay = Relay(client, upstream, hooks, drain_timeout=settings.drain_timeout)
            if bind is not None:
                bind(relay)
            metrics.session_opened(relay)
            try:
                status = await relay.run(stop)
            finally:
                metrics.session_closed(relay)
            if status == UPSTREAM_GONE:
                metrics.upstream_error("gone")
            return SessionEnd(status, relay.end_reason)
    except Exception as exc:  # an OSError, or an ExceptionGroup from an HTTP client transport
        if relay is not None:
            raise
        metrics.upstream_error("unreachable")
        reason = _leaf(exc)
        if spec.command and isinstance(exc, OSError):
            line = f"cannot start {spec.command[0]!r}: {reason}; check the command after '--' and its PATH"
            status = COMMAND_NOT_STARTED
        else:
            line = f"the upstream {spec.describe()} cannot be reached: {reason}; check the URL and that the server is up"
            status = UPSTREAM_UNREACHABLE
        logger.warning("mcp-schema-gate: %s", line)
        async with anyio.create_task_group() as tg:
            if stop is not None:
                tg.start_soon(_cancel_when_set, stop, tg.cancel_scope)
            await _refuse(client, f"The upstream MCP server {spec.describe()} cannot be reached: {reason}")
            tg.cancel_scope.cancel()
        return SessionEnd(status, line)


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _leaf(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


async def _refuse(client: StreamPair, reason: str) -> None:
    """No upstream: answer every client request with an error saying why, until the client leaves."""
    read_stream, write_stream = client
    async for item in read_stream:
        if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=reason)
            reply = types.JSONRPCError(jsonrpc="2.0", id=item.message.id, error=error)
            try:
                await write_stream.send(SessionMessage(reply))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
