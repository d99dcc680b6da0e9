"""Differential wire tests: what reached the upstream must mean the same validated thing to every parser.

One gate per transport (stdio, Streamable HTTP) sits in front of
tests/proxy/recording_upstream.py for the whole module; each hostile frame is
sent alone, followed by a ping barrier, and then judged (see `judge`):

* frames THE RULE refuses (json_readers.wire_verdict) get one -32600 answer
  carrying their id (over HTTP an HTTP 4xx answer also counts) and nothing of
  them reaches the upstream;
* request methods sent as notifications reach nobody and get no answer;
* every line the upstream did receive is read by every reader in
  tests/proxy/json_readers.py as something the gate accepted: no reader finds a
  tools/call whose arguments break the schema, nor a request as a notification;
* each request gets exactly one answer, and a valid call is executed exactly once.

The frames smuggle a bad path ("/etc/passwd" for `read`, whose schema wants
^/safe/) or an over-long note past the gate: duplicate members at every depth,
case and NUL look-alikes of the names the gate reads, method mixed with
result/error, request methods without id, batches, odd ids. Valid calls are in
the corpus too, to prove the gate still lets good traffic through.

Hypothesis: WIRE_HYPOTHESIS_EXAMPLES (default 100 per test).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.proxy.json_readers import argument_problems, readings, upstream_violations, wire_verdict
from tests.proxy.wire_gates import Exchange, HttpGate, StdioGate, replies_to

EXAMPLES = int(os.environ.get("WIRE_HYPOTHESIS_EXAMPLES", "100"))

BAD_PATH = "/etc/passwd"
GOOD_READ = {"path": "/safe/x"}
BAD_READ = {"path": BAD_PATH}


ABSENT = object()  # a member left out of a frame (an id-less request)


# ---- frames written member by member (duplicates and order are the point) -----------------------


class O(list):
    """A JSON object as (name, value) pairs in wire order; duplicates allowed; a pair whose value is ABSENT is left out."""

    def __init__(self, *pairs: tuple[str, Any]) -> None:
        super().__init__(pair for pair in pairs if pair[1] is not ABSENT)


def dumps(value: Any) -> str:
    if isinstance(value, O):
        return "{" + ",".join(f"{json.dumps(k)}:{dumps(v)}" for k, v in value) + "}"
    if isinstance(value, dict):
        return dumps(O(*value.items()))
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value)


def envelope(method: Any = "tools/call", params: Any = ABSENT, request_id: Any = 1, *extra: tuple[str, Any]) -> O:
    pairs = [("jsonrpc", "2.0")]
    if request_id is not ABSENT:
        pairs.append(("id", request_id))
    pairs.append(("method", method))
    if params is not ABSENT:
        pairs.append(("params", params))
    return O(*pairs, *extra)


def call(name: str = "read", arguments: Any = None, *extra: tuple[str, Any]) -> O:
    return O(("name", name), ("arguments", GOOD_READ if arguments is None else arguments), *extra)


def frame(value: Any) -> bytes:
    return dumps(value).encode()


# ---- the judgement -------------------------------------------------------------------------------


def frame_id(raw: bytes) -> tuple[bool, Any]:
    """(is a request under Python's reading, its id)."""
    try:
        message = json.loads(raw)
    except ValueError:
        return False, None
    if isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message:
        return True, message["id"]
    return False, None


def judge(exchange: Exchange, transport: str) -> list[str]:
    raw = exchange.frame
    verdict = wire_verdict(raw)
    problems: list[str] = []
    for line in exchange.upstream:
        for violation in upstream_violations(line):
            problems.append(f"upstream received {line.decode(errors='replace')}: {violation}")
    if verdict.refuse or verdict.drop:
        if exchange.upstream and not any("should not have forwarded" in p for p in problems):
            problems.append(f"forwarded although the rule says {'refuse' if verdict.refuse else 'drop'}: "
                            f"{verdict.reasons}")
    if verdict.refuse:
        answers = replies_to(exchange.messages, verdict.reply_id)
        refused_by_http = transport == "http" and exchange.http_status is not None and 400 <= exchange.http_status < 500
        if not refused_by_http:
            if len(answers) != 1:
                problems.append(f"expected one -32600 answer with id {verdict.reply_id!r} "
                                f"(HTTP {exchange.http_status}), got {exchange.messages}")
            elif answers[0].get("error", {}).get("code") != -32600:
                problems.append(f"expected -32600 for {verdict.reasons}, got {answers[0]}")
        return problems
    if verdict.drop:
        if exchange.messages:
            problems.append(f"a request sent as a notification was answered: {exchange.messages}")
        return problems
    is_request, request_id = frame_id(raw)
    if is_request:
        answers = replies_to(exchange.messages, request_id)
        if len(answers) != 1:
            problems.append(f"expected exactly one answer to id {request_id!r}, got {exchange.messages}")
    (reading, *_) = readings(raw)
    if reading.method == "tools/call" and reading.kind == "request":
        executed = [line for line in exchange.upstream if readings(line)[0].method == "tools/call"]
        valid = isinstance(reading.arguments, dict) and not argument_problems(reading.tool, reading.arguments)
        if valid and len(executed) != 1:
            problems.append(f"a valid call reached the upstream {len(executed)} times")
        if not valid and executed:
            problems.append("an invalid call reached the upstream")
        if valid and executed:
            # Re-serialized from the validated value: each reader must read the
            # forwarded line as it read the client's (clean) frame.
            for sent, forwarded in zip(readings(raw), readings(executed[0])):
                if (sent.tool, sent.arguments) != (forwarded.tool, forwarded.arguments):
                    problems.append(f"the forwarded call reads differently: {sent.short()} became {forwarded.short()}")
    return problems


# ---- gates, one per transport for the whole module ------------------------------------------------


@pytest.fixture(scope="module")
def stdio_gate(tmp_path_factory: pytest.TempPathFactory):
    gate = StdioGate(tmp_path_factory.mktemp("wire-stdio") / "upstream.jsonl").start()
    yield gate
    gate.close()


@pytest.fixture(scope="module")
def http_gate(tmp_path_factory: pytest.TempPathFactory):
    gate = HttpGate(tmp_path_factory.mktemp("wire-http") / "upstream.jsonl").start()
    yield gate
    gate.close()


@pytest.fixture(params=["stdio", "http"])
def gate(request: pytest.FixtureRequest):
    return request.param, request.getfixturevalue(f"{request.param}_gate")


def run(gate_pair, raw: bytes) -> tuple[Exchange, list[str]]:
    transport, gate = gate_pair
    _, request_id = frame_id(raw)
    verdict = wire_verdict(raw)
    wait = [verdict.reply_id] if verdict.refuse else [request_id] if request_id is not None else []
    exchange = gate.exchange(raw, wait)
    return exchange, judge(exchange, transport)


def assert_judged_clean(gate_pair, raw: bytes) -> Exchange:
    exchange, problems = run(gate_pair, raw)
    assert not problems, "\n".join([f"frame: {raw.decode(errors='replace')}", *problems])
    return exchange


# ---- the named corpus: one case per smuggling technique --------------------------------------------

K = "\u212a"  # KELVIN SIGN, folds to "k"
LONG_S = "\u017f"  # LATIN SMALL LETTER LONG S, folds to "s"

CORPUS: dict[str, O | list] = {
    # accepted traffic still flows
    "valid-call": envelope(params=call()),
    "valid-call-string-id": envelope(params=call(), request_id="7"),
    "valid-call-huge-id": envelope(params=call(), request_id=2**70),
    "valid-note": envelope(params=call("note", {"text": "hi", "kind": "memo", "other": 1})),
    "invalid-call-answered-by-gate": envelope(params=call(arguments=BAD_READ)),
    "valid-ping": envelope("ping", request_id="p"),
    # (a) method mixed with error/result
    "error-shaped-call": envelope("tools/call", call(arguments=BAD_READ), "x",
                                  ("error", {"code": 1, "message": "x"})),
    "error-first-call": O(("jsonrpc", "2.0"), ("id", "x"), ("error", {"code": 1, "message": "x"}),
                          ("method", "tools/call"), ("params", call(arguments=BAD_READ))),
    "result-shaped-call": envelope("tools/call", call(arguments=BAD_READ), 3, ("result", {})),
    # request methods without an id
    "call-as-notification": envelope(params=call(arguments=BAD_READ), request_id=ABSENT),
    "valid-call-as-notification": envelope(params=call(), request_id=ABSENT),
    "tools-list-as-notification": envelope("tools/list", request_id=ABSENT),
    "resources-read-as-notification": envelope("resources/read", {"uri": "file:///etc/passwd"}, ABSENT),
    "initialize-as-notification": envelope("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                          "clientInfo": {"name": "x", "version": "0"}}, ABSENT),
    # (b) duplicates at every depth
    "duplicate-method-call-then-ping": envelope("tools/call", call(arguments=BAD_READ), 1, ("method", "ping")),
    "duplicate-method-ping-then-call": O(("jsonrpc", "2.0"), ("id", 1), ("method", "ping"),
                                         ("params", call(arguments=BAD_READ)), ("method", "tools/call")),
    "duplicate-params": envelope("tools/call", call(arguments=BAD_READ), 1, ("params", call())),
    "duplicate-id": envelope("tools/call", call(), 1, ("id", 2)),
    "duplicate-name-note-then-read": envelope(params=O(("name", "read"), ("arguments", BAD_READ), ("name", "note"))),
    "duplicate-arguments-bad-first": envelope(params=O(("name", "read"), ("arguments", BAD_READ),
                                                       ("arguments", GOOD_READ))),
    "duplicate-arguments-good-first": envelope(params=O(("name", "read"), ("arguments", GOOD_READ),
                                                        ("arguments", BAD_READ))),
    "duplicate-path-bad-first": envelope(params=call(arguments=O(("path", BAD_PATH), ("path", "/safe/x")))),
    "duplicate-deep-in-meta": envelope(params=call("read", GOOD_READ, ("_meta", O(("a", 1), ("a", 2))))),
    "duplicate-deep-in-note": envelope(params=call("note", O(("text", "hi"), ("x", O(("y", 1), ("y", 2)))))),
    # (c)/(d) case and NUL look-alikes of the names the gate reads
    "Arguments-after": envelope(params=call("read", GOOD_READ, ("Arguments", BAD_READ))),
    "ARGUMENTS-after": envelope(params=call("read", GOOD_READ, ("ARGUMENTS", BAD_READ))),
    "long-s-arguments": envelope(params=call("read", GOOD_READ, ("argument" + LONG_S, BAD_READ))),
    "nul-arguments": envelope(params=call("read", GOOD_READ, ("arguments\x00", BAD_READ))),
    "Name-after": envelope(params=O(("name", "note"), ("arguments", BAD_READ), ("Name", "read"))),
    "nul-name": envelope(params=O(("name", "note"), ("arguments", BAD_READ), ("name\x00", "read"))),
    "METHOD-after": O(("jsonrpc", "2.0"), ("id", 1), ("method", "ping"), ("params", call(arguments=BAD_READ)),
                      ("METHOD", "tools/call")),
    "Params-after": envelope("tools/call", call(), 1, ("Params", call(arguments=BAD_READ))),
    "ID-after": envelope("tools/call", call(), 1, ("ID", 99)),
    "lookalike-alone-Arguments": envelope(params=O(("name", "read"), ("Arguments", BAD_READ))),
    "TEXT-in-open-arguments": envelope(params=call("note", {"text": "hi", "TEXT": "much too long for eight"})),
    "kelvin-kind-in-open-arguments": envelope(params=call("note", {"kind": "memo", K + "ind": "rm -rf /"})),
    "nul-text-in-open-arguments": envelope(params=call("note", {"text": "hi", "text\x00": "much too long"})),
    # batches and odd ids
    "batch-of-one-call": [envelope(params=call(arguments=BAD_READ))],
    "batch-of-valid-call": [envelope(params=call())],
    "id-float": envelope(params=call(arguments=BAD_READ), request_id=1.0),
    "id-true": envelope(params=call(arguments=BAD_READ), request_id=True),
    "id-null": envelope(params=call(arguments=BAD_READ), request_id=None),
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_named_hostile_frame_never_reaches_the_upstream_in_a_second_reading(gate, case: str) -> None:
    assert_judged_clean(gate, frame(CORPUS[case]))


# ---- explicit tests for each known bug -------------------------------------------------------------


def test_error_shaped_call_is_refused_with_32600_and_its_id(gate) -> None:
    raw = frame(envelope("tools/call", call(arguments=BAD_READ), "x", ("error", {"code": 1, "message": "x"})))
    exchange = assert_judged_clean(gate, raw)
    assert not exchange.upstream


def test_tools_call_as_notification_is_dropped_not_forwarded(gate) -> None:
    exchange = assert_judged_clean(gate, frame(envelope(params=call(arguments=BAD_READ), request_id=ABSENT)))
    assert not exchange.upstream and not exchange.messages


def test_duplicate_method_cannot_hide_a_call_behind_a_ping(gate) -> None:
    raw = frame(envelope("tools/call", call(arguments=BAD_READ), 1, ("method", "ping")))
    exchange = assert_judged_clean(gate, raw)
    assert not exchange.upstream


@pytest.mark.parametrize("variant", ["Arguments", "ARGUMENTS", "argument" + LONG_S, "arguments\x00"])
def test_case_and_nul_variants_of_arguments_are_refused(gate, variant: str) -> None:
    exchange = assert_judged_clean(gate, frame(envelope(params=call("read", GOOD_READ, (variant, BAD_READ)))))
    assert not exchange.upstream


@pytest.mark.parametrize("raw", [
    frame(envelope("tools/call", call(), 41, ("method", "ping"))),
    frame(envelope("tools/call", call(), "s41", ("Method", "tools/call"))),
    frame(envelope(params=call("read", GOOD_READ, ("Name", "note")), request_id=42)),
    frame(envelope("tools/call", call(), 43, ("result", {}))),
], ids=["duplicate-method", "Method", "Name", "method+result"])
def test_refused_frames_get_32600_with_the_request_id(gate, raw: bytes) -> None:
    transport, driver = gate
    verdict = wire_verdict(raw)
    assert verdict.refuse
    exchange = driver.exchange(raw, [verdict.reply_id])
    (answer,) = replies_to(exchange.messages, verdict.reply_id) or [None]
    assert answer is not None and answer.get("error", {}).get("code") == -32600, (
        f"HTTP {exchange.http_status}: {exchange.messages}")
    assert not exchange.upstream


# ---- hypothesis: random combinations --------------------------------------------------------------

NAMES_READ = ("jsonrpc", "id", "method", "params", "name", "arguments", "_meta", "path", "text", "kind")


def lookalikes(name: str) -> st.SearchStrategy[str]:
    variants = {name.upper(), name.capitalize(), name.swapcase(), name + "\x00", "\x00" + name,
                name[:1] + "\x00" + name[1:], name.replace("s", LONG_S), name.replace("k", K)}
    variants.discard(name)
    return st.sampled_from(sorted(variants))


ids = st.one_of(st.integers(-5, 2**70), st.sampled_from(["7", "x", "", "barrier"]), st.sampled_from([7, 0]),
                st.sampled_from([1.0, True, False, None, 1.5]), st.just(ABSENT))
good_args = st.sampled_from([("read", GOOD_READ), ("read", {"path": "/safe/a/b"}), ("note", {"text": "hi"}),
                             ("note", {"text": "ok", "kind": "todo", "x": [1]})])
bad_args = st.sampled_from([("read", BAD_READ), ("read", {"path": "/safe/x", "mode": "w"}),
                            ("note", {"text": "far too long a note"}), ("note", {"kind": "rm"})])
other_methods = st.sampled_from(["ping", "tools/list", "resources/list", "notifications/progress", "x/custom"])


def ordered(draw, first: tuple, second: tuple) -> tuple[tuple, tuple]:
    return (first, second) if draw(st.booleans()) else (second, first)


@st.composite
def hostile_frames(draw) -> bytes:
    request_id = draw(ids)
    (good_tool, good), (bad_tool, bad) = draw(good_args), draw(bad_args)
    technique = draw(st.sampled_from([
        "valid", "invalid", "dup-method", "dup-name", "dup-arguments", "dup-in-arguments", "dup-deep",
        "lookalike-top", "lookalike-params", "lookalike-in-arguments", "method-with-error", "method-with-result",
        "request-without-id", "batch"]))
    if technique == "valid":
        value = envelope(params=call(good_tool, good), request_id=request_id)
    elif technique == "invalid":
        value = envelope(params=call(bad_tool, bad), request_id=request_id)
    elif technique == "dup-method":
        a, b = ordered(draw, ("method", "tools/call"), ("method", draw(other_methods)))
        value = O(("jsonrpc", "2.0"), ("id", request_id), a, ("params", call(bad_tool, bad)), b)
    elif technique == "dup-name":
        a, b = ordered(draw, ("name", "read"), ("name", "note"))
        value = envelope(params=O(a, ("arguments", bad), b), request_id=request_id)
    elif technique == "dup-arguments":
        a, b = ordered(draw, ("arguments", good), ("arguments", bad))
        value = envelope(params=O(("name", bad_tool), a, b), request_id=request_id)
    elif technique == "dup-in-arguments":
        key = draw(st.sampled_from(["path", "text", "kind"]))
        a, b = ordered(draw, (key, "/safe/x" if key == "path" else "memo"), (key, draw(st.sampled_from(
            [BAD_PATH, "far too long a note", "rm"]))))
        value = envelope(params=call(draw(st.sampled_from(["read", "note"])), O(a, b)), request_id=request_id)
    elif technique == "dup-deep":
        inner = O(("a", 1), ("a", draw(st.sampled_from([2, BAD_PATH]))))
        where = draw(st.sampled_from(["_meta", "note-arg", "top"]))
        if where == "_meta":
            value = envelope(params=call(good_tool, good, ("_meta", inner)), request_id=request_id)
        elif where == "note-arg":
            value = envelope(params=call("note", O(("text", "hi"), ("deep", [inner]))), request_id=request_id)
        else:
            value = envelope("tools/call", call(good_tool, good), request_id, ("x", inner))
    elif technique == "lookalike-top":
        name = draw(st.sampled_from(["method", "params", "id", "jsonrpc"]))
        twin = draw(lookalikes(name))
        replacement = {"method": "tools/call", "params": call(bad_tool, bad), "id": 99, "jsonrpc": "1.0"}[name]
        base = envelope("ping" if name == "method" else "tools/call",
                        call(bad_tool, bad) if name == "method" else call(good_tool, good), request_id)
        value = O(*base, (twin, replacement)) if draw(st.booleans()) else O((twin, replacement), *base)
    elif technique == "lookalike-params":
        name = draw(st.sampled_from(["name", "arguments", "_meta"]))
        twin = draw(lookalikes(name))
        replacement = {"name": bad_tool, "arguments": bad, "_meta": {"progressToken": 1}}[name]
        pairs = [("name", good_tool if name != "name" else ("note" if bad_tool == "read" else "read")),
                 ("arguments", good if name != "name" else bad), (twin, replacement)]
        if draw(st.booleans()):
            pairs.reverse()
        value = envelope(params=O(*pairs), request_id=request_id)
    elif technique == "lookalike-in-arguments":
        key = draw(st.sampled_from(["path", "text", "kind"]))
        twin = draw(lookalikes(key))
        tool = "read" if key == "path" else "note"
        good_value = {"path": "/safe/x", "text": "hi", "kind": "memo"}[key]
        bad_value = {"path": BAD_PATH, "text": "far too long a note", "kind": "rm"}[key]
        a, b = ordered(draw, (key, good_value), (twin, bad_value))
        value = envelope(params=call(tool, O(a, b)), request_id=request_id)
    elif technique in ("method-with-error", "method-with-result"):
        member = ("error", {"code": 1, "message": "x"}) if technique == "method-with-error" else ("result", {})
        base = list(envelope("tools/call", call(bad_tool, bad), request_id))
        base.insert(draw(st.integers(0, len(base))), member)
        value = O(*base)
    elif technique == "request-without-id":
        method = draw(st.sampled_from(["tools/call", "tools/list", "ping", "prompts/get", "resources/read"]))
        value = envelope(method, call(bad_tool, bad) if method == "tools/call" else {}, ABSENT)
    else:
        value = [envelope(params=call(bad_tool, bad), request_id=request_id)]
    return frame(value)


def _hypothesis_settings():
    return settings(max_examples=EXAMPLES, deadline=None, database=None,
                    phases=(Phase.explicit, Phase.generate),  # no shrinking: a live gate, and every example is small
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@_hypothesis_settings()
@given(raw=hostile_frames())
def test_random_hostile_frames_over_stdio_are_refused_or_forwarded_with_one_reading(stdio_gate, raw: bytes) -> None:
    assert_judged_clean(("stdio", stdio_gate), raw)


@_hypothesis_settings()
@given(raw=hostile_frames())
def test_random_hostile_frames_over_http_are_refused_or_forwarded_with_one_reading(http_gate, raw: bytes) -> None:
    assert_judged_clean(("http", http_gate), raw)


def _exploitable(problems: list[str]) -> list[str]:
    """Only what a server would act on: a reader finding a bad call, or a request as a notification."""
    return [p for p in problems if p.startswith("upstream received") and "should not have forwarded" not in p]


@_hypothesis_settings()
@given(raw=hostile_frames())
def test_random_hostile_frames_over_stdio_never_make_any_reader_run_a_refused_call(stdio_gate, raw: bytes) -> None:
    # The security property alone (no rule conformance such as -32600 vs a tool
    # error): separates "exploitable" from "answered in the wrong shape".
    _, problems = run(("stdio", stdio_gate), raw)
    assert not _exploitable(problems), "\n".join([f"frame: {raw.decode(errors='replace')}", *_exploitable(problems)])


@_hypothesis_settings()
@given(raw=hostile_frames())
def test_random_hostile_frames_over_http_never_make_any_reader_run_a_refused_call(http_gate, raw: bytes) -> None:
    _, problems = run(("http", http_gate), raw)
    assert not _exploitable(problems), "\n".join([f"frame: {raw.decode(errors='replace')}", *_exploitable(problems)])


# ---- positive controls: the rule must not starve legitimate traffic -------------------------------


def test_a_plain_notification_is_still_forwarded_once(gate) -> None:
    raw = frame(envelope("notifications/roots/list_changed", request_id=ABSENT))
    exchange = assert_judged_clean(gate, raw)
    assert [json.loads(line)["method"] for line in exchange.upstream] == ["notifications/roots/list_changed"]


def test_a_plain_client_response_is_still_forwarded_once(gate) -> None:
    # The answer to a server->client request (sampling, roots, elicitation) is a
    # response frame; nothing in it is a method, so the rule leaves it alone.
    raw = frame(O(("jsonrpc", "2.0"), ("id", "server-7"), ("result", {"roots": []})))
    exchange = assert_judged_clean(gate, raw)
    assert [json.loads(line).get("id") for line in exchange.upstream] == ["server-7"]


def test_the_gate_survived_the_corpus_and_still_executes_a_valid_call_once(gate) -> None:
    exchange = assert_judged_clean(gate, frame(envelope(params=call("read", {"path": "/safe/final"}), request_id="last")))
    assert len(exchange.upstream) == 1
