"""Gate: decide a tools/call from its params and a catalog revision. Fail closed.

Pure and synchronous: it sees params and catalog entries, never a transport,
so the same decisions hold whichever way the messages travel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from validator import InputSchemaError

from proxy.core.catalog import ToolEntry, as_schema_error, where

INVALID_PARAMS = -32602
# Where a refusal's {kind, instancePath, schemaPath, keyword, message} goes in a
# result's _meta: a key of our own namespace, as the MCP spec asks of extensions.
REFUSAL_META_KEY = "io.github.mcp-schema-gate/refusal"
RejectAs = Literal["tool-error", "protocol-error"]


@dataclass(frozen=True)
class Rejection:
    tool: str | None
    kind: str  # a validator kind, or "invalid_params" / "unknown_tool" (always JSON-RPC errors)
    message: str
    error: InputSchemaError | None = None
    arguments: Any = None

    @property
    def protocol_only(self) -> bool:
        return self.error is None


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
            assert entry.error is not None
            return Rejection(name, entry.error.kind, entry.error.message, entry.error, arguments)
        try:
            entry.compiled.validate(arguments)
        except Exception as exc:  # InputSchemaError, or a validator bug: never let it through
            problem = as_schema_error(exc)
            return Rejection(name, problem.kind, problem.message, problem, arguments)
        if entry.shadow is not None and (problem := entry.shadow(arguments)) is not None:
            return Rejection(name, problem.kind, problem.message, problem, arguments)
        return None

    def reply(self, rejection: Rejection, modern: bool, output_schema: Any = None) -> tuple[str, Any]:
        """("result", CallToolResult dict) or ("error", (code, message, data)).

        The machine-readable refusal always travels in the result's `_meta`
        under REFUSAL_META_KEY. It is also the `structuredContent` only when
        the tool declares no `outputSchema`: clients validate structuredContent
        against a declared outputSchema even on an error result (the TypeScript
        SDK throws on a mismatch), so the refusal would never reach the model.
        """
        if rejection.protocol_only:
            return "error", (INVALID_PARAMS, rejection.message, None)
        assert rejection.error is not None
        text = describe(rejection)
        data = rejection.error.to_dict()
        if self.reject_as == "protocol-error":
            return "error", (INVALID_PARAMS, text, data)
        # SEP-1303: bad arguments are a tool execution error the model can read and fix.
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if output_schema is None:
            result["structuredContent"] = data
        result["isError"] = True
        result["_meta"] = {REFUSAL_META_KEY: data}
        if modern:
            result["resultType"] = "complete"  # required on every 2026-07-28 result
        return "result", result


def describe(rejection: Rejection) -> str:
    problem = rejection.error
    assert problem is not None
    if problem.kind == "unsupported_capability":
        return (
            f"Tool {rejection.tool!r} was not called: its inputSchema uses {where(problem)}, which "
            f"mcp-schema-gate cannot enforce, so every call is refused ({problem.message})."
        )
    if problem.kind == "execution_failure":
        return (
            f"Tool {rejection.tool!r} was not called: the arguments could not be checked "
            f"({where(problem)}): {problem.message}"
        )
    return (
        f"Tool {rejection.tool!r} was not called because its arguments are invalid: {problem.message} "
        f"(keyword {problem.keyword!r} at schema {problem.schema_path or '/'}). Fix the arguments and call again."
    )
