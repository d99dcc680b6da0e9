"""Synchronous drivers for one long-lived gate process in front of tests/proxy/recording_upstream.py.

Synchronous on purpose: hypothesis drives one example at a time against a gate
started once per module (starting a gate per example would cost a second each).
Both drivers offer the same `exchange(raw)`: send one raw client frame, then a
`ping` barrier, and return the JSON-RPC messages the client got for the frame
and the lines the upstream recorded meanwhile. The upstream handles lines in
order and records a line before answering it, so once the barrier's answer is
back every line the frame caused is on disk.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parents[2]
RECORDING_UPSTREAM = str(Path(__file__).with_name("recording_upstream.py"))
LISTENING = re.compile(r"listening on (http://\S+)")
PROTOCOL_VERSION = "2025-11-25"
GRACE = float(os.environ.get("WIRE_REPLY_GRACE", "0.5"))  # extra wait for a reply still missing after the barrier


def gate_env(record: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["RECORDING_UPSTREAM_FILE"] = str(record)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def recorded_lines(record: Path) -> list[bytes]:
    if not record.exists():
        return []
    rows = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    return [base64.b64decode(row["b64"]) for row in rows]


def same_id(a: Any, b: Any) -> bool:
    """JSON-RPC ids compare with their type: "7" is not 7, true is not 1, 1.0 is not 1."""
    return type(a) is type(b) and a == b


def replies_to(messages: list[dict], request_id: Any) -> list[dict]:
    return [m for m in messages if isinstance(m, dict) and "method" not in m and "id" in m
            and same_id(m["id"], request_id)]


@dataclass
class Exchange:
    frame: bytes
    messages: list[dict]  # what the client got for this frame (the barrier's answer left out)
    upstream: list[bytes]  # what the upstream received meanwhile (the barrier left out)
    http_status: int | None = None
    notes: list[str] = field(default_factory=list)


def _is_barrier(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and isinstance(message.get("id"), str) and message["id"].startswith("barrier-")


INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
              "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                         "clientInfo": {"name": "wire-harness", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
# A valid call: the gate holds it until its own tools/list is done, so its
# answer means the catalog is built and every later call is decided at once.
WARM_UP = {"jsonrpc": "2.0", "id": "warm-up", "method": "tools/call",
           "params": {"name": "read", "arguments": {"path": "/safe/warm-up"}}}


class StdioGate:
    """`python -m proxy -- python recording_upstream.py`, driven line by line."""

    def __init__(self, record: Path, *options: str) -> None:
        self.record = record
        command = [sys.executable, "-m", "proxy", *options, "--", sys.executable, RECORDING_UPSTREAM]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=gate_env(record), cwd=str(ROOT))
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = b""
        self._barriers = itertools.count(1)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: self.process.stderr.read1(65536), b""):
            self.stderr += chunk

    def send(self, raw: bytes | str | dict) -> None:
        data = json.dumps(raw).encode() if isinstance(raw, dict) else raw.encode() if isinstance(raw, str) else raw
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def next_message(self, timeout: float) -> dict | None:
        try:
            line = self.lines.get(timeout=max(timeout, 0))
        except queue.Empty:
            return None
        if line is None:
            raise RuntimeError(f"the gate closed its output: {self.stderr.decode(errors='replace')[-2000:]}")
        return json.loads(line)

    def collect_until(self, done, timeout: float) -> list[dict]:
        out: list[dict] = []
        deadline = time.monotonic() + timeout
        while not done(out):
            message = self.next_message(deadline - time.monotonic())
            if message is None:
                break
            out.append(message)
        return out

    def start(self) -> StdioGate:
        self.send(INITIALIZE)
        got = self.collect_until(lambda out: replies_to(out, "init"), 20)
        assert replies_to(got, "init") and "result" in replies_to(got, "init")[0], (got, self.stderr)
        self.send(INITIALIZED)
        self.send(WARM_UP)
        got = self.collect_until(lambda out: replies_to(out, "warm-up"), 20)
        assert replies_to(got, "warm-up"), (got, self.stderr)
        return self

    def exchange(self, frame: bytes, wait_for: list[Any] = ()) -> Exchange:
        """Send `frame`, then a ping barrier; `wait_for`: ids whose answer may come after the barrier's."""
        mark = len(recorded_lines(self.record))
        barrier = f"barrier-{next(self._barriers)}"
        self.send(frame)
        self.send({"jsonrpc": "2.0", "id": barrier, "method": "ping"})
        got = self.collect_until(lambda out: replies_to(out, barrier), 10)
        if not replies_to(got, barrier):
            raise RuntimeError(f"no answer to the barrier ping after {frame!r}: {self.stderr.decode(errors='replace')[-2000:]}")
        missing = [i for i in wait_for if not replies_to(got, i)]
        if missing:
            got += self.collect_until(lambda out: all(replies_to(out, i) for i in missing), GRACE)
        upstream = [line for line in recorded_lines(self.record)[mark:] if not _is_barrier(line)]
        return Exchange(frame, [m for m in got if not replies_to([m], barrier)], upstream)

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def http_messages(response: httpx2.Response) -> list[dict]:
    """The JSON-RPC messages of a POST's answer: one JSON body or an SSE stream (or none)."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json") and response.content.strip():
        body = response.json()
        return body if isinstance(body, list) else [body]
    if kind.startswith("text/event-stream"):
        out = []
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                out.append(json.loads(line[5:].strip()))
        return out
    return []


class HttpGate:
    """`python -m proxy --listen http://127.0.0.1:0 -- python recording_upstream.py`, one Streamable HTTP session."""

    def __init__(self, record: Path, *options: str) -> None:
        self.record = record
        command = [sys.executable, "-m", "proxy", "--listen", "http://127.0.0.1:0", *options, "--",
                   sys.executable, RECORDING_UPSTREAM]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=gate_env(record), cwd=str(ROOT))
        self.stderr = b""
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.url = self._wait_for_url()
        self.http = httpx2.Client(timeout=httpx2.Timeout(20.0), headers={
            "accept": "application/json, text/event-stream", "content-type": "application/json"})
        self.session_id: str | None = None
        self._barriers = itertools.count(1)

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: self.process.stderr.read1(65536), b""):
            self.stderr += chunk

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            match = LISTENING.search(self.stderr.decode(errors="replace"))
            if match:
                return match.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"the gate did not start listening: {self.stderr.decode(errors='replace')}")

    def post(self, body: bytes | dict, session: str | None = None) -> httpx2.Response:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        headers = {"mcp-protocol-version": PROTOCOL_VERSION}
        if session or self.session_id:
            headers["mcp-session-id"] = session or self.session_id
        return self.http.post(self.url, content=data, headers=headers)

    def start(self) -> HttpGate:
        response = self.http.post(self.url, content=json.dumps(INITIALIZE).encode())
        assert response.status_code == 200, (response.status_code, response.text)
        self.session_id = response.headers["mcp-session-id"]
        assert self.post(INITIALIZED).status_code == 202
        answer = http_messages(self.post(WARM_UP))
        assert replies_to(answer, "warm-up"), answer
        return self

    def exchange(self, frame: bytes, wait_for: list[Any] = ()) -> Exchange:
        mark = len(recorded_lines(self.record))
        response = self.post(frame)
        messages = http_messages(response) if response.status_code < 500 else []
        barrier = f"barrier-{next(self._barriers)}"
        answer = http_messages(self.post({"jsonrpc": "2.0", "id": barrier, "method": "ping"}))
        if not replies_to(answer, barrier):
            raise RuntimeError(f"no answer to the barrier ping after {frame!r}: {answer}")
        upstream = [line for line in recorded_lines(self.record)[mark:] if not _is_barrier(line)]
        return Exchange(frame, messages, upstream, http_status=response.status_code)

    def close(self) -> None:
        try:
            if self.session_id:
                self.http.delete(self.url, headers={"mcp-session-id": self.session_id,
                                                    "mcp-protocol-version": PROTOCOL_VERSION})
        except httpx2.HTTPError:
            pass
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
