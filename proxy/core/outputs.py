"""Results: check a forwarded tools/call's structuredContent against the tool's outputSchema.

The MCP spec says a server that declares an outputSchema MUST return
structuredContent conforming to it. `--check-output` says what the gate does
when one does not:

  off     nothing (the hooks do not even remember which tool a call was for)
  warn    forward the result unchanged; record the mismatch (stderr once per
          tool, the audit log with kind `output_mismatch`, the metrics)
  strict  record it as `warn` does, and replace the result with an
          `isError: true` result whose text says what did not conform (JSON
          Pointer, keyword), so the model is told. The replacement never
          carries structuredContent (it would violate the schema itself); the
          details travel in `_meta` under OUTPUT_META_KEY.

Only results of calls the gate forwarded are looked at. Exempt: results with
`isError: true` (the spec lets an error result omit structuredContent), and
2026-07-28 results that are not final (`resultType` other than `complete`).

An outputSchema outside the dialect cannot be checked. The startup summary
names it; its results are forwarded unchanged in every mode, with one warning
per tool on stderr. Refusing them under `strict` would throw away the outcome
of a call the server has already run (its side effects happened), for a
reason that is the gate's limitation, not the server's fault.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
import validator
from mcp.shared.message import SessionMessage
from validator import CompiledSchema, InputSchemaError

from proxy.core.jsonrpc import envelope_of

if TYPE_CHECKING:
    from proxy.core.audit import AuditLog
    from proxy.core.catalog import ToolEntry
    from proxy.core.relay import Relay
    from proxy.metrics import Metrics, NoMetrics

logger = logging.getLogger("mcp-schema-gate")

MODES = ("off", "warn", "strict")
OUTPUT_META_KEY = "io.github.mcp-schema-gate/output-mismatch"
OUTPUT_MISMATCH = "output_mismatch"  # the audit log's kind


def compile_output(schema: Any, dialect: str) -> tuple[CompiledSchema | None, InputSchemaError | None]:
    """(compiled, None), (None, why it cannot be checked), or (None, None) without an outputSchema.

    The Catalog keeps the outcome by schema text (catalog.Preflights), as it does for input schemas.
    """
    if schema is None:
        return None, None
    try:
        return validator.compile(schema, dialect=dialect), None
    except Exception as exc:  # never let an outputSchema disturb the input gating
        error = exc if isinstance(exc, InputSchemaError) else InputSchemaError(
            "execution_failure", f"the validator failed unexpectedly: {exc!r}")
        return None, error


def support(entry: ToolEntry) -> str:
    """none / supported / unsupported: can the gate check this tool's results?"""
    if entry.output_schema is None:
        return "none"
    return "supported" if entry.output_compiled is not None else "unsupported"


def summary(tools: Mapping[str, ToolEntry]) -> list[str]:
    """Startup lines about outputSchemas the gate cannot check (none when every one is checkable)."""
    bad = sorted((e for e in tools.values() if e.output_schema is not None and e.output_error is not None),
                 key=lambda e: e.name)
    if not bad:
        return []
    lines = [f"mcp-schema-gate: {len(bad)} outputSchema{'' if len(bad) == 1 else 's'} cannot be checked; "
             "their results are forwarded unchanged"]
    for entry in bad:
        error = entry.output_error
        assert error is not None
        lines.append(f"mcp-schema-gate:   {entry.name} (outputSchema): {error.kind}: "
                     f"{error.keyword or '?'} at {error.schema_path or '/'}")
    return lines


@dataclass(eq=False, slots=True)
class Result:
    """What the hooks note on a forwarded tools/call's InFlight entry, and what happens at its reply."""

    entry: ToolEntry  # the catalog entry the arguments were validated against
    label: str  # its metrics label
    seen: float  # perf_counter when the request was seen (0.0 with metrics off)

    async def deliver(self, relay: Relay, message: SessionMessage, outputs: OutputChecker | None,
                      metrics: NoMetrics) -> bool:
        """Check the reply (a result), forward it or its replacement, measure. False: the relay forwards it."""
        inner = envelope_of(message)
        forward = message
        if outputs is not None and inner.kind == "response":
            replaced = outputs.check(self.entry, inner.result, inner.id, self.label)
            if replaced is not None:
                reply = types.JSONRPCResponse(jsonrpc="2.0", id=inner.id, result=replaced)
                forward = SessionMessage(reply, metadata=message.metadata)
        if forward is message and not metrics.enabled:
            return False
        await relay.forward_to_client(forward)
        if metrics.enabled and self.seen:
            metrics.call_latency(time.perf_counter() - self.seen)
        return True


