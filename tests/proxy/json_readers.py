"""Several ways a server might read one JSON-RPC line, and the rule the gate must enforce at the wire.

A gate is only safe if the message it validated is the message the server
executes. Parsers disagree on the same bytes: Python's json.loads keeps the
last of two equal member names, other parsers keep the first, and Go's
encoding/json matches struct fields case-insensitively (with Unicode simple
folding, so "argumentſ" is "arguments" and a Kelvin sign K is "k"), the last
match winning. Each reader here returns the interpretation a server built on
that parser would act on; tests/proxy/test_wire_differential.py requires that
every reading of every line that reached the upstream is one the gate accepted.

`wire_verdict` is an executable statement of the rule the gate is being changed
to enforce ("one reading for every parser"); the tests compare the gate to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import jsonschema

from tests.proxy.recording_upstream import TOOLS

ENVELOPE = ("jsonrpc", "id", "method", "params", "result", "error")
CALL_PARAMS = ("name", "arguments", "_meta")
SCHEMAS = {tool["name"]: tool["inputSchema"] for tool in TOOLS}

# Every method the MCP specification defines as a request (either direction):
# sent without an id it is a notification no server should act on.
REQUEST_METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/templates/list",
    "resources/read", "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get",
    "completion/complete", "logging/setLevel", "sampling/createMessage", "elicitation/create", "roots/list",
    "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "server/discover", "subscriptions/listen",
})


class Pairs(list):
    """A JSON object as its members in wire order, duplicates kept."""


def parse_pairs(raw: str | bytes) -> Any:
    return json.loads(raw, object_pairs_hook=Pairs)


def _last(pairs: Pairs) -> dict:
    return {k: v for k, v in pairs}


def _first(pairs: Pairs) -> dict:
    out: dict = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def to_plain(value: Any, pick: Callable[[Pairs], dict] = _last) -> Any:
    """Collapse a Pairs tree to dicts, resolving duplicates with `pick`."""
    if isinstance(value, Pairs):
        return {k: to_plain(v, pick) for k, v in pick(value).items()}
    if isinstance(value, list):
        return [to_plain(v, pick) for v in value]
    return value


@dataclass
class Reading:
    reader: str
    kind: str  # request | notification | response | invalid
    method: Any = None
    id: Any = None
    tool: Any = None
    arguments: Any = None
    params: Any = None

    def short(self) -> str:
        return f"{self.reader}: {self.kind} {self.method!r} id={self.id!r} tool={self.tool!r} args={self.arguments!r}"


def _reading(reader: str, envelope: dict, params_of: Callable[[Any], dict | None]) -> Reading:
    method = envelope.get("method")
    if isinstance(method, str) and method:
        kind = "request" if envelope.get("id") is not None else "notification"
    elif "result" in envelope or "error" in envelope:
        kind = "response"
    else:
        kind = "invalid"
    reading = Reading(reader, kind, method, envelope.get("id"), params=envelope.get("params"))
    if method == "tools/call":
        params = params_of(envelope.get("params"))
        if params is not None:
            reading.tool = params.get("name")
            reading.arguments = params.get("arguments", {})
    return reading


def _python_reader(name: str, pick: Callable[[Pairs], dict]) -> Callable[[str | bytes], Reading]:
    def read(raw: str | bytes) -> Reading:
        tree = parse_pairs(raw)
        if not isinstance(tree, Pairs):
            return Reading(name, "invalid")
        envelope = to_plain(tree, pick)
        # A Python server reads a message with "method" as a request or notification
        # (JSON-RPC says method makes it one), whatever else it carries; an id of
        # null is still an id to a dict lookup, so "id" in message decides.
        method = envelope.get("method")
        if isinstance(method, str):
            kind = "request" if "id" in envelope else "notification"
        elif "result" in envelope or "error" in envelope:
            kind = "response"
        else:
            kind = "invalid"
        reading = Reading(name, kind, method, envelope.get("id"), params=envelope.get("params"))
        if method == "tools/call" and isinstance(envelope.get("params"), dict):
            reading.tool = envelope["params"].get("name")
            reading.arguments = envelope["params"].get("arguments", {})
        return reading

    return read


read_last_wins = _python_reader("last-wins", _last)
read_first_wins = _python_reader("first-wins", _first)


def fold(name: str, strip_nul: bool = False) -> str:
    """Go's EqualFold as a key (Python casefold is a superset of Unicode simple folding)."""
    return (name.replace("\x00", "") if strip_nul else name).casefold()


