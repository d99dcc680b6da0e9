"""Prometheus metrics: one registry per process, shared by every session; a no-op when metrics are off.

The hooks, the session and the output checker call the small interface
below. `NO_METRICS` has the same methods doing nothing and `enabled = False`,
so a caller that would have to measure time first checks `enabled`.

Labels never carry argument values. A `tool` label is a name from the
session's catalog, `"(unknown)"` for any other name (an unknown tool, or a
call without a name), and `"(other)"` once MAX_TOOL_LABELS distinct names
have been used, so a client (or a server listing ever new tools) cannot grow
the scrape without bound.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Container, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # prometheus_client is imported only when metrics are on
    from prometheus_client.metrics_core import Metric

PREFIX = "mcp_schema_gate"
MAX_TOOL_LABELS = 1000
UNKNOWN_TOOL = "(unknown)"
OTHER_TOOL = "(other)"
# Validation is microseconds; a forwarded call is whatever the server takes.
VALIDATION_BUCKETS = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1, 1.0)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class NoMetrics:
    """Metrics off: every call does nothing."""

    enabled = False

    def tool_label(self, name: Any, known: Container[str]) -> str:
        return UNKNOWN_TOOL

    def forwarded(self, tool: str) -> None: ...
    def refused(self, tool: str, kind: str) -> None: ...
    def output_mismatch(self, tool: str) -> None: ...
    def upstream_error(self, kind: str) -> None: ...
    def catalog_revisions(self, count: int) -> None: ...
    def validation_time(self, target: str, seconds: float) -> None: ...
    def call_latency(self, seconds: float) -> None: ...
    def session_opened(self, relay: Any) -> None: ...
    def session_closed(self, relay: Any) -> None: ...


NO_METRICS = NoMetrics()


class Metrics(NoMetrics):
    """The real thing, on a registry of its own (not prometheus_client's global one)."""

    enabled = True

    def __init__(self, max_tool_labels: int = MAX_TOOL_LABELS) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.registry = CollectorRegistry(auto_describe=True)
        self.max_tool_labels = max_tool_labels
        self._tool_labels: set[str] = set()
        self._relays: set[Any] = set()  # live sessions' relays, for the in-flight gauge
        self._lock = threading.Lock()  # the exporter thread reads _relays
        r = self.registry
        # The series every forwarded call updates are plain numbers (see _Histogram), exposed by collectors.
        self._forwarded: dict[str, list[float]] = {}  # tool label -> [count, created]
        r.register(_Collector(self._collect_forwarded))
        self._refused = Counter(f"{PREFIX}_calls_refused", "tools/call requests the gate answered itself",
                                ["tool", "kind"], registry=r)
        self._mismatches = Counter(f"{PREFIX}_output_mismatches",
                                   "forwarded tools/call results whose structuredContent violates the outputSchema",
                                   ["tool"], registry=r)
        self._upstream_errors = Counter(f"{PREFIX}_upstream_errors",
                                        "upstream failures: JSON-RPC error replies to client requests "
                                        "(error_response), the upstream ending mid-session (gone), the upstream "
                                        "not starting or not reachable (unreachable)", ["kind"], registry=r)
        self._revisions = Counter(f"{PREFIX}_catalog_revisions",
                                  "tool catalog revisions swapped in (listings and list pages that changed it)",
                                  registry=r)
        self._validation: dict[str, _Histogram] = {}  # by target
        self._latency = _Histogram(LATENCY_BUCKETS)
        r.register(_Collector(self._collect_histograms))
        self._sessions = Gauge(f"{PREFIX}_sessions_open", "client sessions open", registry=r)
        in_flight = Gauge(f"{PREFIX}_requests_in_flight", "client requests not yet answered, over all sessions",
                          registry=r)
        in_flight.set_function(self._in_flight)

    # ---- labels -------------------------------------------------------------------

    def tool_label(self, name: Any, known: Container[str]) -> str:
        if not isinstance(name, str) or name not in known:
            return UNKNOWN_TOOL
        if name in self._tool_labels:
            return name
        if len(self._tool_labels) >= self.max_tool_labels:
            return OTHER_TOOL
        self._tool_labels.add(name)
        return name

    # ---- events -------------------------------------------------------------------

    def forwarded(self, tool: str) -> None:
        series = self._forwarded.get(tool)
        if series is None:
            series = self._forwarded[tool] = [0.0, time.time()]
        series[0] += 1

    def refused(self, tool: str, kind: str) -> None:
        self._refused.labels(tool, kind).inc()

    def output_mismatch(self, tool: str) -> None:
        self._mismatches.labels(tool).inc()

    def upstream_error(self, kind: str) -> None:
        self._upstream_errors.labels(kind).inc()

    def catalog_revisions(self, count: int) -> None:
        if count > 0:
            self._revisions.inc(count)

    def validation_time(self, target: str, seconds: float) -> None:
        series = self._validation.get(target)
        if series is None:
            series = self._validation[target] = _Histogram(VALIDATION_BUCKETS)
        series.observe(seconds)

    def call_latency(self, seconds: float) -> None:
        self._latency.observe(seconds)

    def _collect_forwarded(self) -> Iterable[Metric]:
        from prometheus_client.metrics_core import Metric

        family = Metric(f"{PREFIX}_calls_forwarded", "tools/call requests forwarded to the upstream", "counter")
        for tool, (count, created) in list(self._forwarded.items()):  # list(): one step, safe beside the loop
            family.add_sample(f"{family.name}_total", {"tool": tool}, count)
            family.add_sample(f"{family.name}_created", {"tool": tool}, created)
        yield family

    def _collect_histograms(self) -> Iterable[Metric]:
        from prometheus_client.metrics_core import Metric

        validation = Metric(f"{PREFIX}_validation_seconds",
                            "time spent validating tools/call arguments and results", "histogram")
        for target, series in list(self._validation.items()):
            series.samples(validation, {"target": target})
        yield validation
        latency = Metric(f"{PREFIX}_call_duration_seconds",
                         "forwarded tools/call, from the request seen to its reply sent to the client", "histogram")
        self._latency.samples(latency, {})
        yield latency

    def session_opened(self, relay: Any) -> None:
        self._sessions.inc()
        if relay is not None:
            with self._lock:
                self._relays.add(relay)

    def session_closed(self, relay: Any) -> None:
        self._sessions.dec()
        with self._lock:
            self._relays.discard(relay)

    def _in_flight(self) -> float:
        with self._lock:
            relays = list(self._relays)
        total = 0
        for relay in relays:
            try:
                total += sum(not entry.standing for entry in list(relay.inflight.values()))
            except RuntimeError:  # the table changed while copied (another thread): count it as empty
                pass
        return total

    # ---- exposition ---------------------------------------------------------------

    def exposition(self) -> tuple[bytes, str]:
        """(body, content type) of a scrape."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def serve(self, host: str, port: int) -> tuple[Any, str]:
        """Start the separate exporter (prometheus_client's own HTTP server, in a daemon thread).

        Returns (server, its URL); `server.shutdown()` stops it.
        """
        from prometheus_client import start_http_server

        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        bound_port = server.server_port
        shown = f"[{host}]" if ":" in host else host
        return server, f"http://{shown}:{bound_port}/metrics"


class _Histogram:
    """One histogram series as plain numbers: an observation is a bisect and two additions.

    prometheus_client's Histogram takes a lock for its sum and for a bucket
    and makes several Python calls per observation: with the call counter,
    about 3.6% of a Streamable HTTP call's instructions (docs/performance.md),
    for series that every forwarded call updates. Written only by the event
    loop's thread; the exporter's thread reads them as they stand. Exposed
    with the samples prometheus_client's Histogram has, in its order.
    """

    __slots__ = ("bounds", "counts", "sum", "created")

    def __init__(self, buckets: Iterable[float]) -> None:
        self.bounds = (*buckets, math.inf)
        self.counts = [0] * len(self.bounds)  # per bucket, not cumulative: an observation adds to one
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1  # the first bound >= value: its `le` bucket
        self.sum += value

    def samples(self, family: Metric, labels: dict[str, str]) -> None:
        from prometheus_client.utils import floatToGoString

        counts, total = list(self.counts), self.sum
        cumulative = 0
        for bound, count in zip(self.bounds, counts):
            cumulative += count
            family.add_sample(f"{family.name}_bucket", {**labels, "le": floatToGoString(bound)}, cumulative)
        family.add_sample(f"{family.name}_count", labels, cumulative)
        family.add_sample(f"{family.name}_sum", labels, total)
        family.add_sample(f"{family.name}_created", labels, self.created)


class _Collector:
    """A prometheus_client custom collector: what `collect` yields is scraped."""

    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self.collect = collect


def parse_address(value: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[V6]:PORT` → (host, port); loopback when no host is given. Raises ValueError."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--metrics {value!r}: expected HOST:PORT or PORT (port 0 picks a free one)")
    return host, int(port)
