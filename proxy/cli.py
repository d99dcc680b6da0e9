"""Command line: `mcp-schema-gate [serve] [OPTIONS] -- COMMAND ...` and `mcp-schema-gate check ...`.

One parser with subcommands (`serve`, the default, and `check`), one runner
with one signal loop for every listening side.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

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
A gatekeeper for MCP tool calls. It sits between an MCP client and an MCP
server, forwards every message unchanged, and answers a tools/call itself when
the tool's inputSchema is outside the supported JSON Schema subset or the
arguments do not satisfy it: a refused call never reaches the server. The
server is a stdio COMMAND (one child per client session) or an SSE or
Streamable HTTP URL; clients connect on stdio (the default), SSE or
Streamable HTTP. Logs go to stderr; on stdio, stdout carries only protocol
messages.

usage:
  mcp-schema-gate [OPTIONS] -- COMMAND [ARGS...]      wrap a stdio server, serve the client on stdio
  mcp-schema-gate [OPTIONS] --upstream URL            front an SSE or Streamable HTTP server
  mcp-schema-gate check [--json] [--dialect D] [--lock FILE] (--catalog FILE | --upstream URL | -- COMMAND [ARGS...])
  mcp-schema-gate lock [--dialect D] (--catalog FILE | --upstream URL | -- COMMAND [ARGS...]) > tools.lock.json
  python -m proxy ...                                 (same as mcp-schema-gate)
"""

EPILOG = f"""\
check: list the tools (from a running COMMAND, an --upstream URL, or FILE
holding a saved tools/list result, a JSON-RPC response with result.tools, or
a captured catalog fixture), preflight every inputSchema and print one line
per tool. Exit status 0 if every tool is supported, 1 if any is not, 2 on a
usage or input error, 69 if the server could not be started or reached.

lock: print a lock file pinning every tool's definition (name, description,
inputSchema, outputSchema, annotations, a digest each) for --lock.

exit status when serving: 0 the client left; 1 the upstream went away;
2 a usage error; 69 the upstream URL could not be reached; 127 COMMAND could
not be started; 128+N stopped by signal N (every call in flight is answered
with an error first).

Example client configuration (e.g. claude_desktop_config.json), wrapping
a stdio server:

{json.dumps(EXAMPLE_CONFIG, indent=2)}
"""

TRANSPORTS_HELP = """\
transports (any listening side with any upstream):
  --listen stdio               serve one client on stdin/stdout (the default)
  --listen sse://HOST:PORT     legacy HTTP+SSE: GET /sse, POST /messages/?session_id=...
  --listen http://HOST:PORT    Streamable HTTP at /mcp: sessions (the initialize handshake), and
                               sessionless 2026-07-28 requests, each answered on its own
  -- COMMAND [ARGS...]         upstream: a stdio server, one child process per client session
                               (sessionless requests share one, or --upstream-pool N)
  --upstream URL               upstream: an SSE or Streamable HTTP server, one upstream session
                               per client session; the transport is SSE when the URL path ends
                               in /sse, Streamable HTTP otherwise (--upstream-transport overrides)

example:
  mcp-schema-gate --listen http://127.0.0.1:8765 --auth-token-env GATE_TOKEN -- python server.py
  mcp-schema-gate --listen sse://127.0.0.1:8766 --upstream http://127.0.0.1:9000/mcp
"""

