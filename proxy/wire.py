"""JSON-RPC plumbing shared by every transport and by the relay.

Nothing here knows about schemas. It exists because the SDK's message models
are lossy in a few places a relay cannot afford (see the notes on each
function), and because replies the proxy writes itself must look exactly like
the ones an MCP server would write.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
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
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))


@dataclass
class WireMessage(SessionMessage):
    """A SessionMessage that remembers the exact line it was parsed from.

    Forwarding that line instead of re-serializing keeps a relayed message
    byte-identical (unknown top-level members, number spellings such as 1e400
    that pydantic would turn into null, key order) and saves a serialization.
    Whoever wants a message re-serialized from its parsed value (the gate, for
    a tools/call, so that exactly the validated value is sent) builds a plain
    SessionMessage instead.
    """

    raw: bytes | None = None


def dump(message: SessionMessage) -> bytes:
    """One line for a newline-delimited wire; warnings off for the float-id replies above."""
    raw = getattr(message, "raw", None)
    if raw is not None:
        return raw
    return message.message.model_dump_json(by_alias=True, exclude_unset=True, warnings=False).encode() + b"\n"


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


def parse_line(line: str | bytes) -> SessionMessage | Exception | None:
    """Parse one line of a newline-delimited JSON-RPC stream.

    Returns None for a blank line, a SessionMessage, or a WireError carrying the
    reply a bad frame deserves. The SDK parser alone is not enough: a request
    whose id is 1.0, true or null fails the strict RequestId type and silently
    validates as a *notification*, which would drop the client's reply.
    """
    if not line.strip():
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        return _diagnose(line)
    if isinstance(message, types.JSONRPCNotification) and _has_id_member(line):
        return _diagnose(line)
    if isinstance(line, bytes):
        return WireMessage(message, raw=line if line.endswith(b"\n") else line + b"\n")
    return SessionMessage(message)


def _has_id_member(line: str | bytes) -> bool:
    # Cheap pre-check on the raw text before paying for a second parse.
    if (b'"id"' if isinstance(line, bytes) else '"id"') not in line:
        return False
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(raw, dict) and "id" in raw


def _top_level_id(line: str | bytes) -> int | str | None:
    """The top-level "id" of a frame too deeply nested to parse, found by one flat scan.

    Without it the reply to such a request would carry a null id and the client
    would wait for its answer forever.
    """
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
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
                        return None
                    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None
            i = end + 1
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return None


def _diagnose(line: str | bytes) -> WireError:
    """Work out which JSON-RPC error a frame the SDK refused deserves."""
    try:
        raw = json.loads(line)
    except RecursionError:
        return WireError(PARSE_ERROR, "Parse error: the message nests too deeply to parse", _top_level_id(line))
    except ValueError as exc:
        return WireError(PARSE_ERROR, f"Parse error: {exc}")
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


class WatchedReader:
    """A read stream that shows each message to ``watch`` (an async callable) before passing it on.

    The HTTP side uses it to learn from traffic without touching it: the
    negotiated protocol version for header stamping, the client's requests for
    stream routing.
    """

    def __init__(self, inner: Any, watch: Callable[[Any], Awaitable[None]], *, whole: bool = False) -> None:
        self._inner = inner
        self._watch = watch
        self._whole = whole  # show the SessionMessage (with its metadata), not only the JSON-RPC message

    def __aiter__(self) -> WatchedReader:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        if isinstance(item, SessionMessage):
            await self._watch(item if self._whole else item.message)
        return item
