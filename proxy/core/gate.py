"""Gate: decide a tools/call from its params and a catalog revision. Fail closed.

Pure and synchronous: it sees params and catalog entries, never a transport,
so the same decisions hold whichever way the messages travel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from validator import InputSchemaError

from proxy.core.catalog import ToolEntry, as_schema_error, where

INVALID_PARAMS = -32602
# Where a refusal's {kind, instancePath, schemaPath, keyword, message} goes in a
# result's _meta: a key of our own namespace, as the MCP spec asks of extensions.
REFUSAL_META_KEY = "io.github.mcp-schema-gate/refusal"
RejectAs = Literal["tool-error", "protocol-error"]


# Which side refused a call, in the refusal object's `source`: the server's
# inputSchema, the operator's policy (a deny rule or an overlay schema), or
# the lock (a definition that changed since it was pinned).
INPUT_SCHEMA, POLICY, LOCK = "inputSchema", "policy", "lock"


@dataclass(frozen=True)
class Rejection:
    tool: str | None
    kind: str  # a validator kind, changed_definition / denied_by_policy, or invalid_params / unknown_tool
    message: str
    error: InputSchemaError | None = None
    arguments: Any = None
    # The machine-readable refusal {kind, instancePath, schemaPath, keyword, message, source};
    # None: a protocol error (unknown tool, malformed params), a JSON-RPC error with `code`.
    data: dict[str, str] | None = None
    code: int = INVALID_PARAMS  # a protocol error's JSON-RPC code; a listener's check may name its own

    def __post_init__(self) -> None:
        if self.data is None and self.error is not None:  # a refusal by the server's schema, unless told otherwise
            object.__setattr__(self, "data", {**self.error.to_dict(), "source": INPUT_SCHEMA})

    @property
    def protocol_only(self) -> bool:
        return self.data is None


@dataclass(frozen=True, slots=True)
class ListenerCheck:
    """One more check of a tools/call, that the listening side attaches to the request as its metadata.

    `Gate.check` runs it with the catalog entry it has just accepted the
    arguments by, so it sees the same revision the gate decided on: never a
    listing that has not arrived yet, never one a change has replaced. The
    sessionless listener compares `Mcp-Param-*` headers with the arguments
    this way. It returns a protocol error (`Rejection.data` None) or None.
    """

    check: Callable[[ToolEntry, dict[str, Any]], Rejection | None]


def _refused(name: str, error: InputSchemaError, arguments: Any, source: str = INPUT_SCHEMA) -> Rejection:
    return Rejection(name, error.kind, error.message, error, arguments, {**error.to_dict(), "source": source})


class Gate:
    def __init__(self, reject_as: RejectAs = "tool-error") -> None:
        self.reject_as = reject_as

    def check(self, params: Any, tools: Mapping[str, ToolEntry],
              extra: ListenerCheck | None = None) -> Rejection | None:
        """None means: forward the request exactly as it is (it is what was validated).

        `extra`, the listening side's own check of this call, runs last, with
        the entry the arguments were accepted by.
        """
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
            return _refused(name, entry.error, arguments)
        if entry.denial is not None:
            return Rejection(name, entry.denial["kind"], entry.denial["message"], None, arguments, entry.denial)
        try:
            entry.compiled.validate(arguments)
        except Exception as exc:  # InputSchemaError, or a validator bug: never let it through
            return _refused(name, as_schema_error(exc), arguments)
        if entry.shadow is not None and (problem := entry.shadow(arguments)) is not None:
            return _refused(name, problem, arguments)
        if entry.overlay is not None:
            try:
                problem = entry.overlay.check(arguments)
            except Exception as exc:  # fail closed, as for the server's schema
                problem = as_schema_error(exc)
            if problem is not None:
                return _refused(name, problem, arguments, POLICY)
        return extra.check(entry, arguments) if extra is not None else None

    def reply(self, rejection: Rejection, modern: bool, output_schema: Any = None) -> tuple[str, Any]:
        """("result", CallToolResult dict) or ("error", (code, message, data)).

        The machine-readable refusal always travels in the result's `_meta`
        under REFUSAL_META_KEY. It is also the `structuredContent` only when
        the tool declares no `outputSchema`: clients validate structuredContent
        against a declared outputSchema even on an error result (the TypeScript
        SDK throws on a mismatch), so the refusal would never reach the model.
        """
        if rejection.protocol_only:
            return "error", (rejection.code, rejection.message, None)
        text = describe(rejection)
        data = rejection.data
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
    if problem is None:  # the lock or the policy refused the tool: its message is the whole story
        return rejection.message
    if rejection.data is not None and rejection.data.get("source") == POLICY:
        return (
            f"Tool {rejection.tool!r} was not called: the operator's policy for it requires more of the arguments "
            f"than the tool's own schema: {problem.message} (keyword {problem.keyword!r} at the policy schema's "
            f"{problem.schema_path or '/'}). Fix the arguments within the policy, or ask the user."
        )
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
