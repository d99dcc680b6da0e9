"""JSON-RPC plumbing shared by every transport and by the relay.

Nothing here knows about schemas. It exists because the SDK's message models
are lossy in a few places a relay cannot afford (see the notes on each
function), and because replies the proxy writes itself must look exactly like
the ones an MCP server would write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import mcp_types as types
import msgspec
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

PARSE_ERROR = types.PARSE_ERROR
INVALID_REQUEST = types.INVALID_REQUEST
INVALID_PARAMS = types.INVALID_PARAMS
INTERNAL_ERROR = types.INTERNAL_ERROR
CONNECTION_CLOSED = types.CONNECTION_CLOSED
PROTOCOL_VERSION_META_KEY = types.PROTOCOL_VERSION_META_KEY
# Envelope keys a 2026-07-28 client stamps on every request. The proxy copies
# them onto its own requests so the upstream sees one coherent client; the
# log-level opt-in is left out on purpose (the proxy wants no log traffic
# triggered by its own listing).
ENVELOPE_KEYS = (
    types.PROTOCOL_VERSION_META_KEY,
    types.CLIENT_INFO_META_KEY,
    types.CLIENT_CAPABILITIES_META_KEY,
)


class WireError(Exception):
    """A client frame that is not a usable JSON-RPC message, with the reply it deserves.

    Transports put this on their read stream (the SDK convention for bad
    frames is an Exception on the read stream) and the relay answers it.
    `reply_id` is the id to echo: possibly a float such as 1.0, which the SDK's
    RequestId type cannot hold, so the reply is built without validation.
    """

    def __init__(self, code: int, message: str, reply_id: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reply_id = reply_id


def id_key(request_id: Any) -> tuple[bool, Any]:
    """A dictionary key that keeps "7" and 7 apart.

    The SDK dispatcher deliberately coerces "7" to 7 for correlation; a relay
    must not, or two distinct client requests would share one slot.
    """
    return (isinstance(request_id, str), request_id)


def error_message(request_id: Any, code: int, message: str, data: Any = None) -> SessionMessage:
    error = types.ErrorData(code=code, message=message) if data is None else types.ErrorData(
        code=code, message=message, data=data
    )
    if request_id is None or (isinstance(request_id, (int, str)) and not isinstance(request_id, bool)):
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
    # A float id (1.0) is echoed as sent so the client can still correlate the
    # reply; model_construct skips the int|str check the SDK type imposes.
    return SessionMessage(types.JSONRPCError.model_construct(jsonrpc="2.0", id=request_id, error=error))


def result_message(request_id: Any, result: dict[str, Any]) -> SessionMessage:
    """A result the gate answers itself (a refused call's isError result).

    A `Frame` rather than the SDK's model: a refusal should cost less than
    a forwarded call, and the model's validation and serialisation were most
    of its price. Built only from what the model would accept (an int or
    string id, an object result); it writes the JSON value the model would.
    """
    if type(request_id) in (int, str) and type(result) is dict:
        return Frame("response", {"jsonrpc": "2.0", "id": request_id, "result": result})
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))


Kind = Literal["request", "notification", "response", "error"]


class Envelope(Protocol):
    """What the relay and the hooks read of any message, whichever transport delivered it.

    `Frame` (a line read from a pipe) is one; `envelope_of()` gives one for an
    SDK SessionMessage. Members a kind does not have are None.
    """

    kind: Kind
    id: Any
    method: str | None
    params: Any
    result: Any
    error: Any


class Frame(SessionMessage):
    """A SessionMessage parsed from one pipe line without the SDK's models: the parsed value and the raw line.

    The pipe transports produce one per line of the usual shapes (see
    `_kind_of`), so relaying a message costs no pydantic model. Forwarding
    `raw` instead of re-serializing keeps a relayed message byte-identical
    (unknown members, number spellings such as 1e400, key order). The SDK
    model is built only when something asks for `.message` (an SDK transport
    on the other side, the gate's own requests' replies). `validated_copy`
    gives the copy without `raw` that the gate forwards after checking.
    """

    # The members a kind lacks read as these (a Frame is built for every message: each store counts).
    id: Any = None
    method: str | None = None
    params: Any = None
    result: Any = None
    error: Any = None

    def __init__(self, kind: Kind, value: dict[str, Any], raw: bytes | None = None, metadata: Any = None) -> None:
        """`value` has the shape `_kind_of` takes as `kind`: the members that kind requires are there."""
        self.kind = kind
        self.value = value
        self.raw = raw
        self.metadata = metadata
        self._model: types.JSONRPCMessage | None = None
        if kind == "request":
            self.id, self.method, self.params = value["id"], value["method"], value.get("params")
        elif kind == "response":
            self.id, self.result = value["id"], value["result"]
        elif kind == "notification":
            self.method, self.params = value["method"], value.get("params")
        else:
            self.id, self.error = value.get("id"), value["error"]

    @property
    def message(self) -> types.JSONRPCMessage:  # type: ignore[override]
        if self._model is None:
            # _kind_of only admits shapes this validates, as the kind it named.
            self._model = types.jsonrpc_message_adapter.validate_python(self.value, by_name=False)
        return self._model


class _ModelEnvelope:
    """The Envelope of a SessionMessage carrying an SDK model."""

    __slots__ = ("kind", "id", "method", "params", "result", "error")

    def __init__(self, message: types.JSONRPCMessage) -> None:
        # Each kind's own fields only: asking a pydantic model for a field it lacks
        # goes through BaseModel.__getattr__ and a caught AttributeError.
        self.kind: Kind
        self.id = self.method = self.params = self.result = self.error = None
        if isinstance(message, types.JSONRPCRequest):
            self.kind = "request"
            self.id, self.method, self.params = message.id, message.method, message.params
        elif isinstance(message, types.JSONRPCNotification):
            self.kind = "notification"
            self.method, self.params = message.method, message.params
        elif isinstance(message, types.JSONRPCResponse):
            self.kind = "response"
            self.id, self.result = message.id, message.result
        else:
            self.kind = "error"
            self.id, self.error = getattr(message, "id", None), getattr(message, "error", None)


def envelope_of(message: SessionMessage) -> Envelope:
    return message if type(message) is Frame else _ModelEnvelope(message.message)


# The members the SDK's model of each kind keeps, in its order (what its re-serialization writes).
_MEMBERS: dict[str, tuple[str, ...]] = {
    "request": ("jsonrpc", "id", "method", "params"),
    "notification": ("jsonrpc", "method", "params"),
    "response": ("jsonrpc", "id", "result"),
    "error": ("jsonrpc", "id", "error"),
}
_MEMBER_SETS = {kind: frozenset(members) for kind, members in _MEMBERS.items()}
_ERROR_MEMBERS = frozenset(("code", "message", "data"))


def _kind_of(value: Any) -> Kind | None:
    """The kind of a parsed message in a shape the SDK's model takes as exactly that kind, else None.

    Anything unusual (unknown members, an id that is not a string or an
    integer, params that are not an object, method beside result or error)
    is None and goes the SDK's way in parse_line, whose diagnosis applies.
    """
    if type(value) is not dict or value.get("jsonrpc") != "2.0":
        return None
    if "method" in value:
        if type(value["method"]) is not str or ("params" in value and type(value["params"]) is not dict):
            return None
        kind: Kind = "notification"
        if "id" in value:
            if type(value["id"]) is not int and type(value["id"]) is not str:
                return None
            kind = "request"
    elif "result" in value:
        if type(value["result"]) is not dict or type(value.get("id")) not in (int, str):
            return None
        kind = "response"
    elif "error" in value:
        error, request_id = value["error"], value.get("id")
        if (type(error) is not dict or not error.keys() <= _ERROR_MEMBERS or type(error.get("code")) is not int
                or type(error.get("message")) is not str or not (request_id is None or type(request_id) in (int, str))):
            return None
        kind = "error"
    else:
        return None
    return kind if value.keys() <= _MEMBER_SETS[kind] else None


def validated_copy(message: SessionMessage) -> SessionMessage:
    """The message rebuilt from its parsed value: what the gate checked, not the bytes it was sent as.

    Written by the receiving transport from the value (no raw line, no
    transport metadata), with the members the SDK's model would write.
    """
    if type(message) is Frame:
        value, members = message.value, _MEMBERS[message.kind]
        if tuple(value) != members[:len(value)]:  # not already in the model's order (_kind_of admits no others)
            value = {key: value[key] for key in members if key in value}
        return Frame(message.kind, value)
    return SessionMessage(message.message)


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def dump(message: SessionMessage) -> bytes:
    """One line for a newline-delimited wire; warnings off for the float-id replies above."""
    raw = getattr(message, "raw", None)
    if raw is not None:
        return raw
    if type(message) is Frame and message._model is None:
        try:
            return _encode(message.value) + b"\n"
        except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
            pass  # a lone surrogate in a string: as the SDK's model writes it
    return message.message.model_dump_json(by_alias=True, exclude_unset=True, warnings=False).encode() + b"\n"


@dataclass
class WireMessage(SessionMessage):
    """A SessionMessage with an SDK model that remembers the exact line it was parsed from.

    For the lines `Frame` does not take (unusual shapes, numbers msgspec
    refuses such as 1e400): forwarded as the line, as a Frame is.
    """

    raw: bytes | None = None


def meta_of(params: Any) -> dict[str, Any] | None:
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict):
            return meta
    return None


def modern_envelope(params: Any) -> dict[str, Any] | None:
    """The 2026-07-28 per-request envelope of a request's params, or None for the handshake era."""
    meta = meta_of(params)
    if meta is None or meta.get(PROTOCOL_VERSION_META_KEY) not in MODERN_PROTOCOL_VERSIONS:
        return None
    return {key: meta[key] for key in ENVELOPE_KEYS if key in meta}


# Methods the MCP specification defines as requests. Sent without an id they
# can get no answer, yet a server dispatching on `method` might act on them,
# so the gate never forwards one as a notification.
REQUEST_METHODS = frozenset({
    "initialize", "ping", "server/discover", "subscriptions/listen",
    "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
    "logging/setLevel", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
    "sampling/createMessage", "elicitation/create", "roots/list",
})

# The members the gate itself reads: at the top level of every message, and in
# the params of a tools/call.
ENVELOPE_MEMBERS = ("jsonrpc", "id", "method", "params", "result", "error")
CALL_MEMBERS = ("name", "arguments", "_meta")


def fold(name: str) -> str:
    """A member name as the most lenient JSON reader matches it.

    Go's encoding/json (and SDKs built on it) matches struct fields ignoring
    case with Unicode folding (`ſ` is `s`, the Kelvin sign is `k`); a later
    Go SDK parser also ignored NUL characters. casefold() folds at least as
    much as either.
    """
    return name.replace("\x00", "").casefold()


_FOLDED_ENVELOPE = {fold(m): m for m in ENVELOPE_MEMBERS}
_FOLDED_CALL = {fold(m): m for m in CALL_MEMBERS}
assert all(fold(m) == m for m in (*ENVELOPE_MEMBERS, *CALL_MEMBERS))  # what _variant's shortcut relies on


class _Ambiguous(ValueError):
    """A frame that two JSON readers could read as different messages."""


class _NotJSON(ValueError):
    """A frame that parsed only because Python's reader accepts NaN and Infinity; its id can still be echoed."""


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(items)
    if len(obj) != len(items):
        seen: set[str] = set()
        name = next(k for k, _ in items if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Ambiguous(f"the member name {json.dumps(name)} appears twice in one object")
    if len(items) > 1:
        joined = "\x01".join(obj)
        if joined.isascii() and "\x00" not in joined:
            # ASCII names can only collide with each other by case: one C-level pass decides.
            if len({key.lower() for key in obj}) == len(obj):
                return obj
        folded: dict[str, str] = {}
        for key in obj:
            other = folded.setdefault(fold(key), key)
            if other != key:
                raise _Ambiguous(f"the member names {json.dumps(other)} and {json.dumps(key)} differ only in "
                                 "letter case or NUL characters")
    return obj


def _variant(obj: dict[str, Any], members: dict[str, str]) -> str | None:
    for key in obj:
        if key in members:  # a member's own name (every name the gate reads is its own folding)
            continue
        canonical = members.get(fold(key))
        if canonical is not None and canonical != key:
            return f"the member name {json.dumps(key)} is a variant of {json.dumps(canonical)}"
    return None


_SLOW = object()
_COUNTED_IN_C = 4096  # bytes: the largest frame _fast_strict counts by re-parsing it lowered


def _tally(value: Any, plain: bool) -> int:
    """Members of every object plus the ':' in every string (names and values) of a parsed value.

    -1 when one object has two member names that fold alike (see _pairs),
    which only the slow path can word. `plain`: the frame is ASCII without
    any \\u escape, so every name is ASCII without NUL or \\x01, and folds
    as lower() does.
    """
    kind = type(value)
    if kind is str:
        return value.count(":") if ":" in value else 0
    if kind is dict:
        count = len(value)
        if count:
            names = "\x01".join(value)
            if count > 1:
                if plain:
                    lowered = names.lower()
                    # Names already in lower case cannot collide; others are compared lowered.
                    if lowered != names and len(set(lowered.split("\x01"))) != count:
                        return -1
                elif not (names.isascii() and "\x00" not in names
                          and len({name.lower() for name in value}) == count):
                    if len({fold(name) for name in value}) != count:
                        return -1
            if ":" in names:
                count += names.count(":")
        items: Any = value.values()
    elif kind is list:
        count, items = 0, value
    else:
        return 0
    for item in items:
        kind = type(item)
        if kind is str:
            if ":" in item:  # str.count parses its arguments the slow way on 3.11; `in` does not
                count += item.count(":")
        elif kind is dict or kind is list:
            sub = _tally(item, plain)
            if sub < 0:
                return -1
            count += sub
    return count


def _fast_strict(data: bytes) -> Any:
    """The value strict_loads' object rules accept, parsed by msgspec, or _SLOW when that cannot be shown cheaply.

    msgspec keeps the last of two equal member names without saying so, so
    duplicates are ruled out by counting: outside strings, a JSON text has
    exactly one ':' per object member, and inside strings a ':' byte is a
    ':' character (UTF-8 never uses 0x3A in a multi-byte sequence), unless
    it is written as an escape, \\u003a or \\u003A (frames containing
    "\\u003" go the slow way). So the frame's ':' bytes equal the parsed
    members plus the ':' characters in parsed strings exactly when no member
    was dropped. msgspec refuses everything json.loads would refuse, and
    more (NaN and Infinity, lone surrogates, a BOM, nesting deeper than its
    limit), and reads every value it accepts as json.loads does (integers of
    any size stay integers); all of that goes the slow way.

    A small frame that is ASCII without any \\u escape (most calls) is
    counted in C: lowered, it is still JSON of the same shape (upper-case
    letters occur only inside strings and as an exponent's E), in which two
    names that differed only in case are now equal, so msgspec drops one;
    re-encoded, it has one ':' per member left plus the ':' characters of
    its strings (msgspec escapes none). Walking the value in Python costs
    about a microsecond per object, which this saves; but a large frame is
    usually one long string, which the walk passes over in one scan while
    the count in C would decode and encode it twice, so large frames are
    walked (the figures are in docs/performance.md).
    """
    plain = data.isascii() and b"\\u" not in data
    if not plain and b"\\u003" in data:
        return _SLOW
    try:
        value = _decode(data)
        if plain and len(data) <= _COUNTED_IN_C:
            count = _encode(_decode(data.lower())).count(b":")
        else:
            count = _tally(value, plain)
    except (msgspec.MsgspecError, RecursionError):
        return _SLOW
    if count != data.count(b":"):
        return _SLOW
    return value


def strict_loads(data: str | bytes) -> Any:
    """Parse a client frame so that every JSON reader would read it the same way; raises ValueError.

    The wire rule: no duplicate member names in any object; no two member
    names in one object that differ only in letter case (Unicode folding) or
    NUL characters; at the top level and in a tools/call's params, no member
    that is a case or NUL variant of a member the gate reads (a lenient
    reader would take it for that member, which the gate never checked); no
    `method` beside `result` or `error` (one reader dispatches a request,
    another sees a response); no NaN or Infinity tokens (but in a tools/call,
    whose arguments the validator refuses with their path). Python keeps the
    last of two duplicates and JavaScript too, other readers the first; Go
    matches names ignoring case. A frame outside the rule is refused whole
    rather than normalised, since normalising picks one reader's answer.
    """
    value = _fast_strict(data) if isinstance(data, bytes) else _SLOW
    constants: list[str] = []  # msgspec refuses NaN and Infinity: only the slow reading finds any
    if value is _SLOW:
        value = json.loads(data, object_pairs_hook=_pairs,
                           parse_constant=lambda token: constants.append(token) or float(token))
    if isinstance(value, dict):
        reason = _variant(value, _FOLDED_ENVELOPE)
        if reason is None and "method" in value and ("result" in value or "error" in value):
            reason = "a message has a method and also a result or an error"
        if reason is None and value.get("method") == "tools/call" and isinstance(value.get("params"), dict):
            reason = _variant(value["params"], _FOLDED_CALL)
        if reason is not None:
            raise _Ambiguous(reason)
    if constants and not (isinstance(value, dict) and value.get("method") == "tools/call"):
        # In a tools/call the validator refuses them with the argument's path,
        # which tells the model more; anywhere else they are not JSON.
        raise _NotJSON(f"{constants[0]} is not a JSON value")
    return value


def _checked(data: str | bytes) -> Any:
    """strict_loads, or the WireError the frame deserves (with its id wherever one can be found)."""
    try:
        return strict_loads(data)
    except _Ambiguous as exc:
        return WireError(INVALID_REQUEST, f"Invalid Request: {exc}; refused so that no reader can see a "
                         "different message than the gate checked", _top_level_id(data))
    except RecursionError:
        return WireError(PARSE_ERROR, "Parse error: the message nests too deeply to parse", _top_level_id(data))
    except _NotJSON as exc:
        return WireError(PARSE_ERROR, f"Parse error: {exc}", _top_level_id(data))
    except ValueError as exc:
        return WireError(PARSE_ERROR, f"Parse error: {exc}")


def wire_value(body: bytes) -> Any:
    """An HTTP body under the wire rule (strict_loads): the value it parsed to, or the WireError it deserves.

    The refusal covers what no reader may see differently, batches, and an
    id the SDK would take for a notification; anything else passes with its
    value (a shape the gate does not take itself is then parsed, and its
    ordinary errors answered, by the SDK's transport).
    """
    value = _checked(body)
    if isinstance(value, WireError):
        return value
    if isinstance(value, list):
        return WireError(INVALID_REQUEST, "Invalid Request: batches are not supported; send one message per request")
    if isinstance(value, dict) and "id" in value:
        raw_id = value["id"]
        if not isinstance(raw_id, int | str) or isinstance(raw_id, bool):
            # The SDK would read a request with such an id as a notification:
            # the client would never be answered, and a request method would
            # travel without an id.
            return _diagnose_value(value)
    return value


def json_frame(body: bytes) -> Frame | None:
    """A JSON text from an upstream as a Frame without a raw line, or None where the SDK's parser must decide.

    None for what msgspec refuses (the SDK's parser then answers, or words
    the error) and for shapes `_kind_of` does not take. Upstream frames are
    not held to the wire rule: the gate decides on what clients send.
    """
    try:
        value = _decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    return frame_of(value)


def frame_of(value: Any) -> Frame | None:
    """A parsed frame as a Frame without a raw line, if its shape is one `_kind_of` takes; else None.

    Without a raw line, the message is written from its value when it is
    forwarded: a body from HTTP may span lines, which a newline-delimited
    upstream must never see.
    """
    kind = _kind_of(value)
    return None if kind is None else Frame(kind, value)


def parse_line(line: str | bytes, *, strict: bool = True) -> SessionMessage | Exception | None:
    """Parse one line of a newline-delimited JSON-RPC stream.

    Returns None for a blank line, a SessionMessage, or a WireError carrying the
    reply a bad frame deserves. `strict` applies the wire rule (strict_loads):
    for frames from the client, which the gate decides on. The SDK parser
    alone is not enough either way: a request whose id is 1.0, true or null
    fails the strict RequestId type and silently validates as a
    *notification*, which would drop the client's reply.
    """
    if not line or (line[:1].isspace() and not line.strip()):  # strip() only where it can matter: it copies
        return None
    if isinstance(line, bytes):
        raw = line if line[-1:] == b"\n" else line + b"\n"  # not endswith: on 3.11 it parses its arguments slowly
        if strict:
            value = _checked(line)
            if isinstance(value, WireError):
                return value
        else:
            try:
                value = _decode(line)
            except (msgspec.DecodeError, RecursionError):
                value = None  # the SDK's parser decides, and _diagnose says why
        kind = _kind_of(value)
        if kind is not None:
            return Frame(kind, value, raw)
        message = _sdk_message(value, strict) if strict else _sdk_message(line, strict)
        return message if isinstance(message, WireError) else WireMessage(message, raw=raw)
    message = _sdk_message(_checked(line) if strict else line, strict)
    return message if isinstance(message, WireError) else SessionMessage(message)


def _sdk_message(source: Any, strict: bool) -> types.JSONRPCMessage | WireError:
    """The SDK's model of a message (strict: from its value; otherwise from its line), or the error it deserves."""
    if isinstance(source, WireError):
        return source
    if strict:
        try:
            message = types.jsonrpc_message_adapter.validate_python(source, by_name=False)
        except ValueError:
            return _diagnose_value(source)
        if isinstance(message, types.JSONRPCNotification) and isinstance(source, dict) and "id" in source:
            return _diagnose_value(source)
        return message
    try:
        message = types.jsonrpc_message_adapter.validate_json(source, by_name=False)
    except ValueError:
        return _diagnose(source)
    if isinstance(message, types.JSONRPCNotification) and _has_id_member(source):
        return _diagnose(source)
    return message


def _has_id_member(line: str | bytes) -> bool:
    # Cheap pre-check on the raw text before paying for a second parse.
    if (b'"id"' if isinstance(line, bytes) else '"id"') not in line:
        return False
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(raw, dict) and "id" in raw


def _top_level_id(line: str | bytes) -> int | float | str | None:
    """The top-level "id" of a frame that could not be parsed as one message, found by one flat scan.

    Without it the reply to such a request would carry a null id and the
    client would wait for its answer forever. Of two ids, the last is the one
    Python and JavaScript readers (and so most clients) would see.
    """
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    found: int | float | str | None = None
    depth, i, n = 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if depth == 1 and text[i:end + 1] == '"id"':
                rest = text[end + 1:].lstrip()
                if rest.startswith(":"):
                    try:
                        value, _ = json.JSONDecoder().raw_decode(rest[1:].lstrip())
                    except ValueError:
                        value = None
                    # A number is echoed as sent (1.5 included), as JSON-RPC allows numeric ids.
                    found = value if isinstance(value, int | float | str) and not isinstance(value, bool) else None
            i = end + 1
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return found


def _diagnose(line: str | bytes) -> WireError:
    """Work out which JSON-RPC error a frame the SDK refused deserves."""
    try:
        raw = json.loads(line)
    except RecursionError:
        return WireError(PARSE_ERROR, "Parse error: the message nests too deeply to parse", _top_level_id(line))
    except ValueError as exc:
        return WireError(PARSE_ERROR, f"Parse error: {exc}")
    return _diagnose_value(raw)


def _diagnose_value(raw: Any) -> WireError:
    if not isinstance(raw, dict):
        return WireError(
            INVALID_REQUEST, "Invalid Request: a message must be a JSON object (batches are not supported)"
        )
    raw_id = raw.get("id")
    valid_id = isinstance(raw_id, (int, str)) and not isinstance(raw_id, bool)
    # Echo a numeric id as sent (JSON-RPC allows numbers); anything else cannot
    # be correlated, and JSON-RPC says the reply id is then null.
    echo = raw_id if valid_id or isinstance(raw_id, float) else None
    if "id" in raw and not valid_id:
        return WireError(
            INVALID_REQUEST,
            f"Invalid Request: id must be a string or an integer, got {json.dumps(raw_id)}",
            echo,
        )
    if isinstance(raw.get("method"), str) and "params" in raw and not isinstance(raw["params"], dict | None):
        return WireError(INVALID_PARAMS, "Invalid params: params must be an object", echo)
    return WireError(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", echo)
