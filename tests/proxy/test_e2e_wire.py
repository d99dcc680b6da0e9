"""The proxy driven with hand-written JSON lines: what a well-behaved SDK client never sends.

Malformed JSON, odd id types, malformed tools/call params, late cancellations,
the upstream dying mid-call, the client leaving, and what goes to stdout/stderr.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from tests.proxy.conftest import calls, pid_alive, raw_proxy, records, wait_until


def is_reply_to(request_id):
    return lambda m: "method" not in m and "id" in m and type(m["id"]) is type(request_id) and m["id"] == request_id


async def test_malformed_json_is_answered_and_the_session_goes_on(record: Path) -> None:
    async with raw_proxy(record) as session:
        await session.send('{"jsonrpc": "2.0", "id": 1, "method": ')
        reply = await session.receive()
        assert reply["error"]["code"] == -32700 and reply["id"] is None
        await session.send("[1, 2, 3]")
        reply = await session.receive()
        assert reply["error"]["code"] == -32600 and reply["id"] is None
        await session.initialize()
        reply = await session.request(1, "tools/call", {"name": "echo", "arguments": {"text": "ok"}})
        assert reply["result"]["content"][0]["text"] == "ok"


async def test_odd_request_ids_are_each_answered_exactly_once(record: Path) -> None:
    big = 2**70
    async with raw_proxy(record) as session:
        await session.initialize()
        # "7" and 7 are distinct requests (the SDK dispatcher would coerce them to one).
        for request_id, text in (("7", "string seven"), (7, "integer seven"), (big, "big")):
            await session.send(
                {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                 "params": {"name": "echo", "arguments": {"text": text}}}
            )
        # Ids the SDK parser would silently turn into a notification.
        for raw in ('{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}',
                    '{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
                    '{"jsonrpc":"2.0","id":null,"method":"tools/list"}'):
            await session.send(raw)
        replies = []
        with anyio.fail_after(15):
            while len(replies) < 6:
                message = await session.receive()
                if "method" not in message:
                    replies.append(message)
        assert (await session.request("last", "ping"))["result"] == {}  # and nothing else came first
        by_id = [(type(m["id"]).__name__, m["id"]) for m in replies]
        assert sorted(by_id, key=repr) == sorted(
            [("str", "7"), ("int", 7), ("int", big), ("float", 1.0), ("NoneType", None), ("NoneType", None)], key=repr
        )
        texts = {(type(m["id"]).__name__, m["id"]): m.get("result", {}).get("content", [{}])[0].get("text")
                 for m in replies if "result" in m}
        assert texts == {("str", "7"): "string seven", ("int", 7): "integer seven", ("int", big): "big"}
        for m in replies:
            if "error" in m:
                assert m["error"]["code"] == -32600
    assert sorted(c["arguments"]["text"] for c in calls(record)) == ["big", "integer seven", "string seven"]


async def test_malformed_tools_call_params_are_invalid_params(record: Path) -> None:
    cases = [None, [1, 2], {"arguments": {}}, {"name": 5}, {"name": "echo", "arguments": [1]},
             {"name": "echo", "arguments": None}]
    async with raw_proxy(record) as session:
        await session.initialize()
        for request_id, params in enumerate(cases, start=10):
            await session.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
            reply, _ = await session.receive_until(is_reply_to(request_id))
            assert reply["error"]["code"] == -32602, (params, reply)
    assert calls(record) == []


async def test_late_cancellation_of_a_gate_answered_call_is_dropped(record: Path) -> None:
    async with raw_proxy(record) as session:
        await session.initialize()
        reply = await session.request(5, "tools/call", {"name": "echo", "arguments": {"text": ""}})
        assert reply["result"]["isError"] is True
        await session.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
        await session.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}})
        assert (await session.request(7, "ping"))["result"] == {}
    cancelled = [r["params"]["requestId"] for r in records(record, "notification")
                 if r["method"] == "notifications/cancelled"]
    assert cancelled == [6]  # 5 was answered by the gate: the upstream never heard of it


async def test_upstream_killed_mid_call_answers_in_flight_requests_and_exits(record: Path) -> None:
    async with raw_proxy(record) as session:
        await session.initialize()
        await session.send({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                            "params": {"name": "slow", "arguments": {"steps": 500}, "_meta": {"progressToken": "p"}}})
        await session.receive_until(lambda m: m.get("method") == "notifications/progress")
        pid = records(record, "start")[0]["pid"]
        os.kill(pid, signal.SIGKILL)
        reply, _ = await session.receive_until(is_reply_to(41))
        assert reply["error"]["code"] == -32603
        with anyio.fail_after(10):
            status = await session.process.wait()
        assert status != 0
    assert b"upstream server closed the connection" in session.stderr
    assert not pid_alive(pid)


async def test_client_closing_stdin_stops_the_upstream(record: Path) -> None:
    async with raw_proxy(record) as session:
        await session.initialize()
        assert (await session.request(1, "ping"))["result"] == {}
        pid = records(record, "start")[0]["pid"]
        await session.process.stdin.aclose()
        with anyio.fail_after(10):
            status = await session.process.wait()
        assert status == 0
    assert wait_until(lambda: not pid_alive(pid), timeout=5)


async def test_requests_sent_before_the_client_leaves_are_still_answered(record: Path) -> None:
    """A piped batch (`printf ... | mcp-schema-gate -- server`) gets all its answers."""
    async with raw_proxy(record) as session:
        await session.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}})
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": "accepted"}}})
        await session.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": ""}}})
        await session.process.stdin.aclose()
        replies = {}
        with anyio.fail_after(15):
            while len(replies) < 3:
                message = await session.receive()
                replies[message["id"]] = message
        assert replies[1]["result"]["content"][0]["text"] == "accepted"
        assert replies[2]["result"]["isError"] is True


async def test_environment_stderr_and_audit_log(record: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    async with raw_proxy(record, "--audit-log", str(audit), PROXY_TEST_MARKER="passed-through") as session:
        await session.initialize()
        await session.request(1, "tools/call", {"name": "add", "arguments": {"a": "secret-value", "b": 1}})
        await session.request(2, "tools/call", {"name": "nope", "arguments": {}})
    assert records(record, "start")[0]["marker"] == "passed-through"  # the child got our environment
    assert b"upstream test server starting" in session.stderr  # the child's stderr is ours
    assert b"11 tools listed, 1 unsupported" in session.stderr
    assert b"titled: unsupported_capability: title at /title" in session.stderr
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(e["requestId"], e["tool"], e["kind"]) for e in lines] == [(1, "add", "validation"), (2, "nope", "unknown_tool")]
    assert lines[0]["instancePath"] == "/a" and lines[0]["schemaPath"] == "/properties/a/type"
    assert "secret-value" not in audit.read_text()


async def test_audit_arguments_records_values(record: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    async with raw_proxy(record, "--audit-log", str(audit), "--audit-arguments") as session:
        await session.initialize()
        await session.request(1, "tools/call", {"name": "add", "arguments": {"a": "secret-value", "b": 1}})
    (entry,) = [json.loads(line) for line in audit.read_text().splitlines()]
    assert entry["arguments"] == {"a": "secret-value", "b": 1}


async def test_forwarded_messages_are_byte_identical_both_ways(record: Path) -> None:
    from tests.proxy.raw_upstream import CRAFTED

    upstream = [sys.executable, str(Path(__file__).with_name("raw_upstream.py"))]
    async with raw_proxy(record, upstream=upstream) as session:
        await session.initialize()
        line = '{"id":"x1","jsonrpc":"2.0","method":"raw/echo","params":{"b":1e400,"a":{"y":2,"x":1}},"unknown":[true]}'
        await session.send(line)
        reply, _ = await session.receive_until(is_reply_to("x1"))
        assert reply["result"]["line"] == line  # the upstream got the client's bytes
        await session.send({"jsonrpc": "2.0", "id": "x2", "method": "raw/emit"})
        raw_lines = []
        with anyio.fail_after(10):
            while not any('"x2"' in r for r in raw_lines):
                raw_lines.append(await session.receive_line())
        assert CRAFTED in raw_lines  # and the client got the upstream's


async def test_an_upstream_that_ignores_eof_and_sigterm_is_killed_with_its_group(record: Path) -> None:
    upstream = [sys.executable, str(Path(__file__).with_name("stubborn_upstream.py"))]
    async with raw_proxy(record, upstream=upstream) as session:
        await session.initialize()
        pids = [r["pid"] for r in records(record, "start")]
        assert len(pids) == 2 and all(pid_alive(p) for p in pids)
        await session.process.stdin.aclose()
        with anyio.fail_after(15):  # 2 s grace after stdin closes, 2 s after SIGTERM, then SIGKILL
            assert await session.process.wait() == 0
    assert wait_until(lambda: not any(pid_alive(p) for p in pids), timeout=5)


async def test_five_hundred_concurrent_raw_requests_are_each_answered_exactly_once(record: Path) -> None:
    count = 500
    async with raw_proxy(record) as session:
        await session.initialize()
        expected = {}
        lines = []
        for i in range(count):
            request_id = str(i) if i % 2 else i  # "7"-style and 7-style ids side by side
            if i % 10 == 3:
                arguments, outcome = {"a": i, "b": None}, "rejected"
            elif i % 10 == 7:
                arguments, outcome = {"a": i, "b": 1}, "unknown"
            else:
                arguments, outcome = {"a": i, "b": 1}, str(i + 1)
            name = "no_such_tool" if outcome == "unknown" else "add"
            lines.append(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                     "params": {"name": name, "arguments": arguments}}))
            expected[(type(request_id).__name__, request_id)] = outcome
        await session.send("\n".join(lines))  # all at once: they are all in flight together
        seen: dict = {}
        with anyio.fail_after(60):
            while len(seen) < count:
                message = await session.receive()
                key = (type(message["id"]).__name__, message["id"])
                assert key not in seen, f"answered twice: {key}"
                seen[key] = message
        await session.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        reply, extra = await session.receive_until(is_reply_to("after"))
        assert reply["result"] == {} and extra == []  # no duplicate or stray reply came in between
    assert set(seen) == set(expected)
    for key, outcome in expected.items():
        message = seen[key]
        if outcome == "unknown":
            assert message["error"]["code"] == -32602
        elif outcome == "rejected":
            assert message["result"]["isError"] is True
        else:
            assert message["result"]["content"][0]["text"] == outcome
    forwarded = sorted(c["arguments"]["a"] for c in calls(record))
    assert forwarded == sorted(i for i in range(count) if i % 10 not in (3, 7))


async def test_dialect_option_reaches_the_validator(record: Path) -> None:
    async with raw_proxy(record, "--dialect", "extended") as session:
        await session.initialize()
        reply = await session.request(1, "tools/call", {"name": "titled", "arguments": {"x": "y"}})
        assert reply["result"]["content"][0]["text"] == "titled called"  # `title` is an annotation there
        reply = await session.request(2, "tools/call", {"name": "titled", "arguments": {"x": 1}})
        assert reply["result"]["structuredContent"]["keyword"] == "type"
    assert b"11 tools listed, 0 unsupported" in session.stderr
    assert [c["name"] for c in calls(record)] == ["titled"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
async def test_a_signalled_proxy_leaves_no_upstream_behind(record: Path, signum: int) -> None:
    async with raw_proxy(record) as session:
        await session.initialize()
        pid = records(record, "start")[0]["pid"]
        session.process.send_signal(signum)
        with anyio.fail_after(10):
            status = await session.process.wait()
        assert status == (128 + signum if signum == signal.SIGTERM else -signum)
    assert wait_until(lambda: not pid_alive(pid), timeout=5)


async def test_gate_results_carry_result_type_only_at_2026_07_28(record: Path) -> None:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    async with raw_proxy(record) as session:  # stateless: no handshake at all
        reply = await session.request(1, "tools/call", {"name": "echo", "arguments": {"text": ""}, "_meta": envelope})
        assert reply["result"]["resultType"] == "complete" and reply["result"]["isError"] is True
        reply = await session.request(2, "tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": envelope})
        assert reply["result"]["content"][0]["text"] == "x" and reply["result"]["resultType"] == "complete"
    async with raw_proxy(record) as session:
        await session.initialize()
        reply = await session.request(1, "tools/call", {"name": "echo", "arguments": {"text": ""}})
        assert "resultType" not in reply["result"] and reply["result"]["isError"] is True


async def test_large_messages_pass_both_ways(record: Path) -> None:
    text = "x" * (4 * 1024 * 1024)  # beyond every default line limit on the way
    async with raw_proxy(record) as session:
        await session.initialize()
        reply = await session.request(1, "tools/call", {"name": "echo", "arguments": {"text": text}})
        assert reply["result"]["content"][0]["text"] == text


async def test_a_tools_call_with_duplicate_keys_is_refused_at_the_wire(record: Path) -> None:
    """Duplicate keys: Python keeps the last, other readers the first; such a frame is never forwarded."""
    async with raw_proxy(record) as session:
        await session.initialize()
        for request_id, arguments in ((1, '{"text":"","text":"ok"}'), (2, '{"text":"ok","text":""}')):
            await session.send('{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
                               '"params":{"name":"echo","arguments":%s}}' % (request_id, arguments))
            reply, _ = await session.receive_until(is_reply_to(request_id))
            assert reply["error"]["code"] == -32600 and "appears twice" in reply["error"]["message"]
        reply = await session.request(3, "tools/call", {"name": "echo", "arguments": {"text": "ok"}})
        assert "result" in reply
    assert [c["arguments"] for c in calls(record)] == [{"text": "ok"}]  # the refused frames never reached it


async def test_an_unknown_tool_gets_one_refresh_before_it_is_refused(record: Path) -> None:
    async with raw_proxy(record) as session:
        await session.initialize()
        reply = await session.request(1, "tools/call", {"name": "hidden", "arguments": {"n": 1}})
        assert reply["error"]["code"] == -32602
        await session.request(2, "tools/call", {"name": "reveal", "arguments": {}})  # no list_changed follows
        reply = await session.request(3, "tools/call", {"name": "hidden", "arguments": {"n": 2}})
        assert reply["result"]["content"][0]["text"] == "hidden got 2"  # found by the refresh
        reply = await session.request(4, "tools/call", {"name": "hidden", "arguments": {"n": "two"}})
        assert reply["result"]["structuredContent"]["keyword"] == "type"  # and gated by its schema
    assert [c["name"] for c in calls(record)] == ["reveal", "hidden"]


async def test_hostile_arguments_get_precise_answers_and_never_reach_the_upstream(record: Path) -> None:
    """Nesting too deep to parse, NaN and infinities, nesting deeper than the validator allows, huge strings."""
    deep = "[" * 100_000 + "]" * 100_000
    moderate = "[" * 150 + "1" + "]" * 150
    async with raw_proxy(record) as session:
        await session.initialize()
        await session.send('{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"add",'
                           '"arguments":{"a":' + deep + ',"b":1}}}')
        reply = await session.receive()
        assert reply["id"] == "deep" and reply["error"]["code"] == -32700  # answered, with its own id
        for request_id, value in (("nan", "NaN"), ("inf", "Infinity"), ("ninf", "-Infinity")):
            await session.send('{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"add",'
                               '"arguments":{"a":%s,"b":1}}}' % (request_id, value))
            reply = await session.receive()
            assert reply["id"] == request_id
            error = reply["result"]["structuredContent"]
            assert (error["kind"], error["instancePath"]) == ("validation", "/a"), error
        await session.send('{"jsonrpc":"2.0","id":"nested","method":"tools/call","params":{"name":"noargs",'
                           '"arguments":{"x":' + moderate + '}}}')
        reply = await session.receive()
        assert reply["id"] == "nested"
        assert reply["result"]["structuredContent"]["kind"] == "validation"
        assert "deeper than 128" in reply["result"]["structuredContent"]["message"]
        huge = "x" * 3_000_000
        reply = await session.request("huge", "tools/call", {"name": "echo", "arguments": {"text": huge}})
        assert reply["result"]["content"][0]["text"] == huge  # valid: forwarded and answered
        reply = await session.request("last", "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert "result" in reply
    called = [c["arguments"] for c in calls(record)]
    assert called == [{"text": huge}, {"a": 1, "b": 2}]