USAGE_ERROR = 2
SUBCOMMANDS = ("serve", "check", "lock")
CHANGE_CLASSES = "widened,added,description_changed,annotations_changed"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dialect", choices=("contract", "extended"), default="contract",
                        help="the validator's JSON Schema subset: contract (the default, strict) or extended "
                        "(also $ref/$defs, const, allOf, title and the other 2020-12 keywords real servers emit)")
    parser.add_argument("--upstream", metavar="URL", help="an SSE or Streamable HTTP MCP server instead of COMMAND")
    parser.add_argument("--upstream-transport", choices=("sse", "http"),
                        help="transport of --upstream (default: sse if the URL path ends in /sse, else http)")
    parser.add_argument("--upstream-header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="an HTTP header sent with every request to --upstream, e.g. 'Authorization: Bearer T' "
                        "(repeatable; $VAR and ${VAR} in VALUE are read from the environment)")


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reject-as", choices=("tool-error", "protocol-error"), default="tool-error",
        help="how to answer a refused call: a CallToolResult with isError, a text the model can act on and "
        "the refusal {kind, instancePath, schemaPath, keyword, message} in _meta (and as structuredContent "
        "when the tool declares no outputSchema) (tool-error, the default, per MCP SEP-1303), or a JSON-RPC "
        "-32602 error carrying the same object in error.data (protocol-error). Unknown tools and malformed "
        "params are always -32602")
    parser.add_argument("--audit-log", metavar="FILE", help="append one JSON line per refused call to FILE (and per result that violates its "
                        "outputSchema, kind output_mismatch; see --check-output)")
    parser.add_argument("--audit-arguments", action="store_true",
                        help="include the refused arguments in the audit log (off by default: they may hold secrets)")
    parser.add_argument("--check-output", choices=("off", "warn", "strict"), default="warn",
                        help="check each forwarded tools/call result's structuredContent against the tool's "
                        "outputSchema: off; warn (the default): forward it unchanged and record a mismatch (stderr "
                        "once per tool, the audit log, metrics); strict: also replace a non-conforming result "
                        "with an isError result saying what did not conform. See docs/observability.md")
    parser.add_argument("--metrics", metavar="[HOST:]PORT",
                        help="serve Prometheus metrics at http://HOST:PORT/metrics (HOST 127.0.0.1 unless given; "
                        "port 0 picks a free one; no authentication: keep it on loopback). An HTTP --listen also "
                        "serves GET /metrics behind its --auth-token")
    parser.add_argument("--cwd", metavar="DIR", help="working directory for COMMAND (default: the current one)")
    parser.add_argument("--drain-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="after the client closes its input, wait this long for answers to requests it already "
                        "sent, then answer the rest with errors and exit (default 10)")
    parser.add_argument("--quiet", action="store_true",
                        help="do not print the startup summary (tools listed, unsupported ones) on stderr")
    parser.add_argument("--event-loop", choices=("auto", "uvloop", "asyncio"), default="auto",
                        help="the event loop the gate runs on: uvloop (faster; auto, the default, uses it when it "
                        "is installed) or asyncio's own")
    group = parser.add_argument_group("transports and HTTP security")
    group.add_argument("--listen", default="stdio", metavar="stdio|sse://HOST:PORT|http://HOST:PORT",
                       help="where clients connect (default stdio). HTTP binds HOST exactly as given: "
                       "use 127.0.0.1 unless the gate must be reachable from elsewhere; port 0 picks a free port; "
                       "the printed form http://HOST:PORT/mcp is accepted too")
    group.add_argument("--auth-token", metavar="TOKEN",
                       help="HTTP listening: require 'Authorization: Bearer TOKEN' on every request (401 otherwise)")
    group.add_argument("--auth-token-env", metavar="VAR",
                       help="like --auth-token, read from environment variable VAR (keeps it out of ps)")
    group.add_argument("--allow-unauthenticated", action="store_true",
                       help="HTTP listening: allow a non-loopback HOST without --auth-token (refused otherwise)")
    group.add_argument("--max-body-bytes", type=int, default=4 * 1024 * 1024, metavar="N",
                       help="HTTP listening: refuse request bodies larger than N bytes with 413 (default 4 MiB)")
    group.add_argument("--idle-timeout", type=float, default=1800.0, metavar="SECONDS",
                       help="Streamable HTTP listening: close a session (and its upstream) after this long "
                       "without a request in flight or an open GET stream (default 1800)")
    group.add_argument("--json-response", action="store_true",
                       help="Streamable HTTP listening: answer every request POST with one JSON body, never an "
                       "SSE stream (by default a POST gets a stream when its call sends progress or other "
                       "messages before its reply, or takes longer than a second; with this option those go "
                       "to the client's GET stream, and are dropped for sessionless 2026-07-28 requests, which "
                       "have none; a subscriptions/listen answer is always a stream)")
    group.add_argument("--max-sessions", type=int, default=100, metavar="N",
                       help="HTTP listening: at most N client sessions at once (each has its own upstream, for a "
                       "stdio upstream a process); more get 503 (default 100)")
    group.add_argument("--max-connections", type=int, default=1000, metavar="N",
                       help="HTTP listening: at most N open connections; more are answered 503 (default 1000)")
    group.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                       help="HTTP listening: close a connection whose request headers have not arrived within "
                       "this long, and an idle keep-alive connection after 5 s (default 10)")
    group.add_argument("--upstream-pool", type=int, default=1, metavar="N",
                       help="sessionless 2026-07-28 requests in front of a stdio server: share N children "
                       "among all clients, each request to the least busy (default 1; sessions always get their own)")
    group.add_argument("--forward-header", action="append", default=[], metavar="NAME",
                       help="pass the client's header NAME (e.g. Authorization, X-Tenant) on to an HTTP upstream "
                       "(repeatable). Sessionless requests with different values get separate upstream "
                       "connections and tool catalogs; not with --auth-token for the same header")
    group.add_argument("--catalog-ttl", type=float, default=0.0, metavar="SECONDS",
                       help="relist the upstream's tools before a call once the catalog is this old (default 0: "
                       "only when the server announces a change or an unknown tool is called)")
    group.add_argument("--allow-host", action="append", default=[], metavar="HOST[:PORT|:*]",
                       help="HTTP listening: another accepted Host header (loopback names are always accepted)")
    group.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="HTTP listening: another accepted Origin, e.g. https://app.example:* "
                       "(requests without Origin pass; loopback origins are always accepted)")


