"""`mcp-schema-gate check`: preflight every tool of a server or a saved listing, and report."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio

from proxy.catalog import Catalog, ToolEntry


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


async def list_from_command(command: list[str], server: Any = None) -> list[Any]:
    """List every page from a stdio COMMAND, or from `server` (a URL or an SDK transport) when given."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    if server is None:
        server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
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
        row: dict[str, Any] = {"name": entry.name, "supported": entry.problem is None}
        if entry.problem is not None:
            row["error"] = entry.problem.to_dict()
        rows.append(row)
    bad = sum(1 for r in rows if not r["supported"])
    return {
        "source": source,
        **about,
        "dialect": dialect,
        "tools": rows,
        "summary": {"total": len(rows), "supported": len(rows) - bad, "unsupported": bad},
    }


def render_text(doc: dict[str, Any]) -> str:
    lines = [f"mcp-schema-gate check: {doc['source']} (dialect {doc.get('dialect', 'contract')})"]
    width = max((len(r["name"]) for r in doc["tools"]), default=4)
    for row in doc["tools"]:
        if row["supported"]:
            lines.append(f"  {row['name']:<{width}}  supported")
        else:
            err = row["error"]
            where = f"{err['keyword'] or '?'} at {err['schemaPath'] or '/'}"
            lines.append(f"  {row['name']:<{width}}  UNSUPPORTED  {where}  [{err['kind']}]  {err['message']}")
    s = doc["summary"]
    lines.append(f"{s['total']} tools: {s['supported']} supported, {s['unsupported']} unsupported")
    return "\n".join(lines)


def run_check(catalog_file: str | None, command: list[str], compile_schema: Any, as_json: bool,
              upstream: str | None = None, upstream_transport: str | None = None) -> int:
    try:
        if catalog_file:
            with open(catalog_file, encoding="utf-8") as fh:
                tools, about = tools_from_document(json.load(fh))
            source = catalog_file
        elif upstream:
            from proxy.http_upstream import transport_for

            if transport_for(upstream, upstream_transport) == "sse":
                from mcp.client.sse import sse_client

                server: Any = sse_client(upstream)
            else:
                server = upstream  # the SDK Client speaks Streamable HTTP to a URL
            tools, about = anyio.run(list_from_command, [], server), {}
            source = upstream
        else:
            tools, about = anyio.run(list_from_command, command), {}
            source = " ".join(command)
    except (OSError, ValueError, CheckInputError) as exc:
        print(f"mcp-schema-gate check: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the server failed to start or to list
        print(f"mcp-schema-gate check: could not list tools: {exc!r}", file=sys.stderr)
        return 2
    catalog = Catalog(compile_schema)
    entries = [e for e in map(catalog.preflight, tools) if e is not None]
    doc = report(entries, source, about, catalog.dialect)
    try:
        print(json.dumps(doc, indent=2) if as_json else render_text(doc), flush=True)
    except BrokenPipeError:  # `check … | head`: the reader left; that is not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if doc["summary"]["unsupported"] else 0
