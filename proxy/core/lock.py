"""Pinning tool definitions: a lock document, and how a new listing differs from it.

An operator records the tools an upstream server lists (``build_lock``), keeps
that lock file under review, and later compares a fresh listing to it
(``classify``). A change the ``RefusePolicy`` refuses makes the gate answer
calls to that tool with a ``changed_definition`` refusal (``refused``) instead
of forwarding them: a server whose tool suddenly accepts more, or whose
description (the text the model reads and obeys) changed, is not trusted until
somebody re-pins it.

The lock document (the CLI writes it with ``dumps_lock``: indent 2, sorted keys,
so a re-pin shows up as a readable diff)::

    {"version": 1, "dialect": "contract",
     "tools": [{"name": ..., "description": ..., "inputSchema": ..., "outputSchema": ...,
                "annotations": ..., "digest": "sha256:..."}, ...]}   # sorted by name

A field the server did not send is ``null``. ``digest`` is the SHA-256 of the
canonical JSON (sorted keys, no spaces, UTF-8) of the five definition fields, so
equal definitions have equal digests whatever order the server sent keys in.

Change classes, one tool at a time:

- ``unchanged``: same digest (or differing only in how numbers are spelled, 1 vs 1.0).
- ``narrowed`` / ``widened``: the inputSchema accepts provably no more / possibly more
  arguments than the pinned one (``validator.containment.compare``). A new schema the
  gate cannot enforce counts as ``narrowed``: the gate refuses every call to it anyway.
- ``description_changed``, ``annotations_changed``: the text or the hints changed
  (annotations such as ``destructiveHint`` steer whether clients ask before calling).
- ``output_changed``: the outputSchema differs at all. For outputs the direction flips
  (a narrower output is harmless to a client), and the gate does not validate results,
  so any difference is reported as one class rather than judged.
- ``added`` / ``removed``: the tool is new, or no longer listed.

A tool can change in several ways at once, so a ``Change`` carries every class
that applies (``classes``) and the most severe one (``kind``, by ``SEVERITY``);
``pointer`` is a JSON Pointer into the tool definition (``/inputSchema/...``,
``/description``, ``/annotations``, ``/outputSchema``) naming where the most
severe change is.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from validator.containment import compare
from validator.json_values import equality_key

LOCK_VERSION = 1
DEFINITION_FIELDS = ("name", "description", "inputSchema", "outputSchema", "annotations")
CHANGED_DEFINITION = "changed_definition"

UNCHANGED = "unchanged"
NARROWED = "narrowed"
WIDENED = "widened"
DESCRIPTION_CHANGED = "description_changed"
ANNOTATIONS_CHANGED = "annotations_changed"
OUTPUT_CHANGED = "output_changed"
ADDED = "added"
REMOVED = "removed"

# Most severe first: ``Change.kind`` is the first of these in ``Change.classes``.
SEVERITY = (WIDENED, ADDED, DESCRIPTION_CHANGED, ANNOTATIONS_CHANGED, OUTPUT_CHANGED, NARROWED, REMOVED, UNCHANGED)


class LockError(Exception):
    """A lock file or a listing that cannot be used; the message says what to do."""


def canonical(value: Any) -> str:
    """The canonical JSON text digests are taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def definition(tool: dict) -> dict:
    """The fields of a tool that are pinned (absent ones as None)."""
    return {key: tool.get(key) for key in DEFINITION_FIELDS}


def digest(tool: dict) -> str:
    return "sha256:" + hashlib.sha256(canonical(definition(tool)).encode("utf-8")).hexdigest()


def _by_name(tools: Iterable[Any], what: str) -> dict[str, dict]:
    named: dict[str, dict] = {}
    for tool in tools:
        # The catalog ignores entries without a string name; so does the lock.
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        if tool["name"] in named:
            raise LockError(f'{what} lists the tool "{tool["name"]}" twice, so it is ambiguous which one to pin; '
                            "fix the server or the file so that each name appears once")
        named[tool["name"]] = tool
    return named


def build_lock(tools: list[dict], dialect: str = "contract") -> dict:
    """The lock document for a complete listing; raises LockError for a duplicate name or a non-JSON value."""
    entries = []
    for name, tool in sorted(_by_name(tools, "the listing").items()):
        entry = definition(tool)
        try:
            entry["digest"] = digest(tool)
        except ValueError as exc:  # NaN or Infinity somewhere: not JSON, so not pinnable
            raise LockError(f'the tool "{name}" holds a value that is not JSON ({exc}); it cannot be pinned') from None
        entries.append(entry)
    return {"version": LOCK_VERSION, "dialect": dialect, "tools": entries}


