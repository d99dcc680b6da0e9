"""Catalog: the proxy's own view of the upstream's tools, one preflight per schema.

Each revision is an immutable mapping swapped in with a single assignment, so
a reader (the gate) sees either the old revision or the new one, never a mix;
a call that already looked its tool up keeps the entry it found.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

import anyio
from mcp.shared.inbound import find_invalid_x_mcp_header, x_mcp_header_map

import validator
from validator import CompiledSchema, InputSchemaError

from proxy.core.operator import OperatorControl
from proxy.core.policy import Overlay
from proxy.core.outputs import compile_output
from proxy.core.shadowing import Check, compile_shadow_check

logger = logging.getLogger("mcp-schema-gate")


def as_schema_error(exc: BaseException) -> InputSchemaError:
    """The validator's own error, or an execution_failure for anything else (a validator bug fails closed)."""
    if isinstance(exc, InputSchemaError):
        return exc
    return InputSchemaError("execution_failure", f"the validator failed unexpectedly: {exc!r}")


def _message(entry: ToolEntry) -> str | None:
    return entry.error.message if entry.error is not None else None


def where(error: InputSchemaError) -> str:
    return f"{error.keyword or '?'} at {error.schema_path or '/'}"


class Preflights:
    """Preflight outcomes by (what, dialect, schema text), shared by every Catalog in the process.

    Every client session of an HTTP gate has a Catalog of its own, and each
    built it by compiling every schema its upstream lists: for a server with
    a hundred tools, tens of milliseconds of CPU per session for the same
    schemas every time. A compiled schema is immutable and validation is
    synchronous, so one compiled object can serve every session. The key is
    the schema's JSON text in its own member order (the order decides which
    of several violations is reported), so two schemas share an outcome only
    when they are the same text. Least recently used entries go beyond
    `limit`, so a server whose schemas keep changing cannot grow it for ever.
    """

    def __init__(self, limit: int = 2048) -> None:
        self.limit = limit
        self._outcomes: OrderedDict[tuple[str, str, str], Any] = OrderedDict()

    def outcome(self, what: str, dialect: str, schema: Any, build: Callable[[], Any]) -> Any:
        """`build()`'s result for this schema, from the cache when the same text was built before."""
        try:
            key = (what, dialect, json.dumps(schema, allow_nan=True))
        except (TypeError, ValueError):  # not JSON text (nothing read off the wire is): build it every time
            return build()
        outcomes = self._outcomes
        found = outcomes.get(key)
        if found is not None:
            outcomes.move_to_end(key)
            return found
        found = outcomes[key] = build()
        if len(outcomes) > self.limit:
            outcomes.popitem(last=False)
        return found

    def __len__(self) -> int:
        return len(self._outcomes)


PREFLIGHTS = Preflights()


@dataclass(frozen=True)
class ToolEntry:
    name: str
    input_schema: Any
    compiled: CompiledSchema | None  # when the preflight passed
    error: InputSchemaError | None  # the preflight error otherwise
    # Kept so that the gate's own answers for the tool never contradict it
    # (a refusal must not carry structuredContent the schema would reject).
    output_schema: Any = None
    shadow: Check | None = None  # argument members a lenient server would misread (shadowing.py)
    # Operator control (operator.py): why every call is refused (the lock or the
    # policy objects to the tool), and the policy's schemas every call must also satisfy.
    denial: dict[str, str] | None = None
    overlay: Overlay | None = None
    # The outputSchema compiled in the same dialect (proxy/core/outputs.py checks results with it), or
    # why it could not be; both None when the tool declares no outputSchema.
    output_compiled: CompiledSchema | None = None
    output_error: InputSchemaError | None = None

    @cached_property
    def declares_param_headers(self) -> bool:
        """Whether the inputSchema declares `Mcp-Param-*` headers (valid `x-mcp-header` annotations) to compare.

        The SDK's check (`validate_mcp_param_headers`) walks the whole schema
        twice on every call and can only pass for a schema without them; this
        depends on the schema alone, so it is worked out once per entry.
        """
        return find_invalid_x_mcp_header(self.input_schema) is None and bool(x_mcp_header_map(self.input_schema))

    def same_definition(self, other: ToolEntry) -> bool:
        return self.input_schema == other.input_schema and self.output_schema == other.output_schema


