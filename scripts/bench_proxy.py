"""Benchmark: tools/call round trip, direct vs through mcp-schema-gate, in one run.

A minimal line-level JSON-RPC client (no SDK client overhead on the measuring
side) drives, over real pipes:
  direct   - the benchmark upstream server (the SDK's lowlevel Server on stdio)
  proxied  - `python -m proxy -- <the same server>`
and, through the proxy, calls the gate rejects (they never reach the server);
  relay    - a byte-copying relay on uvloop (RELAY below; --no-relay leaves it out): what any
             relay in a process of its own costs, the floor under the gate's added latency and CPU
Calls are sequential (one in flight), after a warm-up. Prints median and p99
in milliseconds and the ratios, and the gate's own CPU time per call (user +
system of the gate process, read from /proc/PID/stat around the measured
calls; Linux only).

`--baseline-ref REF` also runs the gate of commit REF (checked out once into a
`git worktree` under the system temp directory) in the same rounds, so the
two are compared under the same load. Within a round every side's process
stays up and the sides take turns every `--block` calls; the CPU figure per
round is the sum over that side's blocks. `/proc/loadavg` is printed at each
round.

    .venv/bin/python scripts/bench_proxy.py [--calls 2000] [--warmup 200] [--json]
    .venv/bin/python scripts/bench_proxy.py --calls 1500 --warmup 200 --rounds 3 --baseline-ref bd7450d
    .venv/bin/python scripts/bench_proxy.py --instructions [--baseline-ref REF]   (cachegrind counts per call)
    .venv/bin/python scripts/bench_proxy.py --structured --gate-option=--check-output=warn   (gate options, outputs)
    .venv/bin/python scripts/bench_proxy.py --http [--duration 3] [--mcp-proxy PATH]   (HTTP listen mode)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = r'''
import anyio, os, mcp_types as types
BARE = os.environ.get("BENCH_BARE_UPSTREAM") == "1"
STRUCTURED = os.environ.get("BENCH_STRUCTURED") == "1"
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
OUTPUT = {"type": "object", "properties": {"text": {"type": "string", "minLength": 1}}, "required": ["text"],
          "additionalProperties": False} if STRUCTURED else None
TOOL = types.Tool(name="echo", input_schema={"type": "object", "properties": {"text": {"type": "string", "minLength": 1}},
                                              "required": ["text"], "additionalProperties": False}, output_schema=OUTPUT)
async def list_tools(ctx, params): return types.ListToolsResult(tools=[TOOL])
async def call_tool(ctx, params):
    text = params.arguments["text"]
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content={"text": text} if STRUCTURED else None)
async def main():
    server = Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)
    if BARE: server.middleware.clear()  # --bare-upstream: without the SDK's default OpenTelemetry middleware
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())
anyio.run(main)
'''


# The floor of any relay in its own process: bytes copied between the pipes as they arrive,
# on uvloop (as the gate runs), no parsing, no checks. What a relay adds that this one adds
# too is the price of a second process on the path (two more pipe hops and wake-ups).
RELAY = r'''
import asyncio, os, subprocess, sys
async def main():
    loop = asyncio.get_running_loop()
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    done = loop.create_future()
    class Copy(asyncio.Protocol):
        def __init__(self, out): self.out = out
        def data_received(self, data): self.out.write(data)
        def connection_lost(self, exc):
            if not done.done(): done.set_result(None)
    to_client, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(1, "wb", 0))
    to_child, _ = await loop.connect_write_pipe(asyncio.Protocol, child.stdin)
    await loop.connect_read_pipe(lambda: Copy(to_child), os.fdopen(0, "rb", 0))
    await loop.connect_read_pipe(lambda: Copy(to_client), child.stdout)
    await done
    child.stdin.close()
    child.wait()
try:
    import uvloop
    uvloop.run(main())
except ImportError:
    asyncio.run(main())
'''


class LineClient:
    def __init__(self, command: list[str], root: Path = ROOT) -> None:
        env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root, env=env,
            bufsize=0,
        )
        self.next_id = 0

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n"
        self.process.stdin.write(line.encode())
        while True:
            reply = json.loads(self.process.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def start(self) -> None:
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process (all its threads, not its children), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def run_seconds(pid: int) -> float:
    """Time on a CPU of one process's threads, in ns resolution, from /proc/PID/task/*/schedstat."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def measure(client: LineClient, arguments: dict, calls: int, warmup: int, expect_error: bool,
            cpu: list[float] | None = None) -> list[float]:
    """Round-trip times in ms; with `cpu`, appends the process's CPU seconds spent on the measured calls.

    Two figures: user + system time from /proc/PID/stat (clock ticks, 10 ms
    each, so a block of calls is charged whole ticks, right on average), and
    the run time from schedstat (ns).
    """
    samples = []
    for i in range(warmup + calls):
        if i == warmup and cpu is not None:
            cpu_start = cpu_seconds(client.process.pid)
            run_start = run_seconds(client.process.pid)
        start = time.perf_counter()
        reply = client.request("tools/call", {"name": "echo", "arguments": arguments})
        elapsed = time.perf_counter() - start
        assert reply["result"].get("isError", False) is expect_error, reply
        if i >= warmup:
            samples.append(elapsed * 1000)
    if cpu is not None:
        cpu.append(cpu_seconds(client.process.pid) - cpu_start)
        cpu.append(run_seconds(client.process.pid) - run_start)
    return samples


