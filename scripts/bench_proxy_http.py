"""Benchmark: tools/call over Streamable HTTP — direct, through mcp-schema-gate, and through other Python proxies.

All in one run, on 127.0.0.1, with ports the OS picks:
  direct             the benchmark server (the SDK's lowlevel Server, one `echo` tool) served over
                     Streamable HTTP by the SDK's StreamableHTTPSessionManager
  direct json        the same server with json_response=True (one JSON body per request POST): the
                     like-for-like baseline for the gate's --json-response rows
  gate -> http       `python -m proxy --listen http://127.0.0.1:0 --upstream <direct>/mcp`
  fastmcp -> http    FastMCP's `create_proxy(<direct>/mcp)` served over Streamable HTTP (if fastmcp imports)
  gate json -> http  the same with --json-response (one JSON body per request POST, as mcp-proxy answers)
  gate json -> http json  the gate with --json-response in front of "direct json"
  gate -> stdio      `python -m proxy --listen http://127.0.0.1:0 -- <the same server on stdio>`
  gate json -> stdio the same with --json-response
  mcp-proxy -> stdio `mcp-proxy --port P -- <the same server on stdio>` (with --mcp-proxy PATH: mcp-proxy
                     0.12 imports APIs that mcp 2.x removed, so it runs from its own venv with mcp<2)
  ... [sessionless]  "direct json", "gate json -> http json" and "gate json -> stdio" again, with
                     2026-07-28 sessionless requests (each self-contained, no session), compared
                     with "direct json [sessionless]"

With --replicas N --haproxy PATH, a scale-out comparison as well (docs/deploy.md): one gate
answered directly, haproxy in front of that one gate, and haproxy in front of N gates (all in
front of "direct"), each with session traffic (every worker its own session, as separate
clients would; haproxy's stick table keeps each on its replica) and sessionless 2026-07-28
traffic (every request self-contained, round robin). --scale-only leaves the rows above out.
Everything runs on this machine: with fewer cores than processes, N gates compete with the
upstream, haproxy and the load generator for the same CPUs, and the ratio says more about
the machine than about the gate; the run prints the core count and the load average.

The load generator is a minimal HTTP/1.1 client on raw asyncio sockets (keep-alive, one
connection per worker), so the measuring side costs little CPU on a small machine. One MCP
session per target; CONCURRENCY workers each keep one tools/call in flight for DURATION
seconds after a warm-up. Prints requests/s, median/p99 latency and calls per worker (min-max: a
target that serves calls in turn gives every worker about as many) per target and concurrency,
and the gate's throughput as a share of direct.

    .venv/bin/python scripts/bench_proxy_http.py [--duration 3] [--concurrency 1 16 64]
        [--mcp-proxy /path/to/venv/bin/mcp-proxy] [--json]
        [--replicas 3 --haproxy /usr/sbin/haproxy [--scale-only]]
    .venv/bin/python scripts/bench_proxy_http.py --baseline-ref REF [--rounds 5] [--concurrency 1 16]
        [--gate-option=--event-loop=asyncio] [--baseline-option=...]
    .venv/bin/python scripts/bench_proxy_http.py --floor [--rounds 3] [--concurrency 1 64]

With --baseline-ref REF, an A/B of the gate alone instead: this tree's and REF's, each
--json-response in front of "direct json", session and sessionless traffic, loaded in turns
(the order alternating by round), each gate's CPU time per call read from /proc/PID/stat.
With REF = HEAD and --gate-option, it compares an option within one tree. With --default-mode,
both gates run without --json-response (as a gate is run by default: each request POST's answer
may become an SSE stream), in this A/B and in --instructions.

With --floor, the same A/B with a byte relay in place of REF's gate, and "direct json" itself
loaded in the same turns: the relay is made of the gate's own HTTP parts (uvicorn with the
gate's httptools protocol, uvloop, the gate's upstream POST pool) and forwards each POST's
bytes and headers with no MCP, no JSON parsing and no check. What it adds over "direct json"
is the floor under the gate's added latency on this machine; the gate's CPU per call is
compared with the relay's.

With --baseline-ref REF --instructions, the same A/B counted in instructions instead of CPU
time: each gate runs under valgrind's cachegrind twice (40 calls, then 40 + N), one call at a
time, session and sessionless; the difference divided by N is its instructions per call. On a
noisy machine this resolves changes of a few percent that CPU time cannot.

With --open-sessions N, the cost of a session instead: N sessions opened (initialize, then
notifications/initialized), listed (tools/list) and closed (DELETE) one after another through
"direct json" and through the gate in front of it (and REF's gate with --baseline-ref), taking
turns by tens; --catalog FILE gives the server a captured catalog's tools to list as well.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    from scripts.bench_proxy import SERVER, baseline_tree, cpu_seconds  # imported from the repository root
except ImportError:
    from bench_proxy import SERVER, baseline_tree, cpu_seconds  # run as `python scripts/bench_proxy_http.py`: scripts/ is on the path

# The end of each server script below: serve `userver`, and say where on stderr once listening.
SERVE_ANNOUNCING = r'''
async def main():
    async with anyio.create_task_group() as tg:
        async def announce():
            while not userver.started: await anyio.sleep(0.01)
            print("listening on http://127.0.0.1:%d/mcp" % userver.servers[0].sockets[0].getsockname()[1], file=sys.stderr, flush=True)
        tg.start_soon(announce)
        await userver.serve()
'''

HTTP_SERVER = r'''
import anyio, sys, uvicorn, mcp_types as types, contextlib
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
TOOL = types.Tool(name="echo", input_schema={"type": "object", "properties": {"text": {"type": "string", "minLength": 1}},
                                              "required": ["text"], "additionalProperties": False})
CATALOG = [a for a in sys.argv[1:] if a != "json"]  # a captured catalog whose tools are listed beside echo
import json
TOOLS = [TOOL] + ([types.Tool.model_validate(t) for t in json.load(open(CATALOG[0]))["tools"]] if CATALOG else [])
async def list_tools(ctx, params): return types.ListToolsResult(tools=TOOLS)
async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.arguments["text"])])
server = Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)
manager = StreamableHTTPSessionManager(server, json_response="json" in sys.argv[1:])
async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        message = await receive()
        async with manager.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()
        await send({"type": "lifespan.shutdown.complete"})
        return
    await manager.handle_request(scope, receive, send)
config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)
userver = uvicorn.Server(config)
''' + SERVE_ANNOUNCING + "anyio.run(main)\n"

# The floor under a gate over Streamable HTTP: the gate's own listening and upstream parts
# (uvicorn with its httptools protocol class, uvloop, PostPool), forwarding bytes and headers only.
RELAY = r'''
import sys, anyio, uvicorn
from proxy.listen.http import _HttpProtocol, _Server
from proxy.upstream.post_pool import PostPool
HOP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "date", "server"}
pool = PostPool(sys.argv[1])
async def app(scope, receive, send):
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    headers = {}
    for name, value in scope["headers"]:  # names arrive lower-cased
        name = name.decode("latin-1")
        if name not in HOP:
            headers[name] = value.decode("latin-1")
    response = await pool.post(headers, body)
    data = await response.read()
    out = []
    for name, value in response.headers.items():
        name = name.lower()
        if name not in HOP:
            out.append((name.encode("latin-1"), value.encode("latin-1")))
    await send({"type": "http.response.start", "status": response.status,
                "headers": out + [(b"content-length", b"%d" % len(data))]})
    await send({"type": "http.response.body", "body": data})
config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_level="warning", access_log=False,
                        http=_HttpProtocol, proxy_headers=False)
userver = _Server(config)
''' + SERVE_ANNOUNCING + 'anyio.run(main, backend_options={"use_uvloop": True})\n'

FASTMCP_PROXY = r'''
import sys
from fastmcp.server import create_proxy
proxy = create_proxy(sys.argv[1])
print("listening on http://127.0.0.1:%s/mcp" % sys.argv[2], file=sys.stderr, flush=True)
proxy.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False, log_level="warning")
'''

LISTENING = re.compile(r"listening on (http://[^ \n]+)")
VERSION = "2025-11-25"
SESSIONLESS = "2026-07-28"
# The targets that also get 2026-07-28 sessionless traffic, each a row "<label> [sessionless]" (the gate's
# sessionless path answers in JSON unless a call needs a stream, whatever --json-response says).
SESSIONLESS_ROWS = ("direct json", "gate json -> http json", "gate json -> stdio")
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": SESSIONLESS,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Target:
    def __init__(self, label: str, command: list[str], url: str | None = None, root: Path = ROOT) -> None:
        self.label, self.command, self.url, self.root = label, command, url, root
        self.process: subprocess.Popen | None = None

    def start(self) -> str:
        env = dict(os.environ, PYTHONPATH=str(self.root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, cwd=self.root, env=env, text=True)
        if self.url is None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                line = self.process.stderr.readline()
                if not line:
                    raise RuntimeError(f"{self.label}: exited before listening")
                if match := LISTENING.search(line):
                    self.url = match.group(1)
                    break
        # drain stderr so the target never blocks on a full pipe
        # (a thread of its own: the default executor has only cpu+4 workers, and a
        # target left undrained blocks on its full stderr pipe and stops answering)
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()
        return self.url

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Conn:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads a JSON or SSE reply."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: dict | None, headers: dict[str, str],
                   method: str = "POST") -> tuple[int, dict[str, str], list[dict]]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        data = json.dumps(body).encode() if body is not None else b""
        head = [f"{method} {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Content-Type: application/json",
                "Accept: application/json, text/event-stream", f"Content-Length: {len(data)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        response_headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode().partition(":")
            response_headers[key.strip().lower()] = value.strip()
        if response_headers.get("transfer-encoding") == "chunked":
            chunks = []
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                chunks.append(chunk[:-2])
            payload = b"".join(chunks)
        else:
            payload = await self.reader.readexactly(int(response_headers.get("content-length", "0")))
        if response_headers.get("connection") == "close":
            self.writer.close()
            self.writer = None
        text = payload.decode()
        if response_headers.get("content-type", "").startswith("text/event-stream"):
            messages = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        else:
            messages = [json.loads(text)] if text.strip() else []
        return status, response_headers, messages

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def open_session(url: str) -> tuple[str, int, str, dict[str, str]]:
    match = re.match(r"http://([^:/]+):(\d+)(/.*)", url)
    host, port, path = match.group(1), int(match.group(2)), match.group(3)
    conn = Conn(host, port, path)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    status, headers, messages = await conn.post(init, {})
    assert status == 200 and "result" in messages[-1], (status, messages)
    session = {"mcp-protocol-version": VERSION}
    if "mcp-session-id" in headers:
        session["mcp-session-id"] = headers["mcp-session-id"]
    await conn.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    conn.close()
    return host, port, path, session


async def close_session(url: str, session: dict[str, str]) -> None:
    """DELETE a session, so rows that open one per worker do not pile up sessions (and upstreams) in a gate."""
    host, port, path = split_url(url)
    conn = Conn(host, port, path)
    try:
        await conn.post(None, session, method="DELETE")
    finally:
        conn.close()


def split_url(url: str) -> tuple[str, int, str]:
    match = re.match(r"http://([^:/]+):(\d+)(/.*)", url)
    return match.group(1), int(match.group(2)), match.group(3)


async def load(url: str, concurrency: int, duration: float, warmup: float,
               traffic: str = "session") -> dict[str, float]:
    """`traffic`: one session shared by every worker (session), one session per worker (sessions),
    or self-contained 2026-07-28 requests with no session (sessionless)."""
    host, port, path = split_url(url)
    if traffic == "session":
        sessions = [(await open_session(url))[3]] * concurrency
    elif traffic == "sessions":
        sessions = [(await open_session(url))[3] for _ in range(concurrency)]
    else:
        sessions = [{"mcp-protocol-version": SESSIONLESS}] * concurrency
    latencies: list[float] = []
    per_worker: list[int] = []  # measured calls of each worker: a server that serves in turn gives each about as many
    counter = iter(range(1, 10**9))
    measuring = False
    stop_at = 0.0

    async def worker(session: dict[str, str]) -> None:
        conn = Conn(host, port, path)
        calls = 0
        headers = {**session, "mcp-method": "tools/call", "mcp-name": "echo"}
        params: dict = {"name": "echo", "arguments": {"text": "hello"}}
        if traffic == "sessionless":
            params["_meta"] = ENVELOPE
        try:
            while time.perf_counter() < stop_at:
                request_id = next(counter)
                body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
                start = time.perf_counter()
                status, _, messages = await conn.post(body, headers)
                elapsed = time.perf_counter() - start
                reply = messages[-1]
                assert status == 200 and reply.get("id") == request_id and not reply["result"].get("isError"), reply
                if measuring:
                    latencies.append(elapsed)
                    calls += 1
        finally:
            conn.close()
            if measuring:
                per_worker.append(calls)

    stop_at = time.perf_counter() + warmup
    await asyncio.gather(*(worker(session) for session in sessions))
    measuring = True
    began = time.perf_counter()
    stop_at = began + duration
    await asyncio.gather(*(worker(session) for session in sessions))
    wall = time.perf_counter() - began
    if traffic == "sessions":
        await asyncio.gather(*(close_session(url, session) for session in sessions))
    ordered = sorted(latencies)
    return {"rps": len(latencies) / wall, "median_ms": statistics.median(ordered) * 1000,
            "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, "calls": len(latencies),
            "calls_per_worker": [min(per_worker), max(per_worker)]}


def documented_backend() -> str:
    """The directives of docs/deploy.md's `backend gates` section (its servers left out), so that the
    benchmark and tests/proxy_http/test_haproxy.py run what the documentation tells operators to run."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    directives = []
    for line in text[text.index("\nbackend gates\n") + 1:].splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith(("server ", "```")):
            break
        if stripped and not stripped.startswith("#"):
            directives.append(f"    {stripped}")
    return "\n".join(directives)


