"""Gate replicas behind HAProxy (docs/deploy.md), with real processes: haproxy, N gates, one upstream.

Each replica tells the upstream who it is (`--upstream-header 'X-Gate-Replica: rN'`,
recorded by tests/proxy_http/http_upstream_server.py), and counts what it did in its
own GET /metrics, read directly (not through haproxy). The two views are compared.

- Session traffic (initialize handshake, Mcp-Session-Id) sticks to the replica that
  answered the initialize (haproxy's stick table on the header).
- A killed replica is taken out by the /healthz checks; its sessions' next requests
  get 404 from another replica (the client starts a new session); a replica whose
  upstream is unreachable is taken out although its process is up.
- Sessionless 2026-07-28 traffic is spread round robin over every replica, valid calls
  are answered by the upstream and invalid ones by the gate, and after a replica is
  killed the rest answer everything.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import socket
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2

from tests.proxy.conftest import environment, records
from tests.proxy_http.conftest import (SESSIONLESS_VERSION, Proc, answer_messages, client_for, http_gate,
                                       http_upstream, raw_client, spawn)
from tests.proxy_http.conftest import sessionless_request as sessionless
from scripts.bench_proxy_http import haproxy_config
from tests.support.haproxy import haproxy_binary

VERSION = SESSIONLESS_VERSION
REFUSAL = "io.github.mcp-schema-gate/refusal"
STATS = "/haproxy-stats"
# Checks every 300 ms, down after 2 failures: a dead replica is out within about a second.
CHECK = "check inter 300ms fall 2 rise 2"


@dataclass
class Replica:
    name: str
    endpoint: str  # http://127.0.0.1:PORT/mcp, direct (not through haproxy)
    proc: Proc

    @property
    def base(self) -> str:
        return self.endpoint.rsplit("/", 1)[0]

    @property
    def address(self) -> str:
        return self.base.removeprefix("http://")

    def kill(self) -> None:
        os.kill(self.proc.process.pid, signal.SIGKILL)

    async def counted(self) -> dict[str, float]:
        """This replica's calls forwarded and refused, from its own /metrics."""
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(10.0)) as http:
            text = (await http.get(f"{self.base}/metrics")).text
        totals = {"forwarded": 0.0, "refused": 0.0, "sessions": 0.0}
        for line in text.splitlines():
            if match := re.match(r"mcp_schema_gate_calls_(forwarded|refused)_total\{[^}]*\} (\S+)$", line):
                totals[match.group(1)] += float(match.group(2))
            elif match := re.match(r"mcp_schema_gate_sessions_open (\S+)$", line):
                totals["sessions"] = float(match.group(1))
        return totals


def free_port() -> int:
    """A port the OS picked for 127.0.0.1 (haproxy cannot report one it picks itself)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def gates_config(port: int, replicas: list[Replica]) -> str:
    """The configuration of docs/deploy.md, on 127.0.0.1, with fast checks and a stats page for the test."""
    servers = "\n".join(f"    server {r.name} {r.address} {CHECK}" for r in replicas)
    stats = f"    stats enable\n    stats uri {STATS}\n"
    return haproxy_config(port, servers, frontend_extra=stats, maxconn=1024)


class Balancer:
    def __init__(self, url: str, proc: Proc) -> None:
        self.url = url  # http://127.0.0.1:PORT/mcp
        self.proc = proc

    async def states(self) -> dict[str, str]:
        """Each gate server's status as haproxy sees it (UP, DOWN, ...)."""
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(10.0)) as http:
            text = (await http.get(self.url.replace("/mcp", f"{STATS};csv"))).text
        rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
        return {row["svname"]: row["status"] for row in rows
                if row["pxname"] == "gates" and row["svname"] not in ("BACKEND", "FRONTEND")}

    async def until(self, wanted: dict[str, str], timeout: float = 15.0) -> dict[str, str]:
        seen: dict[str, str] = {}
        with anyio.move_on_after(timeout):
            while True:
                seen = await self.states()
                if all(seen.get(name, "").split(" ")[0] == state for name, state in wanted.items()):
                    return seen
                await anyio.sleep(0.1)
        raise AssertionError(f"haproxy did not reach {wanted}: {seen}\n{self.proc.stderr.decode(errors='replace')}")