def parser_for(subcommand: str, *, exit_on_error: bool = True) -> argparse.ArgumentParser:
    serve = subcommand == "serve"
    parser = argparse.ArgumentParser(
        prog="mcp-schema-gate" if serve else f"mcp-schema-gate {subcommand}",
        description=DESCRIPTION, epilog=EPILOG + ("\n" + TRANSPORTS_HELP if serve else ""),
        formatter_class=argparse.RawDescriptionHelpFormatter, usage=argparse.SUPPRESS, exit_on_error=exit_on_error,
    )
    _common(parser)
    if serve:
        _serve_options(parser)
    else:
        parser.add_argument("--catalog", metavar="FILE",
                            help="read a saved tools/list result instead of running COMMAND")
    if subcommand == "check":
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
    if subcommand != "lock":
        group = parser.add_argument_group("operator control (docs/operator-control.md)")
        group.add_argument("--lock", metavar="FILE",
                           help="compare every tool with its definition pinned in FILE (made by "
                           "`mcp-schema-gate lock`); a tool whose change is refused is answered like an "
                           "unsupported one (kind changed_definition)")
        group.add_argument("--refuse-changes", metavar="CLASSES", default=CHANGE_CLASSES,
                           help="with --lock: the change classes refused, comma-separated, from widened, added, "
                           "description_changed, annotations_changed, output_changed, narrowed, removed "
                           f"(default {CHANGE_CLASSES})")
        if serve:
            group.add_argument("--policy", metavar="FILE",
                               help="a TOML policy: allow/deny globs on tool names, hide denied tools from "
                               "tools/list, schema overlays every call must also satisfy")
    return parser