def go_struct(pairs: Any, fields: tuple[str, ...], strip_nul: bool) -> dict | None:
    """encoding/json into a struct: each member goes to the field whose name equals it exactly,
    else to one equal under case folding; a later member overwrites an earlier one; unknown
    members are ignored. Nested values that are not struct fields decode as maps (last wins)."""
    if not isinstance(pairs, Pairs):
        return None
    out: dict = {}
    for key, value in pairs:
        target = key if key in fields else next((f for f in fields if fold(f, strip_nul) == fold(key, strip_nul)), None)
        if target is not None:
            out[target] = value
    return out


def _go_reader(name: str, strip_nul: bool, struct_arguments: bool) -> Callable[[str | bytes], Reading]:
    def read(raw: str | bytes) -> Reading:
        tree = parse_pairs(raw)
        if not isinstance(tree, Pairs):
            return Reading(name, "invalid")
        envelope = go_struct(tree, ENVELOPE, strip_nul) or {}
        # go-sdk: a message with a non-empty method is a call if its id is valid
        # (not absent, not null), else a notification; result/error are ignored then.
        method = envelope.get("method")
        if isinstance(method, str) and method:
            kind = "request" if envelope.get("id") is not None else "notification"
        elif "result" in envelope or "error" in envelope:
            kind = "response"
        else:
            kind = "invalid"
        reading = Reading(name, kind, method, to_plain(envelope.get("id")), params=to_plain(envelope.get("params")))
        if method == "tools/call":
            params = go_struct(envelope.get("params"), CALL_PARAMS, strip_nul)
            if params is not None:
                reading.tool = to_plain(params.get("name"))
                arguments = params.get("arguments", Pairs())
                schema = SCHEMAS.get(reading.tool) if isinstance(reading.tool, str) else None
                if struct_arguments and schema is not None and isinstance(arguments, Pairs):
                    # A typed Go handler: arguments decode into a struct of the declared properties.
                    declared = tuple(schema.get("properties", {}))
                    reading.arguments = to_plain(go_struct(arguments, declared, strip_nul))
                else:
                    reading.arguments = to_plain(arguments)
        return reading

    return read


read_go_fold = _go_reader("go-fold", strip_nul=False, struct_arguments=False)
read_go_fold_nul = _go_reader("go-fold-nul", strip_nul=True, struct_arguments=False)
read_go_struct_args = _go_reader("go-struct-args", strip_nul=True, struct_arguments=True)

READERS = (read_last_wins, read_first_wins, read_go_fold, read_go_fold_nul, read_go_struct_args)


def readings(raw: str | bytes) -> list[Reading]:
    return [reader(raw) for reader in READERS]


def argument_problems(tool: Any, arguments: Any) -> list[str]:
    schema = SCHEMAS.get(tool) if isinstance(tool, str) else None
    if schema is None:
        return [f"a call of {tool!r}, a tool the upstream does not list"]
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for error in validator.iter_errors(arguments)]


def upstream_violations(raw: str | bytes) -> list[str]:
    """What is wrong with a line having reached the upstream, judged by every reader.

    A line the upstream received must mean one thing to every parser, and no
    parser may find in it a tools/call the gate would refuse, nor a request
    method sent as a notification (which the gate never validates and the
    server never answers).
    """
    out = []
    verdict = wire_verdict(raw)
    if verdict.refuse or verdict.drop:
        out.append(f"the gate should not have forwarded this frame: {'; '.join(verdict.reasons)}")
    try:
        every = readings(raw)
    except (ValueError, RecursionError):
        return out
    for reading in every:
        if reading.method in REQUEST_METHODS and reading.kind == "notification":
            out.append(f"{reading.reader} reads a {reading.method} notification (never validated, never answered)")
        if reading.method == "tools/call" and reading.kind == "request":
            if not isinstance(reading.arguments, dict):
                out.append(f"{reading.reader} reads tools/call arguments that are not an object: {reading.arguments!r}")
                continue
            for problem in argument_problems(reading.tool, reading.arguments):
                out.append(f"{reading.reader} reads a tools/call of {reading.tool!r} with {reading.arguments!r}: {problem}")
        if reading.method == "tools/call" and reading.kind == "response":
            out.append(f"{reading.reader} reads a response that carries tools/call")
    return out