class Catalog:
    """Tools by name, each with its CompiledSchema or its preflight error."""

    def __init__(self, dialect: str = validator.CONTRACT, operator: OperatorControl | None = None,
                 preflights: Preflights = PREFLIGHTS) -> None:
        if dialect not in validator.DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(validator.DIALECTS)}")
        self.dialect = dialect
        self.operator = operator
        self._tools: Mapping[str, ToolEntry] = MappingProxyType({})
        # Same schema text, same compiled object: neither relisting nor a new session recompiles.
        self._preflights = preflights
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
        cached = self._preflights.outcome("input", self.dialect, schema, lambda: self._preflight_input(schema))
        output = tool.get("outputSchema")
        compiled_output, output_error = (None, None) if output is None else self._preflights.outcome(
            "output", self.dialect, output, lambda: compile_output(output, self.dialect))
        return ToolEntry(tool["name"], schema, cached[0], cached[1], output, cached[2],
                         output_compiled=compiled_output, output_error=output_error)

    def _preflight_input(self, schema: Any) -> tuple[CompiledSchema | None, InputSchemaError | None, Check | None]:
        try:
            return validator.compile(schema, dialect=self.dialect), None, compile_shadow_check(schema)
        except Exception as exc:  # InputSchemaError, or anything else: fail closed
            return None, as_schema_error(exc), None

    def _entries(self, tools: Iterable[Any]) -> dict[str, ToolEntry]:
        """Entries by name. A name listed twice with different definitions is unsupported, both times.

        Which of the two a server would run is anybody's guess, and a client
        may have been shown either; validating against one of them could
        pass arguments the other forbids.
        """
        entries: dict[str, ToolEntry] = {}
        for entry in map(self.preflight, tools):
            if entry is None:
                continue
            first = entries.get(entry.name)
            if first is not None and not first.same_definition(entry):
                error = InputSchemaError(
                    "unsupported_capability",
                    f"the server lists tool {entry.name!r} more than once with different definitions, so "
                    "mcp-schema-gate cannot tell which schema applies; every call to it is refused",
                    keyword="name")
                entry = ToolEntry(entry.name, first.input_schema, None, error, first.output_schema)
            elif first is not None:
                continue
            entries[entry.name] = entry
        return entries

    def _controlled(self, tools: list[Any]) -> dict[str, ToolEntry]:
        entries = self._entries(tools)
        return self.operator.apply(entries, tools) if self.operator is not None else entries

    def replace(self, tools: Iterable[Any]) -> Mapping[str, ToolEntry]:
        """Swap in a complete new revision built from a full listing."""
        self._tools = MappingProxyType(self._controlled(list(tools)))
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
        for entry in self._controlled(list(tools)).values():
            current = self._tools.get(entry.name)
            if current is None or not current.same_definition(entry) or _message(current) != _message(entry) or (
                    current.denial != entry.denial):
                changed[entry.name] = entry
        if changed:
            self._tools = MappingProxyType({**self._tools, **changed})
            self.revision += 1

    def fail(self, reason: str) -> None:
        self.failure = reason
        self.built.set()

    def summary(self) -> list[str]:
        """Startup lines for stderr: counts, then one line per unsupported tool."""
        bad = [e for e in self._tools.values() if e.error is not None]
        count = len(self._tools)
        lines = [f"mcp-schema-gate: {count} tool{'' if count == 1 else 's'} listed, {len(bad)} unsupported "
                 f"(dialect {self.dialect})"]
        for entry in sorted(bad, key=lambda e: e.name):
            assert entry.error is not None
            lines.append(f"mcp-schema-gate:   {entry.name}: {entry.error.kind}: {where(entry.error)}")
        denied = sorted((e for e in self._tools.values() if e.denial is not None and e.error is None),
                        key=lambda e: e.name)
        if denied:
            lines.append(f"mcp-schema-gate: {len(denied)} refused by operator control:")
            for entry in denied:
                assert entry.denial is not None
                lines.append(f"mcp-schema-gate:   {entry.name}: {entry.denial['kind']} ({entry.denial['keyword']})")
        if self.operator is not None and self.operator.lock is not None:
            lines.extend(self.operator.summary())
        if bad and self.dialect == validator.CONTRACT:
            helped = sum(1 for e in bad if _compiles(e.input_schema, validator.EXTENDED))
            if helped:
                lines.append(f"mcp-schema-gate: {helped} of the {len(bad)} unsupported would be supported with "
                             "--dialect extended")
        return lines


def _compiles(schema: Any, dialect: str) -> bool:
    try:
        validator.compile(schema, dialect=dialect)
    except Exception:
        return False
    return True