def split_command(subcommand: str, argv: list[str]) -> tuple[list[str], list[str], str | None]:
    """(our options, COMMAND, a note) from argv.

    COMMAND follows `--`. Without one, it starts at the first word that is
    neither one of our options nor an option's value (`mcp-schema-gate npx -y
    server` reads as `-- npx -y server`): our options all start with a dash,
    so where the command begins is unambiguous, and MCP clients such as the
    Inspector CLI swallow the first `--` of a command line.
    """
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1:], None
    probe = parser_for(subcommand, exit_on_error=False)
    for at, word in enumerate(argv):
        if word.startswith("-"):
            continue
        try:
            _, extra = probe.parse_known_args(argv[:at])
        except (argparse.ArgumentError, SystemExit):
            continue  # `word` is the value of the option before it
        if extra:
            return argv, [], None  # an option we do not know, before any command: let argparse say so
        note = (f"reading {' '.join(argv[at:])!r} as the server command; put '--' before it to say so "
                f"explicitly: mcp-schema-gate {' '.join([*argv[:at], '--', *argv[at:]])}")
        return argv[:at], argv[at:], note
    return argv, [], None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    subcommand = "serve"
    if argv and argv[0] in SUBCOMMANDS:
        subcommand, argv = argv[0], argv[1:]
    options, command, note = split_command(subcommand, argv)
    args = parser_for(subcommand).parse_args(options)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    if note is not None:
        print(f"mcp-schema-gate: {note}", file=sys.stderr, flush=True)
    try:
        if subcommand == "check":
            return _check(args, command)
        if subcommand == "lock":
            return _lock(args, command)
        return _serve(args, command)
    except UsageError as exc:
        print(f"mcp-schema-gate{'' if subcommand == 'serve' else ' ' + subcommand}: {exc}", file=sys.stderr)
        return USAGE_ERROR


class UsageError(Exception):
    """A command line that cannot work; the message says what to change."""


def _upstream_spec(args: Any, command: list[str]) -> Any:
    from proxy.session import UpstreamSpec
    from proxy.upstream.streamable_http import transport_for

    if bool(command) == bool(args.upstream):
        if not command:
            raise UsageError("missing the server to gate: give '-- COMMAND [ARGS...]' (a stdio MCP server) "
                             "or --upstream URL; see --help")
        raise UsageError("give exactly one upstream: '-- COMMAND [ARGS...]' or --upstream URL, not both")
    if args.upstream:
        return UpstreamSpec(url=args.upstream, transport=transport_for(args.upstream, args.upstream_transport),
                            headers=_headers(args.upstream_header) or None)
    return UpstreamSpec(command=command, cwd=getattr(args, "cwd", None))


def _headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for header in values:
        name, sep, value = header.partition(":")
        value = os.path.expandvars(value.strip())  # $VAR / ${VAR} from the environment: secrets stay out of ps
        if not sep or not name.strip() or not value or "$" in value:
            raise UsageError(f"--upstream-header {header.split(':')[0]!r}: expected 'NAME: VALUE' with every "
                             "$VAR set in the environment")
        headers[name.strip()] = value
    return headers


def _source(args: Any, command: list[str]) -> Any:
    if bool(args.catalog) + bool(command) + bool(args.upstream) != 1:
        raise UsageError("give exactly one of --catalog FILE, --upstream URL or -- COMMAND ...")
    return None if args.catalog else _upstream_spec(args, command)


