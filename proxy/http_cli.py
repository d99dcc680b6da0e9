"""The CLI's transport options: --listen, --upstream, --upstream-transport and the listening side's security."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio

HELP = """\
transports (any listening side with any upstream):
  --listen stdio               serve one client on stdin/stdout (the default)
  --listen sse://HOST:PORT     legacy HTTP+SSE: GET /sse, POST /messages/?session_id=...
  --listen http://HOST:PORT    Streamable HTTP at /mcp (2025-11-25 and older; a 2026-07-28
                               client is declined with -32022 and falls back to initialize)
  -- COMMAND [ARGS...]         upstream: a stdio server, one child process per client session
  --upstream URL               upstream: an SSE or Streamable HTTP server, one upstream session
                               per client session; the transport is SSE when the URL path ends
                               in /sse, Streamable HTTP otherwise (--upstream-transport overrides)

example:
  mcp-schema-gate --listen http://127.0.0.1:8765 --auth-token-env GATE_TOKEN -- python server.py
  mcp-schema-gate --listen sse://127.0.0.1:8766 --upstream http://127.0.0.1:9000/mcp
"""


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("transports and HTTP security")
    group.add_argument("--listen", default="stdio", metavar="stdio|sse://HOST:PORT|http://HOST:PORT",
                       help="where clients connect (default stdio). HTTP binds HOST exactly as given: "
                       "use 127.0.0.1 unless the gate must be reachable from elsewhere; port 0 picks a free port")
    group.add_argument("--upstream", metavar="URL", help="front an SSE or Streamable HTTP MCP server instead of COMMAND")
    group.add_argument("--upstream-transport", choices=("sse", "http"),
                       help="transport of --upstream (default: sse if the URL path ends in /sse, else http)")
    group.add_argument("--upstream-header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="an HTTP header sent with every request to --upstream, e.g. 'Authorization: Bearer T' "
                       "(repeatable; $VAR and ${VAR} in VALUE are read from the environment)")
    group.add_argument("--auth-token", metavar="TOKEN",
                       help="HTTP listening: require 'Authorization: Bearer TOKEN' on every request (401 otherwise)")
    group.add_argument("--auth-token-env", metavar="VAR",
                       help="like --auth-token, read from environment variable VAR (keeps it out of ps)")
    group.add_argument("--max-body-bytes", type=int, default=4 * 1024 * 1024, metavar="N",
                       help="HTTP listening: refuse request bodies larger than N bytes with 413 (default 4 MiB)")
    group.add_argument("--idle-timeout", type=float, default=1800.0, metavar="SECONDS",
                       help="Streamable HTTP listening: close a session (and its upstream) after this long "
                       "without a request in flight or an open GET stream (default 1800)")
    group.add_argument("--json-response", action="store_true",
                       help="Streamable HTTP listening: answer every request POST with one JSON body, never an "
                       "SSE stream (by default a POST gets a stream only when its call sends progress or other "
                       "messages before its reply; with this option those go to the client's GET stream)")
    group.add_argument("--max-sessions", type=int, default=100, metavar="N",
                       help="HTTP listening: at most N client sessions at once (each has its own upstream, for a "
                       "stdio upstream a process); more get 503 (default 100)")
    group.add_argument("--allow-host", action="append", default=[], metavar="HOST[:PORT|:*]",
                       help="HTTP listening: another accepted Host header (loopback names are always accepted)")
    group.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="HTTP listening: another accepted Origin, e.g. https://app.example:* "
                       "(requests without Origin pass; loopback origins are always accepted)")


def wants_transports(args: Any) -> bool:
    options = (args.upstream, args.auth_token, args.auth_token_env, args.json_response)
    return args.listen != "stdio" or any(options)


def run(args: Any, command: list[str], compile_schema: Any) -> int:
    from proxy.http_listen import parse_listen
    from proxy.http_upstream import transport_for
    from proxy.sessions import UpstreamSpec

    if bool(command) == bool(args.upstream):
        print("mcp-schema-gate: give exactly one upstream: '-- COMMAND [ARGS...]' or --upstream URL",
              file=sys.stderr)
        return 2
    try:
        listen = parse_listen(args.listen)
    except ValueError as exc:
        print(f"mcp-schema-gate: {exc}", file=sys.stderr)
        return 2
    token = args.auth_token
    if args.auth_token_env:
        token = os.environ.get(args.auth_token_env)
        if not token:
            print(f"mcp-schema-gate: --auth-token-env {args.auth_token_env}: the variable is empty or unset",
                  file=sys.stderr)
            return 2
    if listen is not None:
        listen.auth_token = token
        listen.max_body = args.max_body_bytes
        listen.idle_timeout = args.idle_timeout if args.idle_timeout > 0 else None
        listen.max_sessions = max(1, args.max_sessions)
        listen.json_response = args.json_response
        listen.allowed_hosts = list(args.allow_host)
        listen.allowed_origins = list(args.allow_origin)
    elif token:
        print("mcp-schema-gate: --auth-token applies to an HTTP --listen only", file=sys.stderr)
        return 2
    if args.json_response and (listen is None or listen.kind != "http"):
        print("mcp-schema-gate: --json-response applies to --listen http://HOST:PORT only", file=sys.stderr)
        return 2
    headers: dict[str, str] = {}
    for header in args.upstream_header:
        name, sep, value = header.partition(":")
        value = os.path.expandvars(value.strip())  # $VAR / ${VAR} from the environment: secrets stay out of ps
        if not sep or not name.strip() or not value or "$" in value:
            print(f"mcp-schema-gate: --upstream-header {header.split(':')[0]!r}: expected 'NAME: VALUE' "
                  "with every $VAR set", file=sys.stderr)
            return 2
        headers[name.strip()] = value
    if args.upstream:
        spec = UpstreamSpec(url=args.upstream, transport=transport_for(args.upstream, args.upstream_transport),
                            headers=headers or None)
    else:
        spec = UpstreamSpec(command=command, cwd=args.cwd)
    return anyio.run(_serve, listen, spec, args, compile_schema)


async def _serve(listen: Any, spec: Any, args: Any, compile_schema: Any) -> int:
    from proxy.gate import AuditLog
    from proxy.http_listen import serve_http
    from proxy.sessions import GateSettings, run_session

    audit = AuditLog(args.audit_log, args.audit_arguments) if args.audit_log else None
    summary = open(os.devnull, "w") if args.quiet else None  # noqa: SIM115
    settings = GateSettings(compile_schema, args.reject_as, audit, summary)
    try:
        if listen is not None:
            return await serve_http(listen, spec, settings)
        from proxy.cli import _run_until_signal
        from proxy.stdio import client_stdio

        class _Session:  # what _run_until_signal expects of a relay
            async def run(self) -> int:
                return await run_session(client, spec, settings)

        async with client_stdio() as client:
            status = await _run_until_signal(_Session())
        if status == 1:
            print(f"mcp-schema-gate: exiting: the upstream {spec.describe()} closed the session", file=sys.stderr,
                  flush=True)
        return status
    finally:
        if audit is not None:
            audit.close()