class OutputChecker:
    """The `warn` / `strict` policy, one per process (shared by every session)."""

    def __init__(self, mode: str, audit: AuditLog | None = None, metrics: Metrics | None = None) -> None:
        if mode not in ("warn", "strict"):
            raise ValueError(f"OutputChecker mode must be warn or strict, not {mode!r}")
        self.mode = mode
        self.audit = audit
        self.metrics = metrics
        self._warned: set[str] = set()  # tools already reported on stderr

    def check(self, entry: ToolEntry, result: Any, request_id: Any, label: str = "(unknown)") -> dict | None:
        """None: forward the result unchanged. Otherwise the result to send instead (strict only)."""
        if entry.output_schema is None or not isinstance(result, dict) or result.get("isError") is True:
            return None
        if result.get("resultType", "complete") != "complete":
            return None  # 2026-07-28: input_required and the like are not the tool's output
        compiled = entry.output_compiled
        if compiled is None:
            self._warn_once(entry.name, f"the outputSchema of tool {entry.name!r} cannot be checked "
                            f"({entry.output_error.message if entry.output_error else 'unknown reason'}); "
                            "its results are forwarded unchanged")
            return None
        if "structuredContent" not in result:
            problem = InputSchemaError(
                "validation", "the result has no structuredContent, but the tool declares an outputSchema "
                "(MCP: a server MUST then return conforming structuredContent)", keyword="structuredContent")
        else:
            problem = self._validate(compiled, result["structuredContent"])
            if problem is None:
                return None
        self._record(entry.name, problem, request_id, label)
        if self.mode == "warn":
            return None
        return replacement(entry.name, problem, result)

    def _validate(self, compiled: CompiledSchema, value: Any) -> InputSchemaError | None:
        metrics = self.metrics
        start = time.perf_counter() if metrics is not None and metrics.enabled else 0.0
        try:
            compiled.validate(value)
            problem = None
        except InputSchemaError as exc:
            problem = exc
        except Exception as exc:  # a validator bug: report it as a mismatch rather than crash the pump
            problem = InputSchemaError("execution_failure", f"the validator failed unexpectedly: {exc!r}")
        if metrics is not None and metrics.enabled:
            metrics.validation_time("output", time.perf_counter() - start)
        return problem

    def _record(self, tool: str, problem: InputSchemaError, request_id: Any, label: str) -> None:
        where = f"{problem.keyword or '?'} at {problem.instance_path or '/'}"
        self._warn_once(tool, f"tool {tool!r} returned a result that does not conform to its outputSchema "
                        f"({where}); {'replaced with an error result' if self.mode == 'strict' else 'forwarded'} "
                        "(reported once per tool; see the audit log and metrics for every one)")
        if self.audit is not None:
            from proxy.core.gate import Rejection

            self.audit.record(Rejection(tool, OUTPUT_MISMATCH, problem.message, problem), request_id)
        if self.metrics is not None:
            self.metrics.output_mismatch(label)

    def _warn_once(self, tool: str, text: str) -> None:
        if tool not in self._warned:
            self._warned.add(tool)
            logger.warning("mcp-schema-gate: %s", text)


def replacement(tool: str, problem: InputSchemaError, original: dict[str, Any]) -> dict[str, Any]:
    """The isError result sent instead of a non-conforming one: no structuredContent, details in _meta."""
    detail = problem.to_dict()
    text = (f"Tool {tool!r} ran, but its result does not conform to the tool's outputSchema, so mcp-schema-gate "
            f"withheld it: {problem.message} (keyword {problem.keyword or '?'!r} at "
            f"{problem.instance_path or '/'} in the result, schema {problem.schema_path or '/'}).")
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True,
                              "_meta": {OUTPUT_META_KEY: detail}}
    if "resultType" in original:
        result["resultType"] = original["resultType"]
    return result
