"""Catalog: the proxy's own view of the upstream's tools, one preflight per schema.

Each revision is an immutable mapping swapped in with a single assignment, so
a reader (the gate) sees either the old revision or the new one, never a mix;
a call that already looked its tool up keeps the entry it found.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import anyio

logger = logging.getLogger("mcp-schema-gate")


@dataclass(frozen=True)
class Problem:
    """Why a schema or a call was refused, in the shape rejections and reports share."""

    kind: str
    instance_path: str
    schema_path: str
    keyword: str
    message: str

    @classmethod
    def from_exception(cls, exc: BaseException) -> Problem:
        # Read the documented attributes rather than trusting to_dict(): an
        # unexpected exception (a validator bug) must still fail closed.
        kind = getattr(exc, "kind", None)
        if kind not in ("unsupported_capability", "validation", "execution_failure"):
            return cls("execution_failure", "", "", "", f"the validator failed unexpectedly: {exc!r}")
        return cls(
            kind,
            str(getattr(exc, "instance_path", "") or ""),
            str(getattr(exc, "schema_path", "") or ""),
            str(getattr(exc, "keyword", "") or ""),
            str(getattr(exc, "message", None) or exc),
        )

    def to_dict(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "instancePath": self.instance_path,
            "schemaPath": self.schema_path,
            "keyword": self.keyword,
            "message": self.message,
        }

    def where(self) -> str:
        return f"{self.keyword or '?'} at {self.schema_path or '/'}"


@dataclass(frozen=True)
class ToolEntry:
    name: str
    input_schema: Any
    compiled: Any | None  # validator.CompiledSchema when the preflight passed
    problem: Problem | None  # the preflight error otherwise


def dialect_of(compile_schema: Callable[..., Any]) -> str:
    """The validator dialect a compile function judges with (the CLI binds it as dialect=)."""
    return getattr(compile_schema, "keywords", {}).get("dialect", "contract")


def default_compiler() -> Callable[[Any], Any]:
    import validator  # imported lazily so `--help` works even without it

    return validator.compile


class Catalog:
    """Tools by name, each with its CompiledSchema or its preflight error."""

    def __init__(self, compile_schema: Callable[[Any], Any] | None = None) -> None:
        self._compile = compile_schema or default_compiler()
        self.dialect = dialect_of(self._compile)
        self._tools: Mapping[str, ToolEntry] = MappingProxyType({})
        # Same schema text, same compiled object: relisting costs no recompiles.
        self._cache: dict[str, tuple[Any | None, Problem | None]] = {}
        self.revision = 0
        self.built = anyio.Event()  # set once the first full listing has been swapped in
        self.failure: str | None = None  # why the last full listing failed, if it did

    @property
    def tools(self) -> Mapping[str, ToolEntry]:
        return self._tools

    def get(self, name: str) -> ToolEntry | None:
        return self._tools.get(name)

    def preflight(self, tool: Any) -> ToolEntry | None:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            return None
        schema = tool.get("inputSchema")
        try:
            key = json.dumps(schema, sort_keys=True, allow_nan=True)
        except (TypeError, ValueError):
            key = None
        cached = self._cache.get(key) if key is not None else None
        if cached is None:
            try:
                cached = (self._compile(schema), None)
            except Exception as exc:  # InputSchemaError, or anything else: fail closed
                cached = (None, Problem.from_exception(exc))
            if key is not None:
                self._cache[key] = cached
        return ToolEntry(tool["name"], schema, cached[0], cached[1])

    def replace(self, tools: Iterable[Any]) -> Mapping[str, ToolEntry]:
        """Swap in a complete new revision built from a full listing."""
        entries = {e.name: e for e in map(self.preflight, tools) if e is not None}
        self._tools = MappingProxyType(entries)
        self.revision += 1
        self.failure = None
        self.built.set()
        return self._tools

    def merge(self, tools: Iterable[Any]) -> None:
        """Adopt the tools of a listing page the client is about to see.

        A page is partial, so tools it does not mention are kept. A tool whose
        schema differs from ours is replaced, so a tool the client can see is
        validated against the schema it saw.
        """
        changed = {}
        for tool in tools:
            entry = self.preflight(tool)
            if entry is None:
                continue
            current = self._tools.get(entry.name)
            if current is None or current.input_schema != entry.input_schema:
                changed[entry.name] = entry
        if changed:
            self._tools = MappingProxyType({**self._tools, **changed})
            self.revision += 1

    def fail(self, reason: str) -> None:
        self.failure = reason
        self.built.set()

    def summary(self) -> list[str]:
        """Startup lines for stderr: counts, then one line per unsupported tool."""
        bad = [e for e in self._tools.values() if e.problem is not None]
        lines = [f"mcp-schema-gate: {len(self._tools)} tools listed, {len(bad)} unsupported (dialect {self.dialect})"]
        for entry in sorted(bad, key=lambda e: e.name):
            assert entry.problem is not None
            lines.append(f"mcp-schema-gate:   {entry.name}: {entry.problem.kind}: {entry.problem.where()}")
        return lines