def haproxy_config(port: int, servers: str, frontend_extra: str = "", maxconn: int = 4096) -> str:
    """docs/deploy.md's configuration on 127.0.0.1: round robin, sessions stuck by Mcp-Session-Id, /healthz checks."""
    return f"""\
global
    maxconn {maxconn}

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check 2s
    retries 2
    option redispatch 1

frontend mcp
    bind 127.0.0.1:{port}
{frontend_extra}    default_backend gates

backend gates
{documented_backend()}
{servers}
"""


class Haproxy(Target):
    """haproxy in the foreground (-db) in front of the given gate URLs, its configuration in a temporary file."""

    def __init__(self, label: str, binary: str, gate_urls: list[str], workdir: Path) -> None:
        port = free_port()
        servers = "\n".join(f"    server g{n} {split_url(url)[0]}:{split_url(url)[1]} check inter 2s"
                            for n, url in enumerate(gate_urls, 1))
        config = workdir / f"haproxy-{len(gate_urls)}.cfg"
        config.write_text(haproxy_config(port, servers))
        super().__init__(label, [binary, "-f", str(config), "-db"], f"http://127.0.0.1:{port}/mcp")
        self.port = port

    def start(self) -> str:
        url = super().start()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # haproxy announces nothing; its port accepting is the sign
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.label}: haproxy exited ({self.process.returncode})")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return url
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.label}: haproxy is not listening")


