"""`mcp-schema-gate check`: preflight every tool of a server or a saved listing, and report."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp import MCPError

from proxy.core.catalog import Catalog, ToolEntry
from proxy.core.outputs import support


class CheckInputError(Exception):
    pass


def tools_from_document(document: Any) -> tuple[list[Any], dict[str, Any]]:
    """Accept a captured catalog fixture, a bare tools/list result, or a JSON-RPC response."""
    if isinstance(document, dict) and isinstance(document.get("result"), dict) and "tools" in document["result"]:
        document = document["result"]
    if not isinstance(document, dict) or not isinstance(document.get("tools"), list):
        raise CheckInputError("expected a JSON object with a 'tools' list (or a JSON-RPC response with result.tools)")
    about = {k: document[k] for k in ("server", "package", "version", "registry", "protocolVersion") if k in document}
    return document["tools"], about


async def list_tools(spec: Any) -> list[Any]:
    """List every page of the server an UpstreamSpec names, with the SDK's own Client."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server: Any
    if spec.command:
        server = StdioServerParameters(command=spec.command[0], args=spec.command[1:], env=dict(os.environ),
                                       cwd=spec.cwd)
    elif spec.transport == "sse":
        from mcp.client.sse import sse_client

        server = sse_client(spec.url, headers=spec.headers)
    else:
        server = spec.url  # the SDK Client speaks Streamable HTTP to a URL
    tools: list[Any] = []
    async with Client(server) as client:
        cursor = None
        for _ in range(1000):
            page = await client.list_tools(cursor=cursor)
            tools.extend(t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
    return tools


def report(entries: list[ToolEntry], source: str, about: dict[str, Any], dialect: str = "contract") -> dict[str, Any]:
    rows = []
    for entry in entries:
        row: dict[str, Any] = {"name": entry.name, "supported": entry.error is None}
        if entry.error is not None:
            row["error"] = entry.error.to_dict()
        # Can --check-output check its results? none (no outputSchema) / supported / unsupported.
        row["outputSchema"] = support(entry)
        if entry.output_error is not None:
            row["outputError"] = entry.output_error.to_dict()
        rows.append(row)
    bad = sum(1 for r in rows if not r["supported"])
    outputs = {key: sum(1 for r in rows if r["outputSchema"] == key) for key in ("none", "supported", "unsupported")}
    return {
        "source": source,
        **about,
        "dialect": dialect,
        "tools": rows,
        "summary": {"total": len(rows), "supported": len(rows) - bad, "unsupported": bad},
        "outputSchemas": outputs,
    }


def output_column(row: dict[str, Any]) -> str:
    state = row.get("outputSchema", "none")
    if state != "unsupported":
        return f"output {state}"
    err = row["outputError"]
    return f"output UNSUPPORTED ({err['keyword'] or '?'} at {err['schemaPath'] or '/'})"


def render_text(doc: dict[str, Any]) -> str:
    lines = [f"mcp-schema-gate check: {doc['source']} (dialect {doc.get('dialect', 'contract')})"]
    width = max((len(r["name"]) for r in doc["tools"]), default=4)
    for row in doc["tools"]:
        if row["supported"]:
            lines.append(f"  {row['name']:<{width}}  supported    {output_column(row)}")
        else:
            err = row["error"]
            where = f"{err['keyword'] or '?'} at {err['schemaPath'] or '/'}"
            lines.append(f"  {row['name']:<{width}}  UNSUPPORTED  {output_column(row)}  {where}  [{err['kind']}]  "
                         f"{err['message']}")
    s = doc["summary"]
    lines.append(f"{plural(s['total'], 'tool')}: {s['supported']} supported, {s['unsupported']} unsupported")
    for row in doc.get("lock", []):
        if row["kind"] != "unchanged":
            where = f" at {row['pointer']}" if row["pointer"] else ""
            verdict = "REFUSED" if row["refused"] else "allowed"
            lines.append(f"  lock: {row['name']}: {', '.join(row['classes'])}  {verdict}  ({row['kind']}{where}: "
                         f"{row['message']})")
    outputs = doc.get("outputSchemas")
    if outputs and (outputs["supported"] or outputs["unsupported"]):
        lines.append(f"outputSchemas (--check-output): {outputs['supported']} checkable, {outputs['unsupported']} "
                     f"not checkable, {outputs['none']} tools without one")
    if doc.get("supportedWithExtendedDialect"):
        lines.append(f"{doc['supportedWithExtendedDialect']} of the unsupported would be supported with "
                     "--dialect extended")
    return "\n".join(lines)


def extended_would_help(tools: list[Any], entries: list[ToolEntry], dialect: str) -> int:
    """How many tools unsupported under `contract` the extended dialect would accept."""
    if dialect != "contract":
        return 0
    unsupported = {e.name for e in entries if e.error is not None}
    if not unsupported:
        return 0
    extended = Catalog("extended")
    return sum(1 for e in map(extended.preflight, tools) if e is not None and e.name in unsupported and e.error is None)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def load_tools(catalog_file: str | None, spec: Any, command_name: str) -> tuple[list[Any], dict[str, Any], str] | int:
    """(tools, about, source), or the exit status after saying on stderr why they could not be had."""
    try:
        if catalog_file:
            with open(catalog_file, encoding="utf-8") as fh:
                tools, about = tools_from_document(json.load(fh))
            return tools, about, catalog_file
        return anyio.run(list_tools, spec), {}, spec.url or " ".join(spec.command)
    except OSError as exc:
        print(f"mcp-schema-gate {command_name}: cannot read {catalog_file}: {exc.strerror}; check the path",
              file=sys.stderr)
        return 2
    except (ValueError, CheckInputError) as exc:
        print(f"mcp-schema-gate {command_name}: {catalog_file} is not a tool list: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the server failed to start, to answer, or to list
        print(f"mcp-schema-gate {command_name}: could not list the tools of {spec.describe()}: {leaf(exc)}; "
              "check that the command runs on its own (or the URL answers) and speaks MCP", file=sys.stderr)
        return 69


def run_check(catalog_file: str | None, spec: Any, dialect: str, as_json: bool, operator: Any = None) -> int:
    """Exit status: 0 all supported (and no refused change), 1 otherwise, 2 unreadable input, 69 not listed."""
    loaded = load_tools(catalog_file, spec, "check")
    if isinstance(loaded, int):
        return loaded
    tools, about, source = loaded
    catalog = Catalog(dialect)
    entries = [e for e in map(catalog.preflight, tools) if e is not None]
    doc = report(entries, source, about, catalog.dialect)
    helped = extended_would_help(tools, entries, dialect)
    if helped:
        doc["supportedWithExtendedDialect"] = helped
    refused_changes = 0
    if operator is not None and operator.lock is not None:
        from proxy.core.lock import classify, refusal

        changes = classify(operator.lock, [t for t in tools if isinstance(t, dict)], dialect)
        doc["lock"] = [{**c.to_dict(), "refused": refusal(c, operator.refuse) is not None} for c in changes]
        refused_changes = sum(1 for row in doc["lock"] if row["refused"])
    try:
        print(json.dumps(doc, indent=2) if as_json else render_text(doc), flush=True)
    except BrokenPipeError:  # `check … | head`: the reader left; that is not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if doc["summary"]["unsupported"] or refused_changes else 0


def run_lock(catalog_file: str | None, spec: Any, dialect: str) -> int:
    """Print a lock file of the tools' definitions on stdout (exit 0), or say why not (2, 69)."""
    from proxy.core.lock import LockError, build_lock, dumps_lock

    loaded = load_tools(catalog_file, spec, "lock")
    if isinstance(loaded, int):
        return loaded
    tools, _, source = loaded
    try:
        text = dumps_lock(build_lock([t for t in tools if isinstance(t, dict)], dialect))
    except LockError as exc:
        print(f"mcp-schema-gate lock: cannot pin the tools of {source}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    print(f"mcp-schema-gate lock: pinned {plural(len(tools), 'tool')} of {source} (dialect {dialect})",
          file=sys.stderr)
    return 0


def leaf(exc: BaseException) -> str:
    """The innermost reason of an exception (an HTTP client's ExceptionGroup included), as one phrase."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, OSError | MCPError) else f"{type(exc).__name__}: {text}"