def dumps_lock(lock: dict) -> str:
    """The lock file text: indent 2, sorted keys, one trailing newline."""
    return json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_lock(path: str) -> dict:
    """Read and check a lock file; raises LockError with one sentence saying what failed and what to try."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise LockError(f"cannot read the lock file {path} ({exc.strerror or exc}); check the path, "
                        "or create the file with `mcp-schema-gate lock`") from None
    except UnicodeDecodeError:
        raise LockError(f"the lock file {path} is not UTF-8 text; re-create it with `mcp-schema-gate lock`") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LockError(f"the lock file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                        "fix it or re-create it with `mcp-schema-gate lock`") from None
    check_lock(document, path)
    return document


def check_lock(document: Any, source: str = "the lock") -> None:
    """Raise LockError unless ``document`` is a well-formed version-1 lock whose digests match."""
    from validator import DIALECTS

    redo = "re-create it with `mcp-schema-gate lock`"
    if not isinstance(document, dict):
        raise LockError(f"{source} must hold a JSON object with version, dialect and tools; {redo}")
    if document.get("version") != LOCK_VERSION:
        raise LockError(f"{source} has version {json.dumps(document.get('version'))}, but this gate reads version "
                        f"{LOCK_VERSION}; {redo}")
    if document.get("dialect") not in DIALECTS:
        raise LockError(f"{source} names the dialect {json.dumps(document.get('dialect'))}, which is not one of "
                        f"{', '.join(DIALECTS)}; fix the dialect field or {redo}")
    tools = document.get("tools")
    if not isinstance(tools, list):
        raise LockError(f'{source} must have a "tools" list; {redo}')
    seen: set = set()
    for i, entry in enumerate(tools):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise LockError(f'{source}: tools[{i}] must be an object with a string "name"; {redo}')
        name = entry["name"]
        if name in seen:
            raise LockError(f'{source} pins the tool "{name}" twice, so it is ambiguous which one holds; {redo}')
        seen.add(name)
        missing = [key for key in (*DEFINITION_FIELDS, "digest") if key not in entry]
        if missing:
            raise LockError(f'{source}: the tool "{name}" lacks {", ".join(missing)}; {redo}')
        try:
            expected = digest(entry)
        except ValueError:
            raise LockError(f'{source}: the tool "{name}" holds a value that is not JSON; {redo}') from None
        if entry["digest"] != expected:
            raise LockError(f'{source}: the digest of the tool "{name}" does not match its definition, so the file '
                            f"was edited by hand or damaged; review the change and {redo}")


@dataclass(frozen=True)
class Change:
    """How one tool differs from its pinned definition (see the module docstring)."""

    name: str
    kind: str  # the most severe class in ``classes``
    classes: frozenset = field(default_factory=frozenset)
    pointer: str = ""  # into the tool definition, e.g. "/inputSchema/properties/path/pattern"
    message: str = ""  # one sentence about the most severe change
    details: tuple = ()  # (class, pointer, message) for every class, most severe first

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "classes": sorted(self.classes), "pointer": self.pointer,
                "message": self.message,
                "details": [{"class": c, "pointer": p, "message": m} for c, p, m in self.details]}


def _change(name: str, found: list[tuple[str, str, str]]) -> Change:
    found.sort(key=lambda item: SEVERITY.index(item[0]))
    kind, pointer, message = found[0]
    return Change(name, kind, frozenset(c for c, _, _ in found), pointer, message, tuple(found))


def _equal(a: Any, b: Any) -> bool:
    try:
        return equality_key(a) == equality_key(b)
    except (TypeError, RecursionError):
        return a == b


def classify(lock: dict, tools: list[dict], dialect: str | None = None) -> list[Change]:
    """One Change per tool in the lock or the listing, sorted by name; ``dialect`` defaults to the lock's."""
    dialect = dialect or lock.get("dialect", "contract")
    pinned = _by_name(lock.get("tools", []), "the lock")
    listed = _by_name(tools, "the listing")
    changes = []
    for name in sorted(set(pinned) | set(listed)):
        old, new = pinned.get(name), listed.get(name)
        if new is None:
            changes.append(_change(name, [(REMOVED, "", f'the tool "{name}" is pinned but no longer listed')]))
            continue
        if old is None:
            changes.append(_change(name, [(ADDED, "", f'the tool "{name}" is listed but was not pinned')]))
            continue
        changes.append(_compare_tool(name, old, new, dialect))
    return changes


