"""Prometheus metrics: scraped from real gate processes while they gate real calls.

--metrics HOST:PORT (the separate exporter) on a stdio gate, and GET /metrics
on the HTTP listener behind its bearer token.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import anyio
import httpx2
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from proxy.metrics import OTHER_TOOL, UNKNOWN_TOOL, Metrics
from tests.proxy.conftest import calls, raw_proxy
from tests.support.examples import examples

METRICS_URL = re.compile(rb"metrics on (http://[^ \n]+/metrics)")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of a scrape."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(scrape: dict, name: str, **labels: str) -> float:
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)


def tool_labels(scrape: dict) -> set[str]:
    return {dict(labels)["tool"] for (_, labels) in scrape if "tool" in dict(labels)}


async def scrape(url: str) -> dict:
    def get() -> str:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.read().decode()

    return samples(await anyio.to_thread.run_sync(get))


async def exporter_url(session) -> str:
    with anyio.fail_after(20):
        while not (match := METRICS_URL.search(session.stderr)):
            await anyio.sleep(0.02)
    return match.group(1).decode()


async def test_counters_match_a_mixed_run(record: Path) -> None:
    async with raw_proxy(record, "--metrics", "127.0.0.1:0", UPSTREAM_OUTPUTS="1") as session:
        url = await exporter_url(session)
        await session.initialize()
        plan = [
            ("echo", {"text": "a"}), ("echo", {"text": "b"}), ("echo", {"text": "c"}),  # forwarded
            ("echo", {"text": ""}), ("echo", {}),  # refused: validation
            ("nope", {}), ("nope-either", {}),  # refused: unknown_tool
            ("shaped", {"result": "bad"}), ("shaped", {"result": "good"}),  # forwarded, one output mismatch
        ]
        for i, (name, arguments) in enumerate(plan, start=1):
            reply = await session.request(i, "tools/call", {"name": name, "arguments": arguments})
            assert "result" in reply or "error" in reply
        # A JSON-RPC error from the upstream (a method it does not serve).
        reply = await session.request("no-method", "resources/templates/list", {})
        assert "error" in reply, reply
        during = await scrape(url)
    assert value(during, "mcp_schema_gate_calls_forwarded_total", tool="echo") == 3
    assert value(during, "mcp_schema_gate_calls_forwarded_total", tool="shaped") == 2
    assert value(during, "mcp_schema_gate_calls_refused_total", tool="echo", kind="validation") == 2
    assert value(during, "mcp_schema_gate_calls_refused_total", tool=UNKNOWN_TOOL, kind="unknown_tool") == 2
    assert value(during, "mcp_schema_gate_output_mismatches_total", tool="shaped") == 1
    assert value(during, "mcp_schema_gate_sessions_open") == 1
    assert value(during, "mcp_schema_gate_requests_in_flight") == 0
    assert value(during, "mcp_schema_gate_call_duration_seconds_count") == 5  # each forwarded call, answered
    assert value(during, "mcp_schema_gate_validation_seconds_count", target="arguments") >= 9
    assert value(during, "mcp_schema_gate_validation_seconds_count", target="output") == 2
    assert value(during, "mcp_schema_gate_catalog_revisions_total") >= 1
    assert value(during, "mcp_schema_gate_upstream_errors_total", kind="error_response") == 1
    assert tool_labels(during) == {"echo", "shaped", UNKNOWN_TOOL}  # no argument values anywhere
    assert "nope" not in str(during)
    assert len(calls(record)) == 5  # what the counters say was forwarded is what the server saw


async def test_ten_thousand_unknown_tool_names_keep_the_labels_bounded(record: Path) -> None:
    count = 10_000
    async with raw_proxy(record, "--metrics", "127.0.0.1:0") as session:
        url = await exporter_url(session)
        await session.initialize()
        await session.request("warm", "tools/call", {"name": "echo", "arguments": {"text": "warm"}})
        answered = 0

        async def send_all() -> None:
            for i in range(count):
                await session.send({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                                    "params": {"name": f"no-such-tool-{i}", "arguments": {}}})

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_all)
            with anyio.fail_after(120):
                while answered < count:
                    reply = await session.receive(60)
                    if "id" in reply and "method" not in reply:
                        assert reply["error"]["code"] == -32602
                        answered += 1
        after = await scrape(url)
    assert value(after, "mcp_schema_gate_calls_refused_total", tool=UNKNOWN_TOOL, kind="unknown_tool") == count
    assert tool_labels(after) == {"echo", UNKNOWN_TOOL}
    assert len(after) < 200  # the whole scrape stays small


def test_tool_labels_are_capped_with_an_overflow_label() -> None:
    metrics = Metrics(max_tool_labels=2)
    known = {"a", "b", "c"}
    assert [metrics.tool_label(n, known) for n in ("a", "b", "c", "a", "zzz", None)] == [
        "a", "b", OTHER_TOOL, "a", UNKNOWN_TOOL, UNKNOWN_TOOL]
    other = Metrics()  # registries are per instance: several can live in one process
    other.forwarded("a")
    assert b'mcp_schema_gate_calls_forwarded_total{tool="a"} 1.0' in other.exposition()[0]
    assert b"calls_forwarded_total{" not in metrics.exposition()[0]


async def test_http_listener_serves_metrics_behind_the_token(record: Path) -> None:
    from tests.proxy_http.conftest import client_for, http_gate

    token = "metrics-secret"
    async with http_gate(record, "http", None, "--auth-token-env", "GATE_TOKEN", GATE_TOKEN=token) as (url, _proc):
        metrics_url = url.replace("/mcp", "/metrics")
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(20.0)) as http:
            refused = await http.get(metrics_url)
            assert refused.status_code == 401
            wrong = await http.get(metrics_url, headers={"authorization": "Bearer nope"})
            assert wrong.status_code == 401
            async with client_for("http", url, token=token) as client:
                await client.call_tool("echo", {"text": "hi"})
                await client.call_tool("echo", {"text": ""})
                reply = await http.get(metrics_url, headers={"authorization": f"Bearer {token}"})
            assert reply.status_code == 200
            assert reply.headers["content-type"].startswith("text/plain")
            scraped = samples(reply.text)
    assert value(scraped, "mcp_schema_gate_calls_forwarded_total", tool="echo") == 1
    assert value(scraped, "mcp_schema_gate_calls_refused_total", tool="echo", kind="validation") == 1
    assert value(scraped, "mcp_schema_gate_sessions_open") == 1


DYING_UPSTREAM = r'''
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "tools/call":
        sys.exit(0)  # dies with the call in flight
    result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]} if message["method"] == "tools/list" \
        else {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "d", "version": "0"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
'''


async def test_upstream_deaths_and_unreachable_upstreams_are_counted(record: Path, tmp_path: Path) -> None:
    import json
    import sys

    from tests.proxy.conftest import environment
    from tests.proxy_http.conftest import LISTENING, answer_messages, raw_client, spawn

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    dying = tmp_path / "dying.py"
    dying.write_text(DYING_UPSTREAM)
    for upstream, kind in (([sys.executable, str(dying)], "gone"), (["/no/such/mcp-server"], "unreachable")):
        command = [sys.executable, "-m", "proxy", "--listen", "http://127.0.0.1:0", "--", *upstream]
        async with spawn(command, environment(record)) as proc, raw_client() as http:
            url = (await proc.wait_for(LISTENING, "stderr")).group(1).decode()
            reply = await http.post(url, content=json.dumps(init))
            headers = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                            headers=headers)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
            (answer,) = answer_messages(await http.post(url, content=json.dumps(call), headers=headers))
            assert "error" in answer, answer
            metrics_url = url.replace("/mcp", "/metrics")

            async def scraped() -> dict:
                return samples((await http.get(metrics_url)).text)

            last: dict = {}

            async def counted() -> bool:
                nonlocal last
                last = await scraped()
                return value(last, "mcp_schema_gate_upstream_errors_total", kind=kind) == 1

            with anyio.fail_after(20):
                while not await counted():
                    await anyio.sleep(0.05)
            assert value(last, "mcp_schema_gate_requests_in_flight") == 0
            if kind == "gone":
                assert value(last, "mcp_schema_gate_calls_forwarded_total", tool="echo") == 1
                assert value(last, "mcp_schema_gate_sessions_open") == 0


def _without_created(text: bytes) -> list[bytes]:
    """Exposition lines, with each `_created` sample's value (a timestamp) left out."""
    return [re.sub(rb"(_created(\{[^}]*\})?) .*", rb"\1", line) for line in text.splitlines()]