@asynccontextmanager
async def scaled_out(record: Path, tmp_path: Path, count: int = 3, upstreams: list[str | None] | None = None):
    """(Balancer, [Replica]): `count` gates before the recording upstream, haproxy before them, all checks UP.

    `upstreams` overrides a replica's --upstream URL (None: the shared recording server).
    """
    binary = haproxy_binary()
    async with AsyncExitStack() as stack:
        shared = f"{await stack.enter_async_context(http_upstream(record))}/mcp"
        replicas = []
        for n in range(count):
            name = f"r{n + 1}"
            upstream = (upstreams or [None] * count)[n] or shared
            endpoint, proc = await stack.enter_async_context(
                http_gate(record, "http", upstream, "--upstream-header", f"X-Gate-Replica: {name}"))
            replicas.append(Replica(name, endpoint, proc))
        port = free_port()
        config = tmp_path / "haproxy.cfg"
        config.write_text(gates_config(port, replicas))
        proc = await stack.enter_async_context(spawn([str(binary), "-f", str(config), "-db"], environment(record)))
        balancer = Balancer(f"http://127.0.0.1:{port}/mcp", proc)
        with anyio.fail_after(15):
            while True:
                try:
                    await balancer.states()
                    break
                except httpx2.TransportError:
                    if proc.process.returncode is not None:
                        raise AssertionError(f"haproxy exited: {proc.stderr.decode(errors='replace')}") from None
                    await anyio.sleep(0.05)
        yield balancer, replicas


def forwarded_by(record: Path) -> dict[str, int]:
    """tools/call POSTs the upstream received, per replica (the X-Gate-Replica header)."""
    counts: dict[str, int] = {}
    for post in records(record, "post"):
        if post["method"] == "tools/call":
            counts[post["via"]] = counts.get(post["via"], 0) + 1
    return counts


def invalid(n: int) -> bool:
    return n % 4 == 0


async def call_through(http: httpx2.AsyncClient, url: str, n: int) -> tuple[int, dict]:
    """Call n: every fourth one invalid (an empty text, minLength 1); (n, its JSON-RPC answer).

    Not every third: round robin over three replicas would send every invalid call to the same one.
    """
    text = "" if invalid(n) else f"call {n}"
    body, headers = sessionless(n, "tools/call", {"name": "echo", "arguments": {"text": text}})
    reply = await http.post(url, content=json.dumps(body), headers=headers)
    assert reply.status_code == 200, reply.text
    return n, answer_messages(reply)[-1]


def check_answer(n: int, message: dict) -> None:
    assert message["id"] == n
    result = message["result"]
    if invalid(n):
        assert result["isError"] and result["_meta"][REFUSAL]["keyword"] == "minLength", result
    else:
        assert not result.get("isError") and result["content"][0]["text"] == f"call {n}", result


async def calls_through(url: str, numbers: range, concurrency: int = 6) -> None:
    answers: dict[int, dict] = {}
    limiter = anyio.Semaphore(concurrency)

    async def one(n: int) -> None:
        async with limiter:
            number, message = await call_through(http, url, n)
            answers[number] = message

    async with raw_client() as http:
        async with anyio.create_task_group() as tg:
            for n in numbers:
                tg.start_soon(one, n)
    assert sorted(answers) == list(numbers)
    for n, message in answers.items():
        check_answer(n, message)


async def test_session_traffic_sticks_to_the_replica_that_answered_its_initialize(
        record: Path, tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with scaled_out(record, tmp_path) as (balancer, replicas):
            await balancer.until({r.name: "UP" for r in replicas})
            used = []
            for s in range(3):
                before = {r.name: await r.counted() for r in replicas}
                posts_before = len(records(record, "post"))
                async with client_for("http", balancer.url, mode="legacy") as client:
                    assert client.protocol_version == "2025-11-25"
                    for i in range(6):
                        result = await client.call_tool("echo", {"text": f"s{s} c{i}" if i % 2 else ""})
                        assert result.is_error == (i % 2 == 0)
                after = {r.name: await r.counted() for r in replicas}
                changed = [name for name in after
                           if (after[name]["forwarded"], after[name]["refused"])
                           != (before[name]["forwarded"], before[name]["refused"])]
                assert len(changed) == 1, (before, after)  # one replica served every call of the session
                served = changed[0]
                assert after[served]["forwarded"] - before[served]["forwarded"] == 3
                assert after[served]["refused"] - before[served]["refused"] == 3
                # The upstream's view: every request of the session came through that same replica.
                via = {p["via"] for p in records(record, "post")[posts_before:]}
                assert via == {served}, via
                used.append(served)
    # Each initialize is a new round-robin pick, so three sessions land on three replicas.
    assert sorted(used) == ["r1", "r2", "r3"], used


async def initialize(http: httpx2.AsyncClient, url: str) -> str:
    """A raw initialize handshake through haproxy; the session id."""
    reply = await http.post(url, content=json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "haproxy-test", "version": "0"}}}))
    assert reply.status_code == 200, reply.text
    session = reply.headers["mcp-session-id"]
    done = await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                           headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
    assert done.status_code == 202, done.text
    return session