def _compare_tool(name: str, old: dict, new: dict, dialect: str) -> Change:
    try:
        if digest(old) == digest(new):
            return _change(name, [(UNCHANGED, "", "the definition matches the pin")])
    except ValueError:
        pass  # a non-JSON value in the listing: compare field by field below
    found: list[tuple[str, str, str]] = []
    verdict = compare(old.get("inputSchema"), new.get("inputSchema"), dialect)
    if verdict.kind == "widened":
        found.append((WIDENED, "/inputSchema" + verdict.pointer,
                      f"the inputSchema accepts more than the pinned one: {verdict.reason}"))
    elif verdict.kind == "unsupported":
        found.append((NARROWED, "/inputSchema" + verdict.pointer, "the inputSchema changed to one the gate cannot "
                      f"enforce, so every call is refused: {verdict.reason}"))
    elif verdict.kind == "narrowed":
        found.append((NARROWED, "/inputSchema", "the inputSchema changed but accepts nothing the pinned one refused"))
    if not _equal(old.get("description"), new.get("description")):
        found.append((DESCRIPTION_CHANGED, "/description", "the description changed since it was pinned"))
    if not _equal(old.get("annotations"), new.get("annotations")):
        found.append((ANNOTATIONS_CHANGED, "/annotations", "the annotations (behaviour hints) changed since they were pinned"))
    if not _equal(old.get("outputSchema"), new.get("outputSchema")):
        found.append((OUTPUT_CHANGED, "/outputSchema", "the outputSchema changed since it was pinned"))
    if not found:
        found.append((UNCHANGED, "", "the definition matches the pin up to how numbers are spelled"))
    return _change(name, found)


@dataclass(frozen=True)
class RefusePolicy:
    """Which change classes make the gate refuse calls to a tool.

    Refused by default: ``widened`` (arguments nobody approved), ``added`` (a tool
    nobody reviewed), ``description_changed`` (the text the model follows; a changed
    description is the usual vehicle for tool poisoning) and ``annotations_changed``
    (hints like ``readOnlyHint``/``destructiveHint`` decide whether a client asks the
    user before calling, so a flipped hint can skip a confirmation). Allowed:
    ``narrowed``, ``unchanged``, ``removed`` (nothing can be called that was not
    approved) and ``output_changed`` (results are not validated by the gate and do
    not widen what the tool can be asked to do; it is still reported).
    """

    refuse: frozenset = frozenset({WIDENED, ADDED, DESCRIPTION_CHANGED, ANNOTATIONS_CHANGED})

    def __post_init__(self) -> None:
        unknown = set(self.refuse) - set(SEVERITY)
        if unknown:
            raise ValueError(f"unknown change classes {sorted(unknown)}; expected some of {', '.join(SEVERITY)}")


def refused(change: Change, policy: RefusePolicy = RefusePolicy()) -> str | None:
    """The refusal message for calls to a changed tool, or None when the policy allows the change."""
    hit = [detail for detail in change.details if detail[0] in policy.refuse]
    if not hit:
        return None
    kind, pointer, message = hit[0]  # details are most severe first
    where = f" at {pointer}" if pointer else ""
    return (f'{CHANGED_DEFINITION}: the tool "{change.name}" was refused because its definition changed since an '
            f"operator pinned it ({kind}{where}: {message}); do not retry this call, use another tool or ask the user "
            "to have the operator review and re-pin the tool")


def refusal(change: Change, policy: RefusePolicy = RefusePolicy()) -> dict[str, str] | None:
    """``refused`` in the shape of the gate's other rejections (kind, instancePath, schemaPath, keyword, message)."""
    message = refused(change, policy)
    if message is None:
        return None
    kind, pointer, _ = next(d for d in change.details if d[0] in policy.refuse)
    return {"kind": CHANGED_DEFINITION, "instancePath": "", "schemaPath": pointer, "keyword": kind, "message": message}
