"""In-process tests of the parts: Gate decisions, Catalog revisions, and the Relay's ordering guarantees."""

from __future__ import annotations

import io
import json
from typing import Any
from unittest import mock

import anyio
import mcp_types as types
import pytest
import validator
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from proxy.core.catalog import Catalog, Preflights
from proxy.core.gate import Gate, ListenerCheck, Rejection
from proxy.core.hooks import GuardHooks
from proxy.core.relay import Relay
from proxy.core import jsonrpc
from proxy.core.jsonrpc import Frame, dump, envelope_of, parse_line, result_message, validated_copy
from tests.support.examples import examples

ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"]}}


def test_gate_fails_closed_when_the_validator_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_compile(schema: Any, dialect: str = "contract") -> Any:
        class Compiled:
            def validate(self, arguments: Any) -> None:
                raise ZeroDivisionError("bug")

        return Compiled()

    monkeypatch.setattr(validator, "compile", broken_compile)
    catalog = Catalog(preflights=Preflights())  # its own: the broken outcome must not reach the process's cache
    catalog.replace([ECHO])
    rejection = Gate().check({"name": "echo", "arguments": {"t": "x"}}, catalog.tools)
    assert rejection is not None and rejection.kind == "execution_failure"


def test_catalog_compiles_identical_schemas_once_and_swaps_revisions(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[Any] = []
    real_compile = validator.compile

    def counting_compile(schema: Any, dialect: str = "contract") -> Any:
        compiled.append(schema)
        return real_compile(schema, dialect=dialect)

    monkeypatch.setattr(validator, "compile", counting_compile)
    catalog = Catalog(preflights=Preflights())
    first = catalog.replace([ECHO, {**ECHO, "name": "echo2"}])
    assert len(compiled) == 1  # same schema text, one compile
    catalog.merge([{"name": "echo", "inputSchema": {"type": "object"}}])
    assert first["echo"].input_schema == ECHO["inputSchema"]  # an old revision never changes under a reader
    assert catalog.get("echo").input_schema == {"type": "object"} and "echo2" in catalog.tools
    assert Gate().check({"name": "echo"}, catalog.tools) is None  # {} is valid against the merged schema


def test_sessions_share_preflights_by_schema_text_and_dialect_within_a_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[tuple[str, Any]] = []
    real_compile = validator.compile

    def counting_compile(schema: Any, dialect: str = "contract") -> Any:
        compiled.append((dialect, schema))
        return real_compile(schema, dialect=dialect)

    monkeypatch.setattr(validator, "compile", counting_compile)
    shared = Preflights(limit=3)
    output = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tools = [{**ECHO, "outputSchema": output}, {"name": "bad", "inputSchema": {"type": "object", "minProperties": 1}}]
    one, two = Catalog(preflights=shared), Catalog(preflights=shared)  # two sessions of one gate
    one.replace(tools)
    assert len(compiled) == 3  # echo's input and output schemas, and bad's (refused in the contract dialect)
    two.replace([dict(tool) for tool in tools])
    assert len(compiled) == 3  # the second session compiles nothing
    assert two.get("echo").compiled is one.get("echo").compiled
    assert two.get("echo").output_compiled is one.get("echo").output_compiled
    assert two.get("bad").error is one.get("bad").error and two.get("bad").compiled is None

    extended = Catalog("extended", preflights=shared)  # another dialect: its own outcome
    extended.replace(tools[1:])
    assert compiled[-1] == ("extended", tools[1]["inputSchema"]) and extended.get("bad").error is None
    assert len(shared) == 3  # the least recently used went

    # The same members in another order are another schema text: which violation is reported follows the order.
    reordered = {"type": "object", "required": ["t"], "properties": {"t": {"type": "string"}}}
    three = Catalog(preflights=shared)
    three.replace([{"name": "echo", "inputSchema": reordered}])
    assert compiled[-1] == ("contract", reordered) and three.get("echo").compiled is not one.get("echo").compiled


def test_gate_protocol_errors() -> None:
    catalog = Catalog()
    catalog.replace([ECHO])
    gate = Gate()
    for params in (None, [], {"name": 1}, {"name": "echo", "arguments": "x"}):
        rejection = gate.check(params, catalog.tools)
        assert rejection is not None and rejection.protocol_only and gate.reply(rejection, False)[0] == "error"
    assert gate.check({"name": "nope"}, catalog.tools).kind == "unknown_tool"


def test_a_listener_s_check_runs_last_with_the_accepted_entry_and_its_code_is_the_reply_s() -> None:
    catalog = Catalog()
    catalog.replace([ECHO])
    gate = Gate()
    seen: list[tuple[Any, Any]] = []

    def check(entry: Any, arguments: dict[str, Any]) -> Rejection | None:
        seen.append((entry, arguments))
        return Rejection(entry.name, "header_mismatch", "the header lies", code=-32001)

    extra = ListenerCheck(check)
    assert gate.check({"name": "echo", "arguments": {"t": 1}}, catalog.tools, extra).kind == "validation"
    assert gate.check({"name": "nope", "arguments": {}}, catalog.tools, extra).kind == "unknown_tool"
    assert seen == []  # never for a call the gate refuses on its own terms
    rejection = gate.check({"name": "echo", "arguments": {"t": "x"}}, catalog.tools, extra)
    assert seen == [(catalog.get("echo"), {"t": "x"})]
    assert gate.reply(rejection, modern=True) == ("error", (-32001, "the header lies", None))


def test_parse_line_keeps_what_the_sdk_parser_loses() -> None:
    assert parse_line(b'{"jsonrpc":"2.0","id":1.0,"method":"x"}').reply_id == 1.0
    assert parse_line(b'{"jsonrpc":"2.0","id":true,"method":"x"}').reply_id is None
    assert parse_line(b'{"jsonrpc":"2.0","id":3,"method":"x","params":[1]}').code == -32602
    assert parse_line(b'{"jsonrpc":"2.0","method":"x","params":{"id":1}}').message.method == "x"
    assert parse_line(b"  \n") is None
    assert parse_line(b'{"jsonrpc":"2.0","id":1,"method":"x"}').raw == b'{"jsonrpc":"2.0","id":1,"method":"x"}\n'


def message(payload: dict) -> SessionMessage:
    return SessionMessage(types.jsonrpc_message_adapter.validate_python(payload))


async def test_list_changed_is_forwarded_after_the_new_revision_and_before_later_traffic() -> None:
    to_proxy_c, client_in = anyio.create_memory_object_stream[Any](100)
    client_out, from_proxy_c = anyio.create_memory_object_stream[Any](100)
    to_proxy_u, upstream_in = anyio.create_memory_object_stream[Any](100)
    upstream_out, from_proxy_u = anyio.create_memory_object_stream[Any](100)
    catalog = Catalog()
    hooks = GuardHooks(catalog, Gate(), summary=io.StringIO())
    relay = Relay((client_in, client_out), (upstream_in, upstream_out), hooks)
    schemas = iter([{"type": "object"}, {"type": "object", "properties": {"t": {"type": "integer"}}}])
    seen_at_forward: list[Any] = []

    async def fake_upstream() -> None:
        async for item in from_proxy_u:
            inner = item.message
            if isinstance(inner, types.JSONRPCRequest) and inner.method == "tools/list":
                await anyio.sleep(0.05)  # a slow listing: later traffic must wait behind list_changed
                tool = {"name": "echo", "inputSchema": next(schemas)}
                await to_proxy_u.send(message({"jsonrpc": "2.0", "id": inner.id, "result": {"tools": [tool]}}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_upstream)
        tg.start_soon(relay.run)
        await to_proxy_c.send(message({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        with anyio.fail_after(5):
            await catalog.built.wait()
        await to_proxy_u.send(message({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 1}}
        await to_proxy_u.send(message(log))
        received = []
        with anyio.fail_after(5):
            while len(received) < 2:
                item = await from_proxy_c.receive()
                received.append(item.message.method)
                seen_at_forward.append(catalog.get("echo").input_schema)
        assert received == ["notifications/tools/list_changed", "notifications/message"]
        assert seen_at_forward[0]["properties"]["t"] == {"type": "integer"}  # swapped in before forwarding
        tg.cancel_scope.cancel()


async def test_a_listener_s_check_sees_the_revision_the_gate_decided_by_and_its_refusal_is_never_forwarded() -> None:
    """A call that comes before the first listing, or while a relisting is awaited, is checked by the
    listener's own check only once the schema it is decided by is there; the check's metadata never travels
    upstream."""
    to_proxy_c, client_in = anyio.create_memory_object_stream[Any](100)
    client_out, from_proxy_c = anyio.create_memory_object_stream[Any](100)
    to_proxy_u, upstream_in = anyio.create_memory_object_stream[Any](100)
    upstream_out, from_proxy_u = anyio.create_memory_object_stream[Any](100)
    catalog = Catalog()
    relay = Relay((client_in, client_out), (upstream_in, upstream_out), GuardHooks(catalog, Gate(),
                                                                                   summary=io.StringIO()))
    first = {"type": "object", "properties": {"t": {"type": "string"}}}
    second = {"type": "object", "properties": {"t": {"type": "string"}, "u": {"type": "integer"}}}
    schemas = iter([first, second])
    forwarded: list[Any] = []
    seen: list[tuple[Any, Any]] = []

    def check(entry: Any, arguments: dict[str, Any]) -> Rejection | None:
        seen.append((entry.input_schema, arguments))
        return Rejection(entry.name, "header_mismatch", "the header lies", code=-32001) if arguments["t"] == "lie" \
            else None

    def call(request_id: int, t: str) -> Frame:
        return Frame("request", {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                 "params": {"name": "echo", "arguments": {"t": t}}}, metadata=ListenerCheck(check))

    async def fake_upstream() -> None:
        async for item in from_proxy_u:
            inner = envelope_of(item)
            if inner.method == "tools/list":
                await anyio.sleep(0.05)  # calls arrive while the listing is on its way
                tool = {"name": "echo", "inputSchema": next(schemas)}
                await to_proxy_u.send(message({"jsonrpc": "2.0", "id": inner.id, "result": {"tools": [tool]}}))
            elif inner.method == "tools/call":
                forwarded.append((inner.params["arguments"], item.metadata))
                await to_proxy_u.send(message({"jsonrpc": "2.0", "id": inner.id, "result": {"content": []}}))

    async def replies(count: int) -> dict[Any, Any]:
        answered = {}
        with anyio.fail_after(5):
            while len(answered) < count:
                inner = envelope_of(await from_proxy_c.receive())
                if inner.kind in ("response", "error"):
                    answered[inner.id] = inner.error if inner.kind == "error" else inner.result
        return answered

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake_upstream)
        tg.start_soon(relay.run)
        await to_proxy_c.send(call(1, "lie"))  # the first request: nothing is listed yet
        await to_proxy_c.send(call(2, "ok"))
        answered = await replies(2)
        assert answered[1].code == -32001 and answered[1].message == "the header lies"
        assert answered[2] == {"content": []}
        await to_proxy_u.send(message({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        await anyio.sleep(0.01)
        await to_proxy_c.send(call(3, "ok"))  # the relisting is awaited: decided by the second revision
        await replies(1)
        tg.cancel_scope.cancel()
    assert seen == [(first, {"t": "lie"}), (first, {"t": "ok"}), (second, {"t": "ok"})]
    assert forwarded == [({"t": "ok"}, None), ({"t": "ok"}, None)]


async def test_a_standing_listen_request_does_not_hold_the_exit_but_is_answered_if_the_upstream_dies() -> None:
    def streams() -> tuple[Any, Any, Any, Any]:
        to_c, client_in = anyio.create_memory_object_stream[Any](100)
        client_out, from_c = anyio.create_memory_object_stream[Any](100)
        to_u, upstream_in = anyio.create_memory_object_stream[Any](100)
        upstream_out, from_u = anyio.create_memory_object_stream[Any](100)
        relay = Relay((client_in, client_out), (upstream_in, upstream_out),
                      GuardHooks(Catalog(), Gate(), summary=io.StringIO()))
        return relay, (to_c, from_c), (to_u, from_u)

    listen = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
              "params": {"notifications": {"toolsListChanged": True}}}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    # The client leaves with a listen request and a ping open: the exit waits for the ping's
    # answer only (the relay's drain is 10 s; this must finish well inside it).
    relay, (to_c, from_c), (to_u, from_u) = streams()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(relay.run)
            await to_c.send(message(listen))
            await to_c.send(message(ping))
            assert (await from_u.receive()).message.id == "L"
            assert (await from_u.receive()).message.id == 1
            await to_c.aclose()
            await anyio.sleep(0.1)
            assert from_c.statistics().current_buffer_used == 0  # still waiting: the ping is unanswered
            await to_u.send(message({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert (await from_c.receive()).message.id == 1

    # The upstream dies: the standing request gets its error like any other.
    relay, (to_c, from_c), (to_u, from_u) = streams()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(relay.run)
            await to_c.send(message(listen))
            assert (await from_u.receive()).message.id == "L"
            await to_u.aclose()
    reply = (await from_c.receive()).message
    assert isinstance(reply, types.JSONRPCError) and reply.id == "L" and "exited" in reply.error.message


@pytest.mark.parametrize(("message", "expected"), [
    (types.JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call", params={"name": "x"}),
     ("request", 7, "tools/call", {"name": "x"}, None, None)),
    (types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 7}),
     ("notification", None, "notifications/cancelled", {"requestId": 7}, None, None)),
    (types.JSONRPCResponse(jsonrpc="2.0", id="a", result={"content": []}),
     ("response", "a", None, None, {"content": []}, None)),
    (types.JSONRPCError(jsonrpc="2.0", id=3, error=types.ErrorData(code=-32602, message="bad")),
     ("error", 3, None, None, None, types.ErrorData(code=-32602, message="bad"))),
])
def test_an_sdk_model_envelope_reads_each_kind_s_own_fields(message: Any, expected: tuple) -> None:
    envelope = envelope_of(SessionMessage(message))
    assert (envelope.kind, envelope.id, envelope.method, envelope.params, envelope.result, envelope.error) == expected


async def _through_the_multiplexer(request: Any, reply_to: Any) -> Any:
    """One exchange through a Multiplexer; `reply_to(upstream_id)` is what the shared relay answers it with."""
    from proxy.core.multiplex import Multiplexer

    mux = Multiplexer()
    upstream_side, writer = mux.streams
    replies: list[Any] = []

    async def client() -> None:
        replies.append(await mux.exchange(request))

    async with anyio.create_task_group() as tg:
        tg.start_soon(client)
        forwarded = await upstream_side.receive()
        assert forwarded.id != request.id  # renamed for the shared relay
        await writer.send(reply_to(forwarded.id))
    (reply,) = replies
    return reply


async def test_the_multiplexer_gives_a_frame_reply_back_under_the_client_s_id_without_an_sdk_model() -> None:
    from proxy.core.jsonrpc import Frame, dump

    request = Frame("request", {"jsonrpc": "2.0", "id": "client-7", "method": "tools/call", "params": {"name": "x"}})
    reply = await _through_the_multiplexer(
        request, lambda upstream_id: Frame("response", {"jsonrpc": "2.0", "id": upstream_id,
                                                        "result": {"big": 10**30}}))
    assert type(reply) is Frame and reply._model is None
    assert dump(reply) == b'{"jsonrpc":"2.0","id":"client-7","result":{"big":1000000000000000000000000000000}}\n'


async def test_the_multiplexer_gives_an_sdk_model_reply_back_under_the_client_s_id() -> None:
    from proxy.core.jsonrpc import Frame

    error = types.ErrorData(code=-32601, message="Method not found")
    reply = await _through_the_multiplexer(
        Frame("request", {"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        lambda upstream_id: SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=upstream_id, error=error)))
    assert reply.message == types.JSONRPCError(jsonrpc="2.0", id=3, error=error)


async def test_a_withdrawn_exchange_tells_the_relay_raises_withdrawn_and_drops_the_late_reply() -> None:
    from proxy.core.multiplex import Multiplexer, Withdrawal, Withdrawn

    mux = Multiplexer()
    upstream_side, writer = mux.streams
    request = Frame("request", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}})
    withdrawal = Withdrawal()
    outcome: list[Any] = []

    async def client() -> None:
        try:
            outcome.append(await mux.exchange(request, withdrawal=withdrawal))
        except Withdrawn:
            outcome.append("withdrawn")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(client)
            forwarded = await upstream_side.receive()
            withdrawal.withdraw()
            cancelled = await upstream_side.receive()
        assert outcome == ["withdrawn"] and mux.open_exchanges == 0
        assert (cancelled.method, cancelled.params["requestId"]) == ("notifications/cancelled", forwarded.id)
        await writer.send(Frame("response", {"jsonrpc": "2.0", "id": forwarded.id, "result": {}}))  # dropped
        assert mux.open_exchanges == 0
        with pytest.raises(Withdrawn):  # withdrawn before it was sent: nothing reaches the relay
            await mux.exchange(request, withdrawal=withdrawal)
        with anyio.move_on_after(0.05):
            assert await upstream_side.receive() is None


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=examples(300), deadline=None)
@given(request_id=st.integers() | st.text(), result=st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=5))
def test_a_refusal_result_is_written_as_the_sdk_model_would_write_it(request_id: Any, result: dict) -> None:
    """result_message skips the SDK's model; the line it writes must still read back as the model's line does."""
    model = SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))
    ours = result_message(request_id, result)
    assert json.loads(dump(ours)) == json.loads(dump(model))
    assert ours.message == model.message  # and an SDK transport on the other side gets the same model


def test_the_gate_s_own_refusal_goes_out_without_an_sdk_model() -> None:
    catalog = Catalog()
    catalog.replace([ECHO])
    gate = Gate()
    kind, payload = gate.reply(gate.check({"name": "echo", "arguments": {"t": 1}}, catalog.tools), modern=False)
    message = result_message(7, payload)
    assert kind == "result" and type(message) is Frame and message._model is None
    line = dump(message)
    assert json.loads(line) == {"jsonrpc": "2.0", "id": 7, "result": payload} and line.endswith(b"\n")
    assert message._model is None  # writing it built none either


class _FakePipe:
    """The transport side a LineReader talks to: only flow control."""

    def __init__(self) -> None:
        self.paused = False
        self.pauses = 0

    def pause_reading(self) -> None:
        self.paused, self.pauses = True, self.pauses + 1

    def resume_reading(self) -> None:
        self.paused = False


async def _lines_of(reader: Any) -> list[bytes]:
    lines = []
    while line := await reader.next_line():
        lines.append(line.rstrip(b"\n"))
    return lines


@settings(max_examples=examples(300), deadline=None)
@given(lines=st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=8),
       cuts=st.lists(st.integers(0, 120), max_size=10), last_newline=st.booleans(), limit=st.sampled_from([5, 8, 1000]))
def test_the_line_reader_yields_the_same_lines_however_the_pipe_cuts_the_bytes(
        lines: list[bytes], cuts: list[int], last_newline: bool, limit: int) -> None:
    from proxy.core.framing import TOO_LARGE, LineReader

    stream = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    reader = LineReader(limit)
    reader.connection_made(_FakePipe())  # type: ignore[arg-type]
    edges = sorted({c for c in cuts if 0 < c < len(stream)})
    for start, end in zip([0, *edges], [*edges, len(stream)]):
        reader.data_received(stream[start:end])
    reader.eof_received()
    reader.connection_lost(None)
    # A line over the limit is one TOO_LARGE in its place. Blank lines may come through or not
    # (parse_line skips them), so they are left out on both sides.
    got = [line for line in anyio.run(_lines_of, reader) if line.strip()]
    expected = [TOO_LARGE if len(line) > limit else line for line in lines]
    assert got == [line for line in expected if line.strip()]


async def test_the_line_reader_pauses_the_pipe_while_too_much_is_queued_and_ends_with_the_pipe_s_error() -> None:
    from proxy.core.framing import LineReader

    pipe = _FakePipe()
    reader = LineReader(4)
    reader.connection_made(pipe)  # type: ignore[arg-type]
    reader.data_received(b"aaa\nbbb\nccc\n")  # 9 bytes queued, over twice the limit
    assert pipe.paused and pipe.pauses == 1
    assert await reader.next_line() == b"aaa"
    assert pipe.paused  # 6 bytes still queued: reading resumes only at the limit or below
    assert await reader.next_line() == b"bbb"
    assert not pipe.paused
    reader.connection_lost(BrokenPipeError("gone"))
    assert await reader.next_line() == b"ccc"  # what was read before the error is still delivered
    with pytest.raises(BrokenPipeError):
        await reader.next_line()


# ---- the wire rule's fast reading against its slow one ------------------------------------------------

# Names that collide under some reading: duplicates, ASCII case, Unicode folding (long s, Kelvin sign,
# accented letters), NUL, and names and values with ':' in them (what the fast reading counts).
_NAMES = ["a", "A", "b", "id", "ID", "Id", "method", "METHOD", ":", "a:b", "s", "\u017f", "k", "\u212a",
          "\u00e9", "\u00c9", "x\x00", "x", "e", "E"]
_SCALARS = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                     st.booleans(), st.none(), st.sampled_from(["", "x:y", "::", "A", "\u00e9:", "1E5", "\x01"]))


def _containers(inner: st.SearchStrategy) -> st.SearchStrategy:
    """Arrays, and objects as (name, value) pairs in wire order, so that duplicate names survive."""
    return st.one_of(st.lists(inner, max_size=4),
                     st.lists(st.tuples(st.sampled_from(_NAMES), inner), max_size=5).map(tuple))


# Built once, at module level: hypothesis checks a recursive strategy's extend function when it is
# first drawn from, and a strategy rebuilt inside every draw would be checked on every example.
_WIRE_VALUES = st.recursive(_SCALARS, _containers, max_leaves=12)


@st.composite
def _json_texts(draw: Any) -> bytes:
    """A JSON text written pair by pair (so duplicates survive), ASCII-escaped or not."""
    ensure_ascii = draw(st.booleans())

    def text(value: Any) -> str:
        if isinstance(value, tuple):  # an object: (name, value) pairs in wire order
            return "{" + ",".join(f"{json.dumps(k, ensure_ascii=ensure_ascii)}:{text(v)}" for k, v in value) + "}"
        if isinstance(value, list):
            return "[" + ",".join(text(v) for v in value) + "]"
        return json.dumps(value, ensure_ascii=ensure_ascii)

    return text(draw(_WIRE_VALUES)).encode()


_REFUSED = object()


def _slow_reading(data: bytes) -> Any:
    try:
        return json.loads(data, object_pairs_hook=jsonrpc._pairs)
    except jsonrpc._Ambiguous:
        return _REFUSED


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same JSON types all the way down (1 and 1.0 and True are three values here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


# Each way the fast reading counts: re-parsing the lowered frame in C, and walking the value.
_COUNTINGS = pytest.mark.parametrize("counted_in_c", [True, False], ids=["counted-in-c", "walked"])


def _fast_reading(data: bytes, counted_in_c: bool) -> Any:
    with mock.patch.object(jsonrpc, "_COUNTED_IN_C", 1 << 30 if counted_in_c else -1):
        return jsonrpc._fast_strict(data)


@_COUNTINGS
@settings(max_examples=examples(1000), deadline=None)
@given(data=_json_texts())
def test_the_fast_reading_accepts_only_what_the_slow_one_accepts_and_reads_it_the_same(
        counted_in_c: bool, data: bytes) -> None:
    fast, slow = _fast_reading(data, counted_in_c), _slow_reading(data)
    if fast is not jsonrpc._SLOW:
        assert slow is not _REFUSED, f"the fast reading accepted a frame the wire rule refuses: {data!r}"
        assert _same(fast, slow), (data, fast, slow)
    elif slow is not _REFUSED and b"\\u003" not in data:
        # Only the escapes of ':' defeat the count; everything else the rule accepts takes the fast way.
        pytest.fail(f"the fast reading gave up on a frame the wire rule accepts: {data!r}")


@pytest.mark.parametrize("data", [
    b'{"a":1,"a":2}', b'{"x":{"a":1,"A":2}}', b'[{"Id":1,"iD":2}]', b'{"k":1,"\\u212a":2}',
    b'{"s":1,"\\u017f":2}', '{"s":1,"\u017f":2}'.encode(), b'{"a:b":1,"a:b":":"}', b'{"E":1E5,"e":1e5}',
])
@_COUNTINGS
def test_the_fast_reading_never_accepts_names_that_collide(counted_in_c: bool, data: bytes) -> None:
    assert _slow_reading(data) is _REFUSED
    assert _fast_reading(data, counted_in_c) is jsonrpc._SLOW


@pytest.mark.parametrize("line", [
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {"b": 1, "a": 2}}}\n',
    b'{"params": {"name": "t", "arguments": {"b": 1, "a": 2}}, "method": "tools/call", "id": 1, "jsonrpc": "2.0"}\n',
    b'{"id": 1, "jsonrpc": "2.0", "method": "tools/call", "params": {"name": "t", "arguments": {"b": 1, "a": 2}}}\n',
])
def test_a_validated_copy_is_written_from_its_value_in_the_model_s_member_order(line: bytes) -> None:
    copy = validated_copy(parse_line(line))
    assert copy.raw is None
    assert dump(copy) == b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"b":1,"a":2}}}\n'