def _operator(args: Any) -> Any:
    """The lock and the policy the options name, loaded (or a UsageError saying what is wrong with them)."""
    from proxy.core.lock import LockError, RefusePolicy, load_lock
    from proxy.core.operator import OperatorControl
    from proxy.core.policy import Policy, PolicyError

    lock_file, policy_file = args.lock, getattr(args, "policy", None)
    if not lock_file and not policy_file:
        return None
    try:
        lock = load_lock(lock_file) if lock_file else None
        refuse = RefusePolicy(frozenset(c.strip() for c in args.refuse_changes.split(",") if c.strip()))
        policy = Policy.load(policy_file, args.dialect) if policy_file else None
    except (LockError, PolicyError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    return OperatorControl(lock, refuse, policy, args.dialect)


def _check(args: Any, command: list[str]) -> int:
    from proxy.check import run_check

    spec = _source(args, command)
    return run_check(args.catalog, spec, args.dialect, as_json=args.json, operator=_operator(args))


def _lock(args: Any, command: list[str]) -> int:
    from proxy.check import run_lock

    return run_lock(args.catalog, _source(args, command), args.dialect)


def _serve(args: Any, command: list[str]) -> int:
    from proxy.core.audit import AuditLog
    from proxy.listen import LISTENERS
    from proxy.listen.http import listen_settings
    from proxy.session import GateSettings, load

    spec = _upstream_spec(args, command)
    token = args.auth_token
    if args.auth_token_env:
        token = os.environ.get(args.auth_token_env)
        if not token:
            raise UsageError(f"--auth-token-env {args.auth_token_env}: the variable is empty or unset; export it "
                             "or pass --auth-token")
    try:
        listen = listen_settings(args, token)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if listen is not None and listen.forward_headers and spec.kind == "stdio":
        raise UsageError("--forward-header passes client headers to an HTTP --upstream; a stdio server "
                         "cannot receive them")
    try:
        audit = AuditLog(args.audit_log, args.audit_arguments) if args.audit_log else None
    except OSError as exc:
        raise UsageError(f"--audit-log {args.audit_log}: cannot open it for appending ({exc.strerror}); "
                         "choose a writable path") from None
    metrics, exporter = _metrics(args, listen)
    summary = open(os.devnull, "w") if args.quiet else sys.stderr  # noqa: SIM115 - lives as long as the gate
    settings = GateSettings(args.dialect, args.reject_as, audit, summary, drain_timeout=max(0.0, args.drain_timeout),
                            operator=_operator(args), check_output=args.check_output, metrics=metrics,
                            catalog_ttl=args.catalog_ttl if args.catalog_ttl > 0 else None)
    serve = load(LISTENERS["stdio" if listen is None else listen.kind])
    try:
        return anyio.run(run_until_signal, lambda stop: serve(listen, spec, settings, stop),
                         backend_options=_loop_options(args.event_loop))
    finally:
        if exporter is not None:
            exporter.shutdown()
        if audit is not None:
            audit.close()


def _loop_options(choice: str) -> dict[str, Any]:
    """anyio's asyncio backend options for --event-loop: uvloop cuts the gate's CPU per call (docs/performance.md)."""
    if choice == "asyncio":
        return {}
    if importlib.util.find_spec("uvloop") is None:
        if choice == "uvloop":
            raise UsageError("--event-loop uvloop: uvloop is not installed here; install it "
                             "(pip install uvloop) or use --event-loop asyncio")
        return {}
    return {"use_uvloop": True}


def _metrics(args: Any, listen: Any) -> tuple[Any, Any]:
    """(metrics, the --metrics exporter or None). Metrics are on with --metrics or an HTTP --listen (GET /metrics)."""
    from proxy.listen.http import is_loopback
    from proxy.metrics import NO_METRICS, Metrics, parse_address

    if not args.metrics and listen is None:
        return NO_METRICS, None
    metrics = Metrics()
    if not args.metrics:
        return metrics, None
    try:
        host, port = parse_address(args.metrics)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        exporter, url = metrics.serve(host, port)
    except OSError as exc:
        raise UsageError(f"--metrics {args.metrics}: cannot listen there ({exc.strerror}); choose another "
                         "HOST:PORT") from None
    note = "" if is_loopback(host) else " (not loopback: anyone who can reach it can read the metrics)"
    print(f"mcp-schema-gate: metrics on {url}{note}", file=sys.stderr, flush=True)
    return metrics, exporter


async def run_until_signal(main: Callable[[anyio.Event], Awaitable[int]]) -> int:
    """Run `main(stop)`; SIGTERM, SIGINT or SIGHUP set `stop`, and the exit status is then 128+N.

    `main` ends on its own once `stop` is set (answering what is in flight and
    shutting its upstreams down properly, never orphaning a child).
    """
    stop = anyio.Event()
    signalled: list[int] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    if not signalled:
                        print(f"mcp-schema-gate: received signal {signum} ({signal.Signals(signum).name}); "
                              "answering calls in flight, closing every session and stopping the upstream",
                              file=sys.stderr, flush=True)
                    signalled.append(signum)
                    stop.set()

        tg.start_soon(watch)
        status = await main(stop)
        tg.cancel_scope.cancel()
    return 128 + signalled[0] if signalled else status
