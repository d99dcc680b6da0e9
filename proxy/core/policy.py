"""The operator's policy file: which tools may be called, which are hidden, and extra schema rules.

A policy is a TOML file (read with the standard library's ``tomllib``)::

    version = 1                      # optional; the only version there is

    # Names are matched with shell-style globs (fnmatch, case-sensitive: * ? [abc]).
    allow = ["read_*", "list_*"]     # optional: if present, only tools matching one of these are allowed
    deny = ["write_file", "*_delete"]  # optional: a tool matching one of these is denied; deny wins over allow
    hide = true                      # optional, default false: also drop denied tools from tools/list
                                     # (false: they stay listed and every call is refused with the reason)

    [[overlay]]                      # any number of these
    tools = ["read_file", "read_text_file"]   # globs (a single string is accepted too)
    # An operator schema every call of a matching tool must ALSO satisfy, in the gate's dialect.
    # Its root must be "type": "object", like any tool schema.
    schema = { type = "object", properties = { path = { type = "string", pattern = "^/workspace/" } } }

Unknown keys are errors, not ignored: a misspelt ``dney`` must not silently allow
everything. Several overlays may match one tool; the call must satisfy all of
them. An overlay the dialect cannot enforce (say ``const`` under ``contract``)
does not stop the policy from loading, since the other rules are still good; it
makes every tool it matches denied, with the validator's reason, because
dropping an operator's constraint would allow what the operator meant to refuse.

API::

    policy = Policy.load(path, dialect="contract")   # raises PolicyError naming the line
    policy.decide(name)    # Decision(allowed, rule, message)
    policy.hidden(name)    # True: drop it from tools/list
    policy.overlay(name)   # Overlay (compiled schemas, or the problem), or None when no overlay matches
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

import validator

POLICY_VERSION = 1
DENIED_BY_POLICY = "denied_by_policy"

_TOP_KEYS = frozenset({"version", "allow", "deny", "hide", "overlay"})
_OVERLAY_KEYS = frozenset({"tools", "schema"})
_CACHE_LIMIT = 4096


class PolicyError(Exception):
    """A policy file that cannot be used; the message names the file, the line and what to do."""


@dataclass(frozen=True)
class Decision:
    """Whether calls to a tool are allowed; ``rule`` names the rule that decided a denial."""

    allowed: bool
    rule: str | None = None
    message: str = ""


@dataclass(frozen=True)
class OverlayRule:
    index: int  # position among the [[overlay]] tables, from 0
    globs: tuple[str, ...]
    schema: Any
    compiled: Any | None  # validator.CompiledSchema, or None with ``problem`` set
    problem: validator.InputSchemaError | None

    @property
    def rule(self) -> str:
        return f"overlay[{self.index}] ({', '.join(self.globs)})"


@dataclass(frozen=True)
class Overlay:
    """The overlays that apply to one tool: every call must satisfy each of them."""

    rules: tuple[OverlayRule, ...]

    @property
    def problem(self) -> str | None:
        """Why the overlays cannot be enforced (the tool is then denied), or None."""
        for rule in self.rules:
            if rule.problem is not None:
                return f"{rule.rule}: {rule.problem.message}"
        return None

    def check(self, arguments: Any) -> validator.InputSchemaError | None:
        """The first overlay's objection to ``arguments``, or None when all of them accept."""
        for rule in self.rules:
            if rule.compiled is None:
                assert rule.problem is not None
                return rule.problem
            try:
                rule.compiled.validate(arguments)
            except validator.InputSchemaError as exc:
                return exc
        return None


@dataclass(frozen=True)
class Policy:
    allow: tuple[str, ...] | None = None  # None: no allow list, everything not denied is allowed
    deny: tuple[str, ...] = ()
    hide: bool = False
    overlays: tuple[OverlayRule, ...] = ()
    dialect: str = "contract"
    source: str = "<policy>"
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def load(cls, path: str, dialect: str = "contract") -> Policy:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise PolicyError(f"cannot read the policy file {path} ({exc.strerror or exc}); check the path") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise PolicyError(f"the policy file {path} is not UTF-8 text; save it as UTF-8") from None
        return cls.from_text(text, path, dialect)

    @classmethod
    def from_text(cls, text: str, source: str = "<policy>", dialect: str = "contract") -> Policy:
        if dialect not in validator.DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(validator.DIALECTS)}")
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            found = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
            reason = re.sub(r"\s*\(at [^)]*\)", "", str(exc))
            line = int(found.group(1)) if found else max(1, text.count("\n") + (not text.endswith("\n")))
            where = f"line {line}, column {found.group(2)}" if found else f"line {line} (the end of the file)"
            raise PolicyError(f"{source}, {where}: the policy is not valid TOML ({reason}); fix the syntax there") from None
        return _Reader(text, source, dialect).read(document)

    # --- questions the gate asks ----------------------------------------------------------

    def _remember(self, key: tuple, value: Any) -> Any:
        # Names also come from clients' calls, so the memo is bounded: past the limit, answers are recomputed.
        if len(self._cache) < _CACHE_LIMIT:
            self._cache[key] = value
        return value

    def decide(self, name: str) -> Decision:
        known = self._cache.get(("decide", name))
        return known if known is not None else self._remember(("decide", name), self._decide(name))

    def _decide(self, name: str) -> Decision:
        for glob in self.deny:
            if fnmatch.fnmatchcase(name, glob):
                return self._denied(name, f'deny "{glob}"')
        if self.allow is not None and not any(fnmatch.fnmatchcase(name, glob) for glob in self.allow):
            return self._denied(name, "allow (no glob matches this name)")
        overlay = self.overlay(name)
        if overlay is not None and overlay.problem is not None:
            return self._denied(name, overlay.problem, why="its operator schema cannot be enforced")
        return Decision(True)

    def _denied(self, name: str, rule: str, why: str = "the operator's policy denies it") -> Decision:
        return Decision(False, rule, f'{DENIED_BY_POLICY}: the tool "{name}" may not be called because {why} '
                        f"({self.source}: {rule}); do not retry, use another tool or ask the user")

    def hidden(self, name: str) -> bool:
        """Whether to drop the tool from tools/list: only when ``hide`` is on and the tool is denied."""
        return self.hide and not self.decide(name).allowed

    def overlay(self, name: str) -> Overlay | None:
        known = self._cache.get(("overlay", name), False)
        if known is False:
            rules = tuple(r for r in self.overlays if any(fnmatch.fnmatchcase(name, g) for g in r.globs))
            known = self._remember(("overlay", name), Overlay(rules) if rules else None)
        return known


