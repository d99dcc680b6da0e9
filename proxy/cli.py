"""Command line: `mcp-schema-gate [OPTIONS] -- COMMAND ...` and `mcp-schema-gate check ...`."""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import logging
import os
import signal
import sys
from typing import Any

import anyio

from proxy.catalog import Catalog, default_compiler

EXAMPLE_CONFIG = {
    "mcpServers": {
        "filesystem": {
            "command": "mcp-schema-gate",
            "args": ["--audit-log", "/tmp/mcp-schema-gate.jsonl", "--", "npx", "-y",
                     "@modelcontextprotocol/server-filesystem", "/tmp"],
        }
    }
}

DESCRIPTION = """\
An MCP proxy for stdio servers. It starts COMMAND as the upstream MCP server,
serves your MCP client on stdin/stdout, forwards every message unchanged, and
answers a tools/call itself when the tool's inputSchema is outside the
supported JSON Schema subset or the arguments do not satisfy it. A rejected
call never reaches the server. Logs go to stderr; stdout carries only
protocol messages.

usage:
  mcp-schema-gate [OPTIONS] -- COMMAND [ARGS...]
  mcp-schema-gate check [--json] [--dialect D] (--catalog FILE | --upstream URL | -- COMMAND [ARGS...])
  python -m proxy ...                       (same as mcp-schema-gate)
"""

EPILOG = f"""\
check: list the tools (from a running COMMAND, or from FILE holding a saved
tools/list result, a JSON-RPC response with result.tools, or a captured
catalog fixture), preflight every inputSchema and print one line per tool.
Exit status 1 if any tool is unsupported, 2 on a usage or input error.

Example client configuration (e.g. claude_desktop_config.json), wrapping
a stdio server:

{json.dumps(EXAMPLE_CONFIG, indent=2)}
"""


def _parser(check: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-schema-gate check" if check else "mcp-schema-gate",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--dialect",
        choices=("contract", "extended"),
        help="validator dialect passed to validator.compile (default: the validator's own, 'contract')",
    )
    if check:
        parser.add_argument(
            "--catalog", metavar="FILE", help="read a saved tools/list result instead of running COMMAND"
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--upstream", metavar="URL", help="list the tools of an SSE or Streamable HTTP server")
        parser.add_argument("--upstream-transport", choices=("sse", "http"),
                            help="transport of --upstream (default: sse if the URL path ends in /sse, else http)")
        return parser
    parser.add_argument(
        "--reject-as",
        choices=("tool-error", "protocol-error"),
        default="tool-error",
        help="how to answer a refused call: a CallToolResult with isError and structuredContent "
        "{kind, instancePath, schemaPath, keyword, message} (tool-error, the default, per MCP SEP-1303), "
        "or a JSON-RPC -32602 error carrying the same object in error.data (protocol-error). "
        "Unknown tools and malformed params are always -32602",
    )
    parser.add_argument("--audit-log", metavar="FILE", help="append one JSON line per refused call to FILE")
    parser.add_argument(
        "--audit-arguments",
        action="store_true",
        help="include the refused arguments in the audit log (off by default: they may hold secrets)",
    )
    parser.add_argument("--cwd", metavar="DIR", help="working directory for COMMAND (default: the current one)")
    parser.add_argument(
        "--quiet", action="store_true", help="do not print the startup summary (tools listed, unsupported ones) on stderr"
    )
    from proxy import http_cli

    http_cli.add_options(parser)
    parser.epilog = f"{parser.epilog}\n{http_cli.HELP}"
    return parser


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def _compiler(dialect: str | None):
    compile_schema = default_compiler()
    if dialect is None:
        return compile_schema
    try:
        accepts = "dialect" in inspect.signature(compile_schema).parameters
    except (TypeError, ValueError):
        accepts = False
    if not accepts:
        raise SystemExit("mcp-schema-gate: this validator has no dialect option; drop --dialect")
    return functools.partial(compile_schema, dialect=dialect)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    check = bool(argv) and argv[0] == "check"
    options, command = _split(argv[1:] if check else argv)
    args = _parser(check).parse_args(options)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    if check:
        from proxy.check import run_check

        if bool(args.catalog) + bool(command) + bool(args.upstream) != 1:
            print("mcp-schema-gate check: give exactly one of --catalog FILE, --upstream URL or -- COMMAND ...",
                  file=sys.stderr)
            return 2
        return run_check(args.catalog, command, _compiler(args.dialect), as_json=args.json,
                         upstream=args.upstream, upstream_transport=args.upstream_transport)
    from proxy import http_cli

    if http_cli.wants_transports(args):
        return http_cli.run(args, command, _compiler(args.dialect))
    if not command:
        _parser(False).print_usage(sys.stderr)
        print("mcp-schema-gate: missing '-- COMMAND [ARGS...]' (the stdio MCP server to wrap); see --help",
              file=sys.stderr)
        return 2
    return anyio.run(serve, command, args, _compiler(args.dialect))


async def _run_until_signal(relay: Any) -> int:
    """Run the relay; on SIGTERM/SIGINT/SIGHUP stop it so the upstream is shut down properly, not orphaned."""
    status = 0
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            nonlocal status
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    print(f"mcp-schema-gate: received signal {signum}, stopping the upstream server",
                          file=sys.stderr, flush=True)
                    status = 128 + signum
                    tg.cancel_scope.cancel()
                    return

        async def relay_then_stop() -> None:
            nonlocal status
            status = await relay.run()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(relay_then_stop)
    return status


async def serve(command: list[str], args: Any, compile_schema: Any) -> int:
    from proxy.gate import AuditLog, Gate
    from proxy.guard import GuardHooks
    from proxy.relay import Relay
    from proxy.stdio import client_stdio, upstream_stdio

    audit = AuditLog(args.audit_log, args.audit_arguments) if args.audit_log else None
    summary = open(os.devnull, "w") if args.quiet else sys.stderr  # noqa: SIM115
    hooks = GuardHooks(Catalog(compile_schema), Gate(args.reject_as), audit, summary=summary)
    try:
        async with client_stdio() as client:
            try:
                async with upstream_stdio(command, cwd=args.cwd) as upstream:
                    relay = Relay(client, upstream, hooks)
                    status = await _run_until_signal(relay)
            except OSError as exc:
                print(f"mcp-schema-gate: cannot start {command[0]!r}: {exc}", file=sys.stderr, flush=True)
                return 127
    finally:
        if audit is not None:
            audit.close()
    if status and relay.upstream_gone:
        print(f"mcp-schema-gate: exiting: {relay.upstream_gone}; requests in flight were answered with errors",
              file=sys.stderr, flush=True)
    return status