def machine() -> dict:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpus": cpus, "loadavg": [round(x, 2) for x in os.getloadavg()]}


async def scale_out(args: argparse.Namespace, direct_url: str, report: dict, failed: dict[str, str]) -> None:
    """1 gate, haproxy -> 1 gate, haproxy -> N gates; session and sessionless traffic; rows added to `report`."""
    import tempfile

    python = sys.executable
    n = args.replicas
    gates = [Target(f"gate r{i}", [python, "-m", "proxy", "--quiet", "--listen", "http://127.0.0.1:0",
                                   "--max-sessions", "1000", "--upstream", direct_url]) for i in range(1, n + 1)]
    started: list[Target] = []
    at_start = machine()
    with tempfile.TemporaryDirectory(prefix="bench-haproxy-") as workdir:
        try:
            for gate in gates:
                gate.start()
                started.append(gate)
            one = Haproxy("haproxy -> 1 gate", args.haproxy, [gates[0].url], Path(workdir))
            many = Haproxy(f"haproxy -> {n} gates", args.haproxy, [g.url for g in gates], Path(workdir))
            for balancer in (one, many):
                balancer.start()
                started.append(balancer)
            rows = [("1 gate", gates[0].url), (one.label, one.url), (many.label, many.url)]
            print(f"scale-out: {n} gates, machine {at_start}", file=sys.stderr, flush=True)
            for traffic in ("sessions", "sessionless"):
                for concurrency in args.concurrency:
                    for name, url in rows:
                        label = f"{name} ({traffic})"
                        if label in failed:
                            continue
                        try:
                            result = await asyncio.wait_for(
                                load(url, concurrency, args.duration, args.warmup, traffic),
                                args.duration + args.warmup + 60)
                        except Exception as exc:
                            failed[label] = f"{type(exc).__name__}: {exc}"
                            print(f"c={concurrency:<3} {label:32} FAILED ({failed[label]}); its row is left out",
                                  file=sys.stderr, flush=True)
                            continue
                        result["loadavg_1m"] = round(os.getloadavg()[0], 2)
                        report.setdefault(label, {})[str(concurrency)] = result
                        if not args.json:
                            print(f"c={concurrency:<3} {label:32} {result['rps']:8.0f} req/s  median "
                                  f"{result['median_ms']:7.2f} ms  p99 {result['p99_ms']:7.2f} ms  "
                                  f"load {result['loadavg_1m']}", flush=True)
        finally:
            for target in reversed(started):
                target.stop()
    report["machine"] = {**machine(), "loadavg_start": at_start["loadavg"], "replicas": n}