async def list_in(http: httpx2.AsyncClient, url: str, session: str) -> httpx2.Response:
    return await http.post(url, content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                           headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})


async def test_a_killed_replica_is_taken_out_and_its_sessions_must_start_again(
        record: Path, tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with scaled_out(record, tmp_path) as (balancer, replicas):
            await balancer.until({r.name: "UP" for r in replicas})
            async with raw_client() as http:
                session = await initialize(http, balancer.url)
                assert (await list_in(http, balancer.url, session)).status_code == 200
                holders = [r for r in replicas if (await r.counted())["sessions"] == 1]
                assert len(holders) == 1
                holder = holders[0]
                holder.kill()
                states = await balancer.until({holder.name: "DOWN",
                                               **{r.name: "UP" for r in replicas if r is not holder}})
                # Replicas share nothing: another one does not know the session, and says so (404: start anew).
                lost = await list_in(http, balancer.url, session)
                assert lost.status_code == 404, (lost.status_code, lost.text, states)
                fresh = await initialize(http, balancer.url)
                assert (await list_in(http, balancer.url, fresh)).status_code == 200
                for _ in range(6):
                    assert (await list_in(http, balancer.url, fresh)).status_code == 200


async def test_a_replica_whose_upstream_is_unreachable_is_taken_out_while_its_process_runs(
        record: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    with anyio.fail_after(120):
        async with scaled_out(record, tmp_path, count=2, upstreams=[None, nowhere]) as (balancer, replicas):
            await balancer.until({"r1": "UP", "r2": "DOWN"})
            assert replicas[1].proc.process.returncode is None
            await calls_through(balancer.url, range(1, 13))
            assert set(forwarded_by(record)) == {"r1"}
            assert (await replicas[1].counted())["forwarded"] == 0


async def test_sessionless_calls_are_spread_over_every_replica_and_survive_losing_one(
        record: Path, tmp_path: Path) -> None:
    with anyio.fail_after(180):
        async with scaled_out(record, tmp_path) as (balancer, replicas):
            await balancer.until({r.name: "UP" for r in replicas})
            await calls_through(balancer.url, range(1, 61))
            counted = {r.name: await r.counted() for r in replicas}
            # Every replica took a share, and together they decided each of the 60 calls exactly once.
            assert all(c["forwarded"] + c["refused"] > 0 for c in counted.values()), counted
            assert sum(c["forwarded"] for c in counted.values()) == 45
            assert sum(c["refused"] for c in counted.values()) == 15
            # The upstream saw the 45 valid ones, each from the replica that counted it.
            assert forwarded_by(record) == {name: int(c["forwarded"]) for name, c in counted.items()
                                            if c["forwarded"]}, (forwarded_by(record), counted)
            calls_before = forwarded_by(record)

            victim = replicas[0]
            victim.kill()
            await balancer.until({victim.name: "DOWN", **{r.name: "UP" for r in replicas[1:]}})
            await calls_through(balancer.url, range(61, 91))
            after = {r.name: await r.counted() for r in replicas[1:]}
            grown = {name: after[name]["forwarded"] + after[name]["refused"]
                     - counted[name]["forwarded"] - counted[name]["refused"] for name in after}
            assert sum(grown.values()) == 30 and all(g > 0 for g in grown.values()), grown
            now = forwarded_by(record)
            assert now.get(victim.name, 0) == calls_before.get(victim.name, 0)
            assert sum(now.values()) == 45 + 23

            # The SDK's own client, negotiating 2026-07-28 through haproxy, works as against one gate.
            async with client_for("http", balancer.url, mode="auto") as client:
                assert client.protocol_version == VERSION
                assert (await client.call_tool("echo", {"text": "via haproxy"})).content[0].text == "via haproxy"
                refused = await client.call_tool("echo", {"text": 5})
                assert refused.is_error and refused.structured_content["keyword"] == "type"
