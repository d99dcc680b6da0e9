"""Gate: decide a tools/call from its params and a catalog revision. Fail closed.

Pure and synchronous: it sees params and catalog entries, never a transport,
so the same decisions hold whichever way the messages travel.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from proxy.catalog import Problem, ToolEntry

INVALID_PARAMS = -32602
RejectAs = Literal["tool-error", "protocol-error"]


@dataclass(frozen=True)
class Rejection:
    tool: str | None
    kind: str  # a validator kind, or "invalid_params" / "unknown_tool" (always JSON-RPC errors)
    message: str
    problem: Problem | None = None
    arguments: Any = None

    @property
    def protocol_only(self) -> bool:
        return self.problem is None


class Gate:
    def __init__(self, reject_as: RejectAs = "tool-error") -> None:
        self.reject_as = reject_as

    def check(self, params: Any, tools: Mapping[str, ToolEntry]) -> Rejection | None:
        """None means: forward the request exactly as it is (it is what was validated)."""
        if not isinstance(params, dict):
            return Rejection(None, "invalid_params", "Invalid params: tools/call params must be an object")
        name = params.get("name")
        if not isinstance(name, str):
            return Rejection(None, "invalid_params", "Invalid params: tools/call 'name' must be a string")
        arguments = params.get("arguments", None) if "arguments" in params else {}
        if not isinstance(arguments, dict):
            return Rejection(name, "invalid_params", "Invalid params: tools/call 'arguments' must be an object")
        entry = tools.get(name)
        if entry is None:
            return Rejection(name, "unknown_tool", f"Unknown tool: {name!r} is not in the server's tool list")
        if entry.compiled is None:
            assert entry.problem is not None
            return Rejection(name, entry.problem.kind, entry.problem.message, entry.problem, arguments)
        try:
            entry.compiled.validate(arguments)
        except Exception as exc:  # InputSchemaError, or a validator bug: never let it through
            problem = Problem.from_exception(exc)
            return Rejection(name, problem.kind, problem.message, problem, arguments)
        return None

    def reply(self, rejection: Rejection, modern: bool) -> tuple[str, Any]:
        """("result", CallToolResult dict) or ("error", (code, message, data))."""
        if rejection.protocol_only:
            return "error", (INVALID_PARAMS, rejection.message, None)
        assert rejection.problem is not None
        text = describe(rejection)
        data = rejection.problem.to_dict()
        if self.reject_as == "protocol-error":
            return "error", (INVALID_PARAMS, text, data)
        # SEP-1303: bad arguments are a tool execution error the model can read and fix.
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": text}],
            "structuredContent": data,
            "isError": True,
        }
        if modern:
            result["resultType"] = "complete"  # required on every 2026-07-28 result
        return "result", result


def describe(rejection: Rejection) -> str:
    problem = rejection.problem
    assert problem is not None
    if problem.kind == "unsupported_capability":
        return (
            f"Tool {rejection.tool!r} was not called: its inputSchema uses {problem.where()}, which "
            f"mcp-schema-gate cannot enforce, so every call is refused ({problem.message})."
        )
    if problem.kind == "execution_failure":
        return (
            f"Tool {rejection.tool!r} was not called: the arguments could not be checked "
            f"({problem.where()}): {problem.message}"
        )
    return (
        f"Tool {rejection.tool!r} was not called because its arguments are invalid: {problem.message} "
        f"(keyword {problem.keyword!r} at schema {problem.schema_path or '/'}). Fix the arguments and call again."
    )


class AuditLog:
    """One JSON line per rejection; argument values only when asked for."""

    def __init__(self, path: str, include_arguments: bool = False) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the proxy
        self._include_arguments = include_arguments

    def record(self, rejection: Rejection, request_id: Any) -> None:
        entry: dict[str, Any] = {
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            "requestId": request_id,
            "tool": rejection.tool,
            "kind": rejection.kind,
        }
        if rejection.problem is not None:
            entry.update(
                instancePath=rejection.problem.instance_path,
                schemaPath=rejection.problem.schema_path,
                keyword=rejection.problem.keyword,
            )
        # Validation messages quote the offending values, so they are argument
        # data too; without --audit-arguments only value-free messages are kept.
        if self._include_arguments or rejection.kind in ("unsupported_capability", "unknown_tool", "invalid_params"):
            entry["message"] = rejection.message
        if self._include_arguments:
            entry["arguments"] = rejection.arguments
        self._file.write(json.dumps(entry, default=repr) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