async def run(args: argparse.Namespace) -> dict:
    python = sys.executable
    upstream = Target("direct", [python, "-c", HTTP_SERVER])
    direct_url = upstream.start()
    stdio_server = [python, "-c", SERVER]
    gate = [python, "-m", "proxy", "--quiet", "--listen", "http://127.0.0.1:0"]
    direct_json = Target("direct json", [python, "-c", HTTP_SERVER, "json"])
    direct_json_url = direct_json.start()
    targets = [] if args.scale_only else [
               direct_json,
               Target("gate -> http", [*gate, "--upstream", direct_url]),
               Target("gate json -> http", [*gate, "--json-response", "--upstream", direct_url]),
               Target("gate json -> http json", [*gate, "--json-response", "--upstream", direct_json_url])]
    if not args.scale_only:
        try:
            import fastmcp  # noqa: F401

            targets.append(Target("fastmcp -> http", [python, "-c", FASTMCP_PROXY, direct_url, str(free_port())]))
        except ImportError:
            print("fastmcp is not installed (pip install -e '.[bench]'): its row is left out", file=sys.stderr)
        targets.append(Target("gate -> stdio", [*gate, "--", *stdio_server]))
        targets.append(Target("gate json -> stdio", [*gate, "--json-response", "--", *stdio_server]))
    if args.mcp_proxy and not args.scale_only:
        port = free_port()
        targets.append(Target("mcp-proxy -> stdio", [args.mcp_proxy, "--host", "127.0.0.1", "--port", str(port),
                                                     "--", *stdio_server], f"http://127.0.0.1:{port}/mcp"))
    report: dict = {}
    failed: dict[str, str] = {}
    try:
        for target in targets:
            if target.process is None:
                target.start()
        if args.mcp_proxy:
            await asyncio.sleep(3)  # mcp-proxy does not announce readiness on stderr
        by_label = {target.label: target for target in targets}
        # 2026-07-28 sessionless traffic to the same processes: (row, target it is sent to).
        sessionless = [] if args.scale_only else [
            (f"{label} [sessionless]", by_label[label]) for label in SESSIONLESS_ROWS if label in by_label]
        for concurrency in args.concurrency:
            rows = [(target.label, target, "session") for target in [upstream, *targets]]
            rows += [(label, target, "sessionless") for label, target in sessionless]
            for label, target, traffic in rows:
                if label in failed:
                    continue
                try:
                    # A peer that stops answering must cost its row, not the whole run.
                    result = await asyncio.wait_for(
                        load(target.url, concurrency, args.duration, args.warmup, traffic=traffic),
                        args.duration + args.warmup + 30)
                except Exception as exc:  # asyncio.TimeoutError included (it is TimeoutError)
                    failed[label] = f"{type(exc).__name__}: {exc}"
                    print(f"c={concurrency:<3} {label:24} FAILED ({failed[label]}); its row is left out",
                          file=sys.stderr, flush=True)
                    continue
                report.setdefault(label, {})[str(concurrency)] = result
                if not args.json:
                    print(f"c={concurrency:<3} {label:24} {result['rps']:8.0f} req/s  median "
                          f"{result['median_ms']:7.2f} ms  p99 {result['p99_ms']:7.2f} ms  "
                          f"calls per worker {result['calls_per_worker'][0]}-{result['calls_per_worker'][1]}",
                          flush=True)
        if args.replicas:
            await scale_out(args, direct_url, report, failed)
    finally:
        for target in [*targets, upstream]:
            target.stop()
    return report