def _families(lines: list[bytes], prefixes: tuple[bytes, ...]) -> list[bytes]:
    """The lines of the metric families whose names start with one of `prefixes` (from `# HELP name` on)."""
    kept, keep = [], False
    for line in lines:
        if line.startswith(b"# HELP "):
            keep = line.split(b" ")[2].startswith(prefixes)
        if keep:
            kept.append(line)
    return kept


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["arguments", "output"]),
                          st.floats(min_value=0, max_value=120, allow_nan=False)), max_size=40),
       st.lists(st.sampled_from(["echo", "shaped", UNKNOWN_TOOL]), max_size=10))
def test_the_per_call_series_expose_what_prometheus_clients_own_metrics_would(
        observations: list[tuple[str, float]], tools: list[str]) -> None:
    """The forwarded counter and the two histograms are kept by hand; a scrape must not tell them apart.

    The same events go to prometheus_client's Counter and Histogram on a
    registry of their own; both expositions are compared line by line
    (including bucket edges: values equal to a bound land in its bucket).
    """
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from proxy.metrics import LATENCY_BUCKETS, VALIDATION_BUCKETS

    ours = Metrics()
    registry = CollectorRegistry(auto_describe=True)
    forwarded = Counter("mcp_schema_gate_calls_forwarded", "tools/call requests forwarded to the upstream", ["tool"],
                        registry=registry)
    validation = Histogram("mcp_schema_gate_validation_seconds",
                           "time spent validating tools/call arguments and results", ["target"],
                           buckets=VALIDATION_BUCKETS, registry=registry)
    latency = Histogram("mcp_schema_gate_call_duration_seconds",
                        "forwarded tools/call, from the request seen to its reply sent to the client",
                        buckets=LATENCY_BUCKETS, registry=registry)
    for tool in tools:
        ours.forwarded(tool)
        forwarded.labels(tool).inc()
    for target, seconds in observations + [("arguments", VALIDATION_BUCKETS[2])]:
        ours.validation_time(target, seconds)
        validation.labels(target).observe(seconds)
        ours.call_latency(seconds)
        latency.observe(seconds)
    theirs = _without_created(generate_latest(registry))
    mine = _families(_without_created(ours.exposition()[0]), (b"mcp_schema_gate_calls_forwarded",
                                                               b"mcp_schema_gate_validation_seconds",
                                                               b"mcp_schema_gate_call_duration_seconds"))
    assert mine == theirs