def baseline_tree(ref: str) -> Path:
    """A git worktree of `ref` (made once, reused): the previous gate, run beside the current one."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"mcp-schema-gate-bench-{commit[:12]}"
    if not (path / "proxy").is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), commit], cwd=ROOT, check=True,
                       capture_output=True)
    return path


def rejected_label(label: str) -> str:
    return "rejected" if label == "proxied" else f"rejected-{label}"


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_ms": statistics.median(ordered), "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]}


def instructions(command: list[str], root: Path, calls: int) -> int:
    """Instructions the process of COMMAND executes under cachegrind: start-up, 100 calls, CALLS calls, exit."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        client = LineClient(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                             *command], root)
        try:
            client.start()
            measure(client, {"text": "hello"}, calls, 100, False)
        finally:
            client.close()
        return int(next(line for line in out.read_text().splitlines() if line.startswith("summary:")).split()[1])


def instructions_main(args: argparse.Namespace) -> int:
    """Instructions per forwarded call: each side run twice (300 and 1,300 calls), the difference over 1,000."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions counts with valgrind, which is not on PATH (apt-get install valgrind)")
    os.environ["PYTHONHASHSEED"] = "0"  # the same dictionary layouts in every run
    server = [sys.executable, "-c", SERVER]
    gate = [sys.executable, "-m", "proxy", "--quiet", *args.gate_option, "--", *server]
    sides = [("this tree", gate, ROOT)]
    if args.baseline_ref:
        sides.append((args.baseline_ref, gate, baseline_tree(args.baseline_ref)))
    if not args.no_relay:
        sides.append(("byte relay", [sys.executable, "-c", RELAY, *server], ROOT))
    report = {}
    for label, command, root in sides:
        few, many = (instructions(command, root, n) for n in (300, 1300))
        report[label] = (many - few) / 1000
        if not args.json:
            print(f"{label:>14} {report[label]:>12,.0f} instructions per forwarded call", flush=True)
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.baseline_ref:
        print(f"this tree's gate executes {report['this tree'] / report[args.baseline_ref]:.3f}x "
              f"the instructions per call of {args.baseline_ref}'s")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="start every side anew this many times")
    parser.add_argument("--block", type=int, default=100,
                        help="calls each side makes before the next side's turn (interleaving within a round)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bare-upstream", action="store_true",
                        help="strip the SDK server's default (no-op) OpenTelemetry middleware: a faster baseline")
    parser.add_argument("--structured", action="store_true",
                        help="the echo tool declares an outputSchema and returns conforming structuredContent "
                        "(what --check-output checks)")
    parser.add_argument("--gate-option", action="append", default=[], metavar="OPTION",
                        help="pass OPTION to the gate (repeatable; write it as --gate-option=--check-output=off)")
    parser.add_argument("--http", nargs=argparse.REMAINDER, metavar="...",
                        help="run the HTTP listen-mode benchmark instead (scripts/bench_proxy_http.py: req/s at "
                        "concurrency 1, 16, 64, direct vs gate vs FastMCP's proxy and mcp-proxy); "
                        "the remaining arguments go to it")
    parser.add_argument("--instructions", action="store_true",
                        help="count instead the instructions each gate (and the byte relay) executes per forwarded "
                        "call, under valgrind's cachegrind: exact where CPU time on a shared machine is not")
    parser.add_argument("--no-relay", action="store_true",
                        help="leave out the byte-copying relay (the floor of any relay in a process of its own)")
    parser.add_argument("--baseline-ref", metavar="REF",
                        help="also run the gate of git commit REF (from a git worktree), interleaved, for comparison")
    args = parser.parse_args()
    if args.http is not None:
        return subprocess.call([sys.executable, str(Path(__file__).with_name("bench_proxy_http.py")), *args.http])
    if args.instructions:
        return instructions_main(args)
    if args.bare_upstream:
        os.environ["BENCH_BARE_UPSTREAM"] = "1"
    if args.structured:
        os.environ["BENCH_STRUCTURED"] = "1"
    server = [sys.executable, "-c", SERVER]
    proxied_cmd = [sys.executable, "-m", "proxy", "--quiet", *args.gate_option, "--", *server]
    # (label, command, tree it runs from); a gate's label also names its rejected calls ("rejected" + suffix).
    sides: list[tuple[str, list[str], Path]] = [("direct", server, ROOT), ("proxied", proxied_cmd, ROOT)]
    if not args.no_relay:
        sides.append(("relay", [sys.executable, "-c", RELAY, *server], ROOT))
    if args.baseline_ref:
        sides.append(("baseline", proxied_cmd, baseline_tree(args.baseline_ref)))

    results: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}  # CPU seconds of the gate process per round (/proc/PID/stat)
    run: dict[str, list[float]] = {}  # the same from schedstat
    calls_per_round = args.calls
    # Interleave so that drift on a shared 2-core machine hits every side alike:
    # in each round every side's process is started and warmed up, then the
    # sides take turns, --block calls at a time (their order alternating).
    for round_no in range(args.rounds):
        if not args.json:
            print(f"round {round_no + 1}: load average {loadavg()}", flush=True)
        clients: dict[str, LineClient] = {}
        try:
            for label, command, root in sides:
                clients[label] = client = LineClient(command, root)
                client.start()
                measure(client, {"text": "hello"}, 0, args.warmup, False)
                if label == "relay":
                    cpu.setdefault(label, []).append(0.0)
                    run.setdefault(label, []).append(0.0)
                elif label != "direct":
                    measure(client, {"text": ""}, 0, args.warmup, True)
                    for name in (label, rejected_label(label)):
                        cpu.setdefault(name, []).append(0.0)
                        run.setdefault(name, []).append(0.0)
            done = 0
            while done < args.calls:
                block = min(args.block, args.calls - done)
                order = sides if (done // args.block) % 2 == 0 else sides[::-1]
                for label, _, _ in order:
                    client = clients[label]
                    gate = label != "direct"
                    spent: list[float] = []
                    results.setdefault(label, []).extend(measure(
                        client, {"text": "hello"}, block, 0, False, spent if gate else None))
                    if gate:
                        run[label][-1] += spent.pop()
                        cpu[label][-1] += spent.pop()
                    if gate and label != "relay":  # the relay checks nothing: every call reaches the server
                        results.setdefault(rejected_label(label), []).extend(measure(
                            client, {"text": ""}, block, 0, True, spent))
                        run[rejected_label(label)][-1] += spent.pop()
                        cpu[rejected_label(label)][-1] += spent.pop()
                done += block
        finally:
            for client in clients.values():
                client.close()
    load_after = loadavg()

    report: dict = {label: stats(samples) for label, samples in results.items()}
    for label, seconds in cpu.items():
        per_call = [s / calls_per_round * 1e6 for s in seconds]
        report[label]["cpu_us_per_call"] = sum(seconds) / (calls_per_round * len(seconds)) * 1e6
        report[label]["cpu_us_per_call_rounds"] = per_call
        report[label]["schedstat_us_per_call"] = sum(run[label]) / (calls_per_round * len(run[label])) * 1e6
    direct, proxied, rejected = report["direct"], report["proxied"], report["rejected"]
    report["added_median_ms"] = proxied["median_ms"] - direct["median_ms"]
    report["ratio_median"] = proxied["median_ms"] / direct["median_ms"]
    report["ratio_p99"] = proxied["p99_ms"] / direct["p99_ms"]
    report["rejected_vs_direct_median"] = rejected["median_ms"] / direct["median_ms"]
    report["calls_per_side"] = len(results["direct"])
    if args.baseline_ref:
        baseline = report["baseline"]
        report["baseline_ref"] = args.baseline_ref
        report["baseline_added_median_ms"] = baseline["median_ms"] - direct["median_ms"]
        report["cpu_ratio_vs_baseline"] = proxied["cpu_us_per_call"] / baseline["cpu_us_per_call"]
        report["schedstat_ratio_vs_baseline"] = proxied["schedstat_us_per_call"] / baseline["schedstat_us_per_call"]
    if "relay" in report:
        relay = report["relay"]
        report["relay_added_median_ms"] = relay["median_ms"] - direct["median_ms"]
        report["cpu_over_relay_us_per_call"] = proxied["cpu_us_per_call"] - relay["cpu_us_per_call"]
        report["schedstat_over_relay_us_per_call"] = proxied["schedstat_us_per_call"] - relay["schedstat_us_per_call"]
        if args.baseline_ref:
            report["baseline_schedstat_over_relay_us_per_call"] = (report["baseline"]["schedstat_us_per_call"]
                                                                   - relay["schedstat_us_per_call"])
    report["load_average_after"] = load_after
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"load average after: {load_after}")
    print(f"tools/call round trip, sequential, {report['calls_per_side']} calls per side "
          f"({args.rounds} rounds, sides taking turns every {args.block} calls)")
    print(f"{'':26}{'median ms':>10}{'p99 ms':>10}{'gate CPU us/call':>18}{'schedstat':>11}  (stat, per round)")
    rows = [("direct", "direct"), ("proxied", "through the proxy"), ("rejected", "rejected by the gate")]
    if "relay" in report:
        rows.append(("relay", "through a byte relay"))
    if args.baseline_ref:
        rows += [("baseline", f"through {args.baseline_ref}"),
                 ("rejected-baseline", f"rejected by {args.baseline_ref}")]
    for label, title in rows:
        row = report[label]
        cpu_text = ""
        if "cpu_us_per_call" in row:
            spread = ", ".join(f"{v:.0f}" for v in row["cpu_us_per_call_rounds"])
            cpu_text = f"{row['cpu_us_per_call']:>18.1f}{row['schedstat_us_per_call']:>11.1f}  ({spread})"
        print(f"{title:26}{row['median_ms']:>10.3f}{row['p99_ms']:>10.3f}{cpu_text}")
    print(f"added median latency: {report['added_median_ms']:.3f} ms")
    if "relay" in report:
        print(f"added median latency of the byte relay: {report['relay_added_median_ms']:.3f} ms")
        print(f"gate CPU per forwarded call beyond the byte relay's: {report['cpu_over_relay_us_per_call']:.1f} us "
              f"(schedstat: {report['schedstat_over_relay_us_per_call']:.1f} us)"
              + (f"; {args.baseline_ref}'s: {report['baseline_schedstat_over_relay_us_per_call']:.1f} us (schedstat)"
                 if args.baseline_ref else ""))
    if args.baseline_ref:
        print(f"added median latency of {args.baseline_ref}: {report['baseline_added_median_ms']:.3f} ms")
        print(f"gate CPU per forwarded call against {args.baseline_ref}: {report['cpu_ratio_vs_baseline']:.2f}x "
              f"(schedstat: {report['schedstat_ratio_vs_baseline']:.2f}x)")
    print(f"ratio proxied/direct: median {report['ratio_median']:.2f}x, p99 {report['ratio_p99']:.2f}x")
    print(f"ratio rejected/direct median: {report['rejected_vs_direct_median']:.2f}x")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