def interpreter(executable: str) -> str:
    """The Python version, and whether the interpreter runs from a shared libpython (which costs it speed).

    Read from the running process (its memory map), since sysconfig describes
    the configure run, which for a distribution's python is often not the
    build of the executable (Debian links libpython into the executable, built
    with PGO and LTO, and builds the shared library apart).
    """
    code = ("import sys; shared = any('libpython' in line for line in open('/proc/self/maps')); "
            "print(sys.version.split()[0], 'with a shared libpython' if shared else 'with libpython linked in')")
    return subprocess.run([executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


async def ab(args: argparse.Namespace) -> dict:
    """This tree's gate against REF's, both `--json-response` (or both without) in front of "direct json", in turns.

    Each round, for each traffic kind and concurrency, the two gates are
    loaded one after the other (the order alternating by round), and each
    gate's CPU time per call is read from /proc/PID/stat around its load.
    With --floor the sides are this tree's gate, the byte relay (RELAY) and
    "direct json" itself, whose CPU is the server's own.
    """
    python = sys.executable
    upstream = Target("direct json", [python, "-c", HTTP_SERVER, "json"])
    url = upstream.start()
    gate = [python, "-m", "proxy", "--quiet", "--listen", "http://127.0.0.1:0", *answer_mode(args)]
    ref = args.baseline_ref
    base_gate, base_label = gate, ref
    interpreters = {}
    if args.baseline_python:
        # The same gate code under another interpreter: its build (PGO, LTO, a shared libpython) moves the CPU per call.
        base_gate, base_label = [args.baseline_python, *gate[1:]], f"{ref} on --baseline-python"
        interpreters = {who: f"{exe}: {interpreter(exe)}"
                        for who, exe in (("this tree", python), (base_label, args.baseline_python))}
        if not args.json:
            for who, what in interpreters.items():
                print(f"{who}: {what}", flush=True)
    sides = [Target("this tree", [*gate, *args.gate_option, "--upstream", url])]
    if args.floor:
        # The relay, then the server itself, whose CPU column is the server's own CPU per call.
        sides += [Target("relay", [python, "-c", RELAY, url]), upstream]
    else:
        sides.append(Target(base_label, [*base_gate, *args.baseline_option, "--upstream", url],
                            root=baseline_tree(ref)))
    results: dict[str, dict[str, list[dict]]] = {}
    try:
        for side in sides:
            if side.process is None:
                side.start()
        for round_no in range(args.rounds):
            if not args.json:
                print(f"round {round_no + 1}: load average {machine()['loadavg']}", flush=True)
            for traffic in ("session", "sessionless"):
                for concurrency in args.concurrency:
                    for side in sides if round_no % 2 == 0 else sides[::-1]:
                        before = cpu_seconds(side.process.pid)
                        result = await asyncio.wait_for(
                            load(side.url, concurrency, args.duration, args.warmup, traffic=traffic),
                            args.duration + args.warmup + 30)
                        result["cpu_us_per_call"] = (cpu_seconds(side.process.pid) - before) * 1e6 / result["calls"]
                        results.setdefault(side.label, {}).setdefault(f"{traffic} c={concurrency}", []).append(result)
    finally:
        for target in {id(t): t for t in [*sides, upstream]}.values():
            target.stop()
    return {"rounds": args.rounds, "floor": args.floor, "sides": [side.label for side in sides], "results": results,
            "gates": " ".join(answer_mode(args)) or "in the default mode", "interpreters": interpreters,
            "loadavg_after": machine()["loadavg"]}


async def sequential_calls(url: str, traffic: str, calls: int) -> None:
    """CALLS tools/call one after another on one connection (a session opened first, unless sessionless)."""
    session = (await open_session(url))[3] if traffic == "session" else {"mcp-protocol-version": SESSIONLESS}
    conn = Conn(*split_url(url))
    params: dict = {"name": "echo", "arguments": {"text": "hello"}}
    if traffic == "sessionless":
        params["_meta"] = ENVELOPE
    try:
        for request_id in range(1, calls + 1):
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            status, _, messages = await conn.post(body, {**session, "mcp-method": "tools/call", "mcp-name": "echo"})
            assert status == 200 and "result" in messages[-1], (status, messages)
    finally:
        conn.close()


def answer_mode(args: argparse.Namespace) -> list[str]:
    """The gates' answer option in an A/B: --json-response, unless --default-mode asks for the default."""
    return [] if args.default_mode else ["--json-response"]


def gate_instructions(root: Path, upstream_url: str, traffic: str, calls: int, options: list[str]) -> int:
    """Instructions a gate (of the tree at ROOT) executes under cachegrind: start-up, 5 calls, CALLS calls, exit."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                   sys.executable, "-m", "proxy", "--quiet", "--listen", "http://127.0.0.1:0", *options,
                   "--upstream", upstream_url]
        env = dict(os.environ, PYTHONHASHSEED="0",
                   PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        process = subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        try:
            url = None
            for line in process.stderr:
                if match := LISTENING.search(line):
                    url = match.group(1)
                    break
            if url is None:
                raise RuntimeError(f"the gate of {root} exited under valgrind before listening")
            asyncio.run(sequential_calls(url, traffic, 5))  # the first calls' one-off work, the same for any CALLS
            asyncio.run(sequential_calls(url, traffic, calls))
            process.terminate()
            process.stderr.read()
            process.wait(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        return int(next(line for line in out.read_text().splitlines() if line.startswith("summary:")).split()[1])


def instructions_ab(args: argparse.Namespace) -> dict:
    """Instructions per call of this tree's gate and REF's: two runs each (few and many calls), the difference.

    Deterministic where CPU time on a shared machine is not: the same
    requests cost the same instructions whatever else the machine does.
    """
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions counts with valgrind, which is not on PATH (apt-get install valgrind)")
    upstream = Target("direct json", [sys.executable, "-c", HTTP_SERVER, "json"])
    url = upstream.start()
    few, many = 40, 40 + args.instruction_calls
    report: dict[str, dict[str, float]] = {}
    try:
        for label, root in (("this tree", ROOT), (args.baseline_ref, baseline_tree(args.baseline_ref))):
            for traffic in ("session", "sessionless"):
                counts = [gate_instructions(root, url, traffic, n, answer_mode(args)) for n in (few, many)]
                report.setdefault(label, {})[traffic] = (counts[1] - counts[0]) / (many - few)
                if not args.json:
                    print(f"{label:>14} {traffic:12} {report[label][traffic]:>12,.0f} instructions per call",
                          flush=True)
    finally:
        upstream.stop()
    return report


async def list_tools_once(url: str, session: dict[str, str]) -> int:
    """One tools/list in a session, as a client makes before its first call; the number of tools."""
    conn = Conn(*split_url(url))
    try:
        status, _, messages = await conn.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                              {**session, "mcp-method": "tools/list"})
    finally:
        conn.close()
    assert status == 200 and "tools" in messages[-1].get("result", {}), (status, messages)
    return len(messages[-1]["result"]["tools"])


async def open_sessions(args: argparse.Namespace) -> dict:
    """Open a session, list its tools, close it, N times: direct json, this tree's gate in front of it (and REF's).

    A session through the gate is an upstream session too (its own HTTP
    client, initialize, the GET stream, DELETE at the end), so this is what
    a client that opens a session per conversation pays. Targets take turns
    per round of ten sessions, each target's CPU read from /proc/PID/stat.
    """
    python = sys.executable
    catalog = [str(args.catalog)] if args.catalog else []
    upstream = Target("direct json", [python, "-c", HTTP_SERVER, "json", *catalog])
    url = upstream.start()
    gate = [python, "-m", "proxy", "--quiet", "--listen", "http://127.0.0.1:0", "--json-response", "--upstream", url]
    targets = [upstream, Target("gate json -> http json", gate)]
    if args.baseline_ref:
        targets.append(Target(f"gate of {args.baseline_ref}", gate, root=baseline_tree(args.baseline_ref)))
    times: dict[str, list[float]] = {t.label: [] for t in targets}
    cpu: dict[str, float] = {t.label: 0.0 for t in targets}
    try:
        for target in targets[1:]:
            target.start()
        for target in targets:  # a first session each, outside the figures (imports, TLS set-up, connections)
            await close_session(target.url, (await open_session(target.url))[3])
        for round_no in range((args.open_sessions + 9) // 10):
            for target in targets if round_no % 2 == 0 else targets[::-1]:
                before = cpu_seconds(target.process.pid)
                for _ in range(10):
                    start = time.perf_counter()
                    session = (await open_session(target.url))[3]
                    await list_tools_once(target.url, session)
                    times[target.label].append(time.perf_counter() - start)
                    await close_session(target.url, session)
                cpu[target.label] += cpu_seconds(target.process.pid) - before
    finally:
        for target in targets:
            target.stop()
    return {label: {"median_ms": statistics.median(values) * 1000,
                    "p90_ms": sorted(values)[int(len(values) * 0.9)] * 1000,
                    "cpu_ms_per_session": cpu[label] * 1000 / len(values), "sessions": len(values)}
            for label, values in times.items()}


def print_open_sessions(report: dict) -> None:
    print(f"{'':26}{'to tools/list ms':>18}{'p90 ms':>10}{'CPU ms per session':>20}")
    for label, row in report.items():
        print(f"{label:26}{row['median_ms']:>18.2f}{row['p90_ms']:>10.2f}{row['cpu_ms_per_session']:>20.2f}")
    direct = report["direct json"]
    for label, row in list(report.items())[1:]:
        print(f"{label}: a session to its first listing takes {row['median_ms'] / direct['median_ms']:.1f}x "
              f"direct json's time (median), {row['cpu_ms_per_session'] / direct['cpu_ms_per_session']:.1f}x its "
              "CPU (open, list and close, each process's own)")


def print_instructions(report: dict) -> None:
    this, base = report
    for traffic in ("session", "sessionless"):
        print(f"{traffic}: this tree's gate executes {report[this][traffic] / report[base][traffic]:.3f}x "
              f"the instructions per call of {base}'s")


def print_ab(report: dict) -> None:
    this, base = report["sides"][:2]

    def spread(values: list[float], fmt: str) -> str:
        return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"

    against = "a byte relay and the server itself" if report.get("floor") else base
    print(f"\nthis tree against {against}, gate {report['gates']} in front of \"direct json\", "
          f"{report['rounds']} alternating rounds; median [min-max] over rounds")
    print(f"{'':22}{'side':>12}{'req/s':>18}{'median ms':>22}{'CPU us/call':>24}")
    for row in report["results"][this]:
        for side in report["sides"]:
            runs = report["results"][side][row]
            print(f"{row:22}{side[:12]:>12}{spread([r['rps'] for r in runs], '.0f'):>18}"
                  f"{spread([r['median_ms'] for r in runs], '.2f'):>22}"
                  f"{spread([r['cpu_us_per_call'] for r in runs], '.0f'):>24}")
        ratios = [a["cpu_us_per_call"] / b["cpu_us_per_call"]
                  for a, b in zip(report["results"][this][row], report["results"][base][row])]
        print(f"{row:22}{'CPU ratio':>12}{'':>18}{'':>22}{spread(ratios, '.2f') + 'x':>24}")
        if report.get("floor"):
            direct = report["sides"][2]
            for side in (this, base):
                rounds = list(zip(report["results"][side][row], report["results"][direct][row]))
                added = [a["median_ms"] - d["median_ms"] for a, d in rounds]
                share = [100 * a["rps"] / d["rps"] for a, d in rounds]
                print(f"{row:22}{side[:12]:>12} adds {spread(added, '.3f')} ms median latency over {direct}, "
                      f"{spread(share, '.0f')}% of its req/s (per round)")
    print(f"load average after: {report['loadavg_after']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per target and concurrency")
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--mcp-proxy", metavar="PATH", help="an mcp-proxy executable (e.g. from a venv with mcp<2)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--replicas", type=int, default=0, metavar="N",
                        help="also compare 1 gate with N gates behind haproxy (needs --haproxy)")
    parser.add_argument("--haproxy", metavar="PATH", help="the haproxy executable for --replicas")
    parser.add_argument("--scale-only", action="store_true", help="with --replicas: only direct and the scale-out rows")
    parser.add_argument("--baseline-ref", metavar="REF",
                        help="instead of the rows above: this tree's gate against the gate of commit REF (a git "
                        "worktree under the system temp directory), session and sessionless traffic, "
                        "--rounds alternating rounds, with each gate's CPU time per call")
    parser.add_argument("--rounds", type=int, default=5, help="with --baseline-ref: alternating rounds")
    parser.add_argument("--gate-option", action="append", default=[], metavar="OPTION",
                        help="with --baseline-ref: pass OPTION to this tree's gate (write --gate-option=--x=y)")
    parser.add_argument("--baseline-option", action="append", default=[], metavar="OPTION",
                        help="with --baseline-ref: pass OPTION to REF's gate")
    parser.add_argument("--baseline-python", metavar="PATH",
                        help="with --baseline-ref: run REF's gate with this Python (its environment must have the "
                        "project's dependencies, e.g. a venv with pip install -e .); with REF=HEAD this compares "
                        "two interpreters on the same code")
    parser.add_argument("--floor", action="store_true",
                        help="instead of the rows above: this tree's gate against a byte relay built from the "
                        "gate's own HTTP parts, and \"direct json\" itself, in turns (--rounds, CPU per call): "
                        "what the gate adds beyond the cost of relaying over HTTP at all")
    parser.add_argument("--default-mode", action="store_true",
                        help="with --baseline-ref: run both gates without --json-response, as a gate runs by "
                        "default (each POST's answer may become an SSE stream)")
    parser.add_argument("--instructions", action="store_true",
                        help="with --baseline-ref: instructions per tools/call of each gate under valgrind's "
                        "cachegrind (c=1, session and sessionless), instead of CPU time")
    parser.add_argument("--instruction-calls", type=int, default=200, metavar="N",
                        help="with --instructions: calls in the longer of the two runs per gate, beyond the shorter's")
    parser.add_argument("--open-sessions", type=int, default=0, metavar="N",
                        help="instead of the rows above: open a session, list its tools and close it, N times, "
                        "through direct json and the gate in front of it (and REF's gate with --baseline-ref): "
                        "time to a first listing, CPU per session")
    parser.add_argument("--catalog", type=Path, metavar="FILE",
                        help="with --open-sessions: the benchmark server also lists this captured catalog's tools "
                        "(e.g. fixtures/catalogs/mcp-gitlab-zereight.json)")
    args = parser.parse_args()

    def emit(report: dict, show) -> int:
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            show(report)
        return 0

    if args.open_sessions:
        return emit(asyncio.run(open_sessions(args)), print_open_sessions)
    if args.instructions:
        if not args.baseline_ref:
            parser.error("--instructions compares with --baseline-ref REF (REF may be HEAD)")
        return emit(instructions_ab(args), print_instructions)
    if args.floor and (args.baseline_ref or args.baseline_python or args.baseline_option):
        parser.error("--floor compares this tree's gate with a byte relay; leave out --baseline-ref, "
                     "--baseline-python and --baseline-option")
    if args.baseline_ref or args.floor:
        return emit(asyncio.run(ab(args)), print_ab)
    if args.replicas and not args.haproxy:
        parser.error("--replicas needs --haproxy PATH (e.g. /usr/sbin/haproxy)")
    if args.scale_only and not args.replicas:
        parser.error("--scale-only goes with --replicas N")
    report = asyncio.run(run(args))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print()
    print(f"{'':24}" + "".join(f"{'c=' + c + ' req/s':>14}{'median ms':>11}" for c in map(str, args.concurrency)))

    def cell(rows: dict, c: int) -> str:
        row = rows.get(str(c))
        return f"{row['rps']:>14.0f}{row['median_ms']:>11.2f}" if row else f"{'failed':>14}{'':>11}"

    rows_only = {label: rows for label, rows in report.items() if label != "machine"}
    width = max([24, *map(len, rows_only)]) + 1
    for label, rows in rows_only.items():
        print(f"{label:{width}}" + "".join(cell(rows, c) for c in args.concurrency))
    for label in rows_only:
        if label.endswith(("(sessions)", "(sessionless)")):
            continue  # compared below, with their own baselines
        if label.endswith("[sessionless]"):
            baselines = ["direct json [sessionless]"] if "direct json [sessionless]" in report else []
        else:
            baselines = ["direct"] + (["direct json"] if " json " in label and "direct json" in report else [])
        for baseline in baselines:
            if label in baselines:
                continue
            base = report[baseline]
            shares = ", ".join(f"c={c}: {report[label][str(c)]['rps'] / base[str(c)]['rps']:.0%}"
                               for c in args.concurrency if str(c) in report[label] and str(c) in base)
            print(f"{label} throughput as a share of {baseline}: {shares}")
    if "machine" in report:
        print_scale_out(report, args.concurrency)
    return 0


def print_scale_out(report: dict, concurrency: list[int]) -> None:
    """N gates behind haproxy against one gate, per kind of traffic, with what the machine had to give."""
    info = report["machine"]
    n = info["replicas"]
    print(f"\nscale-out, {n} gates behind haproxy vs 1 gate (throughput ratio):")
    for traffic in ("sessions", "sessionless"):
        many = report.get(f"haproxy -> {n} gates ({traffic})", {})
        for baseline in (f"1 gate ({traffic})", f"haproxy -> 1 gate ({traffic})"):
            base = report.get(baseline, {})
            ratios = ", ".join(f"c={c}: {many[str(c)]['rps'] / base[str(c)]['rps']:.2f}x"
                               for c in concurrency if str(c) in many and str(c) in base)
            print(f"  {traffic:12} vs {baseline:34} {ratios or 'no rows (failed)'}")
    print(f"machine: {info['cpus']} CPUs for the upstream, {n} gates, haproxy and the load generator; "
          f"load average (1, 5, 15 min) {info['loadavg_start']} before the scale-out rows, {info['loadavg']} "
          "after (other work on this machine counts too).")
    if info["cpus"] <= n:
        print(f"  With {info['cpus']} CPUs, {n} gates cannot run in parallel next to the rest: a ratio near or "
              "below 1x here measures this machine, not how the gate scales on separate hosts.")


if __name__ == "__main__":
    raise SystemExit(main())