class _Reader:
    """Turns the parsed TOML into a Policy, naming the line of anything wrong."""

    def __init__(self, text: str, source: str, dialect: str) -> None:
        self.lines = text.splitlines()
        self.source = source
        self.dialect = dialect

    def line_of(self, key: str, overlay: int | None = None) -> int | None:
        """The line of a top-level key, or of a key inside the n-th [[overlay]] table (else its header)."""
        assigns = re.compile(r'\s*("?)' + re.escape(key) + r'\1\s*[=.]')
        headers = [i for i, line in enumerate(self.lines) if re.match(r"\s*\[\[\s*overlay\s*\]\]", line)]
        if overlay is None:
            for i, line in enumerate(self.lines):
                if line.lstrip().startswith("["):
                    break  # top-level keys come before the first table
                if assigns.match(line):
                    return i + 1
            return headers[0] + 1 if key == "overlay" and headers else None
        if overlay >= len(headers):
            return None
        start = headers[overlay]
        for i in range(start + 1, len(self.lines)):
            line = self.lines[i]
            if line.lstrip().startswith("["):
                if re.match(r"\s*\[\s*overlay\s*\.\s*" + re.escape(key) + r"\b", line):
                    return i + 1  # [overlay.schema] and its kind belong to this overlay
                if re.match(r"\s*\[\s*overlay\s*\.", line):
                    continue
                break
            if assigns.match(line):
                return i + 1
        return start + 1

    def fail(self, text: str, key: str, overlay: int | None = None) -> PolicyError:
        line = self.line_of(key, overlay)
        path = key if overlay is None else f"overlay[{overlay}].{key}"
        where = f"line {line}" if line else path
        return PolicyError(f"{self.source}, {where}: {text}")

    def globs(self, value: Any, key: str, overlay: int | None = None) -> tuple[str, ...]:
        items = [value] if type(value) is str else value
        if type(items) is not list or not items or any(type(g) is not str or not g for g in items):
            raise self.fail(f'{key} must be a non-empty list of tool-name globs such as ["read_*"]; '
                            f"write it as {key} = [\"...\"]", key, overlay)
        return tuple(items)

    def read(self, document: dict) -> Policy:
        for key in document:
            if key not in _TOP_KEYS:
                raise self.fail(f'the key "{key}" is not part of a policy (expected {", ".join(sorted(_TOP_KEYS))}); '
                                "fix its spelling or remove it", key)
        if "version" in document and document["version"] != POLICY_VERSION:
            raise self.fail(f"version must be {POLICY_VERSION}; this gate reads no other policy version", "version")
        hide = document.get("hide", False)
        if type(hide) is not bool:
            raise self.fail("hide must be true or false", "hide")
        allow = self.globs(document["allow"], "allow") if "allow" in document else None
        deny = self.globs(document["deny"], "deny") if "deny" in document else ()
        overlays = document.get("overlay", [])
        if type(overlays) is not list:
            raise self.fail("overlays are written as [[overlay]] tables, each with tools and schema", "overlay")
        rules = tuple(self.overlay(i, table) for i, table in enumerate(overlays))
        return Policy(allow, deny, hide, rules, self.dialect, self.source)

    def overlay(self, index: int, table: Any) -> OverlayRule:
        if not isinstance(table, dict):
            raise self.fail("each overlay must be a [[overlay]] table with tools and schema", "overlay")
        for key in table:
            if key not in _OVERLAY_KEYS:
                raise self.fail(f'the key "{key}" is not part of an overlay (expected tools and schema); '
                                "fix its spelling or remove it", key, index)
        if "tools" not in table:
            raise self.fail('this overlay has no tools; add tools = ["<glob>"] naming the tools it constrains',
                            "tools", index)
        globs = self.globs(table["tools"], "tools", index)
        if not isinstance(table.get("schema"), dict):
            raise self.fail('this overlay needs a schema table, e.g. schema = { type = "object", ... }', "schema", index)
        schema = _plain(table["schema"])
        try:
            return OverlayRule(index, globs, schema, validator.compile(schema, self.dialect), None)
        except validator.InputSchemaError as exc:
            return OverlayRule(index, globs, schema, None, exc)


def _plain(value: Any) -> Any:
    """TOML values as JSON values: dates and times have no JSON meaning, so they become strings."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)):
        return value
    return value.isoformat()