# ---- the rule, as the gate should apply it to every client frame ---------------------------


@dataclass
class Verdict:
    refuse: bool = False  # answer -32600 (with the id where there is one), forward nothing
    drop: bool = False  # a request method without an id: log, forward nothing, answer nothing
    reply_id: Any = None
    reasons: list[str] = field(default_factory=list)


def _collisions(pairs: Pairs, where: str, folding: bool) -> list[str]:
    out = []
    exact: set[str] = set()
    folded: dict[str, str] = {}
    for key, _ in pairs:
        if key in exact:
            out.append(f"{where}: duplicate member {key!r}")
        elif folding and fold(key, True) in folded:
            out.append(f"{where}: {key!r} folds to the same name as {folded[fold(key, True)]!r}")
        exact.add(key)
        folded.setdefault(fold(key, True), key)
    return out


def _walk_collisions(value: Any, where: str, folding: bool) -> list[str]:
    """Duplicates at any depth; case/NUL collisions where `folding` (top level and all of params)."""
    out = []
    if isinstance(value, Pairs):
        out += _collisions(value, where or "/", folding)
        for key, child in value:
            out += _walk_collisions(child, f"{where}/{key}", folding)
    elif isinstance(value, list):  # an array (Pairs is handled above)
        for i, child in enumerate(value):
            out += _walk_collisions(child, f"{where}/{i}", folding)
    return out


def _near_misses(pairs: Pairs, names: tuple[str, ...], where: str) -> list[str]:
    out = []
    for key, _ in pairs:
        for name in names:
            if key != name and fold(key, True) == fold(name, True):
                out.append(f"{where}: {key!r} is a look-alike of {name!r}")
    return out


def wire_verdict(raw: str | bytes) -> Verdict:
    """The decision THE RULE takes for one client frame (see the module docstring)."""
    try:
        tree = parse_pairs(raw)
    except (ValueError, RecursionError):
        return Verdict(refuse=True, reasons=["not JSON"])  # -32700 in fact; not the subject here
    if isinstance(tree, list) and not isinstance(tree, Pairs):
        return Verdict(refuse=True, reasons=["a batch"])
    if not isinstance(tree, Pairs):
        return Verdict(refuse=True, reasons=["not an object"])
    verdict = Verdict()
    plain = _last(tree)
    raw_id = plain.get("id")
    if isinstance(raw_id, (int, str, float)) and not isinstance(raw_id, bool):
        verdict.reply_id = raw_id
    reasons = verdict.reasons
    keys = [k for k, _ in tree]
    if "method" in keys and ("result" in keys or "error" in keys):
        reasons.append("method mixed with result/error")
    reasons += _collisions(tree, "top level", True)
    for key, child in tree:
        reasons += _walk_collisions(child, f"/{key}", key == "params")
    reasons += _near_misses(tree, ENVELOPE, "top level")
    method = plain.get("method")
    if method == "tools/call" and isinstance(plain.get("params"), Pairs):
        reasons += _near_misses(plain["params"], CALL_PARAMS, "tools/call params")
    if "id" in plain and (raw_id is None or isinstance(raw_id, (bool, float)) or not isinstance(raw_id, (int, str))):
        reasons.append(f"id {raw_id!r} is not a string or an integer")
    if reasons:
        verdict.refuse = True
        if not (isinstance(raw_id, (int, str)) and not isinstance(raw_id, bool)) and not isinstance(raw_id, float):
            verdict.reply_id = None
        return verdict
    if isinstance(method, str) and method in REQUEST_METHODS and "id" not in plain:
        verdict.drop = True
        reasons.append(f"{method} sent as a notification")
    return verdict
