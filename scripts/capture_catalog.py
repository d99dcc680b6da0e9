#!/usr/bin/env python3
"""Capture the ``tools/list`` catalog of a real MCP server into ``fixtures/catalogs/<server>.json``.

The fixture holds only what the compatibility tests need::

    {"server": str, "package": str, "version": str, "registry": "npm" | "pypi",
     "protocolVersion": str,             # negotiated with the server
     "tools": [{"name": str, "inputSchema": {...}, "outputSchema": {...}}, ...]}

``outputSchema`` is written only for a tool that declares one (exactly as the
server sent it). No credentials, no call arguments, no descriptions: nothing
else is written.

Usage::

    python scripts/capture_catalog.py --all                 # re-create every fixture in the manifest
    python scripts/capture_catalog.py server-memory mcp-server-time
    python scripts/capture_catalog.py --list                # show the manifest
    python scripts/capture_catalog.py --install-only --all  # install, do not capture
    python scripts/capture_catalog.py --server NAME --package P --version V --registry npm -- CMD ARGS...
    python scripts/capture_catalog.py --server NAME --package P --version V --registry pypi --url http://127.0.0.1:PORT/mcp

The manifest is ``scripts/catalog_servers.json``. npm packages install into
``.cache/npm/<package>@<version>/`` and every PyPI server gets its own venv under
``.cache/pypi/<package>@<version>/`` (servers pin conflicting dependencies; the
project venv is never touched). Installation needs the registries; capture
itself only talks to the local child process. Logs go to stderr.

Reusable from tests (for example the proxy's end-to-end tests)::

    from scripts import capture_catalog as cc             # from the repository root
    with cc.launched("server-memory") as launch:          # installs on demand
        params = launch.stdio_parameters()                # mcp.client.stdio.StdioServerParameters
        ... launch.command, launch.args, launch.env ...  # or use the pieces directly

``cc.is_installed(name)`` tells whether a server is ready without installing it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MANIFEST = Path(__file__).resolve().parent / "catalog_servers.json"
CATALOG_DIR = REPO / "fixtures" / "catalogs"
CACHE_DIR = REPO / ".cache"

# Never let an install step fetch a browser or any other prebuilt binary.
_NO_DOWNLOAD_ENV = {
    "PUPPETEER_SKIP_DOWNLOAD": "1",
    "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
}

log = logging.getLogger("capture_catalog")

MAX_PAGES = 1000


# --------------------------------------------------------------------------- manifest


def load_manifest(path: Path = MANIFEST) -> list[dict[str, Any]]:
    """All server entries of the manifest, in manifest order."""
    with path.open(encoding="utf-8") as fh:
        data = json.load(fh)
    servers = data["servers"]
    names = [s["name"] for s in servers]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"duplicate server names in {path}: {sorted(dupes)}")
    for s in servers:
        if s["registry"] not in ("npm", "pypi"):
            raise ValueError(f"{s['name']}: registry must be npm or pypi")
        if s["registry"] == "pypi" and "bin" not in s:
            raise ValueError(f"{s['name']}: a pypi entry needs 'bin' (its console script)")
    return servers


def server_names() -> list[str]:
    return [s["name"] for s in load_manifest()]


def server_entry(name: str) -> dict[str, Any]:
    for s in load_manifest():
        if s["name"] == name:
            return s
    raise KeyError(f"no server named {name!r} in {MANIFEST.name}; known: {', '.join(server_names())}")


def _slug(entry: Mapping[str, Any]) -> str:
    return re.sub(r"[^A-Za-z0-9._@+-]", "_", entry["package"].lstrip("@").replace("/", "__")) + "@" + entry["version"]


def install_dir(entry: Mapping[str, Any]) -> Path:
    return CACHE_DIR / entry["registry"] / _slug(entry)


def _marker(entry: Mapping[str, Any]) -> Path:
    return install_dir(entry) / ".installed"


def is_installed(name_or_entry: str | Mapping[str, Any]) -> bool:
    entry = server_entry(name_or_entry) if isinstance(name_or_entry, str) else name_or_entry
    marker = _marker(entry)
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == _install_id(entry)


def _install_id(entry: Mapping[str, Any]) -> str:
    return " ".join([f"{entry['package']}@{entry['version']}", *entry.get("extra_pip", [])])


# --------------------------------------------------------------------------- install


def _run(cmd: list[str], *, env: Mapping[str, str] | None = None, timeout: float = 900) -> None:
    log.info("$ %s", " ".join(cmd))
    full_env = {**os.environ, **_NO_DOWNLOAD_ENV, **(env or {})}
    proc = subprocess.run(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:])
        raise RuntimeError(f"command failed with exit {proc.returncode}: {' '.join(cmd)}")


def ensure_installed(name_or_entry: str | Mapping[str, Any]) -> Path:
    """Install the server's pinned package if needed; return its install directory."""
    entry = server_entry(name_or_entry) if isinstance(name_or_entry, str) else name_or_entry
    target = install_dir(entry)
    if is_installed(entry):
        return target
    spec = f"{entry['package']}@{entry['version']}"
    log.info("installing %s (%s) into %s", spec, entry["registry"], target)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    install_env = dict(entry.get("install_env", {}))
    if entry["registry"] == "npm":
        (target / "package.json").write_text('{"name": "capture-sandbox", "private": true}\n', encoding="utf-8")
        _run(["npm", "install", "--prefix", str(target), "--no-audit", "--no-fund", "--save-exact", spec], env=install_env)
    else:
        _run([sys.executable, "-m", "venv", str(target)])
        pip = str(target / "bin" / "python")
        _run([pip, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], env=install_env)
        _run([pip, "-m", "pip", "install", "--quiet", f"{entry['package']}=={entry['version']}", *entry.get("extra_pip", [])], env=install_env)
    _marker(entry).write_text(_install_id(entry) + "\n", encoding="utf-8")
    return target


def _npm_bin(entry: Mapping[str, Any], root: Path) -> Path:
    pkg_dir = root / "node_modules" / entry["package"]
    meta = json.loads((pkg_dir / "package.json").read_text(encoding="utf-8"))
    bins = meta.get("bin")
    if isinstance(bins, str):
        rel = bins
    elif isinstance(bins, dict) and bins:
        wanted = entry.get("bin")
        if wanted is None:
            if len(bins) != 1:
                raise ValueError(f"{entry['name']}: package has several bins {sorted(bins)}; set 'bin' in the manifest")
            wanted = next(iter(bins))
        rel = bins[wanted]
    else:
        raise ValueError(f"{entry['name']}: package.json of {entry['package']} declares no bin")
    return (pkg_dir / rel).resolve()


# --------------------------------------------------------------------------- launch


@dataclass
class Launch:
    """How to start one manifest server as a stdio child process."""

    name: str
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    entry: dict[str, Any] = field(repr=False)

    def stdio_parameters(self) -> Any:
        from mcp.client.stdio import StdioServerParameters

        return StdioServerParameters(command=self.command, args=self.args, env=self.env, cwd=self.cwd)

    def argv(self) -> list[str]:
        return [self.command, *self.args]


def _expand(value: str, placeholders: Mapping[str, str]) -> str:
    for key, repl in placeholders.items():
        value = value.replace("{" + key + "}", repl)
    return value


def _make_git_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git_env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "capture",
        "GIT_AUTHOR_EMAIL": "capture@localhost",
        "GIT_COMMITTER_NAME": "capture",
        "GIT_COMMITTER_EMAIL": "capture@localhost",
    }
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=git_env)
    (path / "README").write_text("offline capture repository\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(path), "add", "README"], check=True, env=git_env)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", "init"], check=True, env=git_env)


def launch_spec(name: str, workdir: Path, *, install: bool = True) -> Launch:
    """The command, args, env and cwd that start server ``name`` with ``workdir`` as its scratch space.

    ``workdir`` must exist and belongs to the caller (delete it afterwards).
    With ``install=False`` a missing install raises ``FileNotFoundError``.
    """
    entry = server_entry(name)
    if install:
        root = ensure_installed(entry)
    else:
        root = install_dir(entry)
        if not is_installed(entry):
            raise FileNotFoundError(f"{name}: {entry['package']}@{entry['version']} is not installed under {root}")
    placeholders = {"workdir": str(workdir)}
    raw_args = list(entry.get("args", []))
    raw_env = dict(entry.get("env", {}))
    if any("{git_repo}" in a for a in raw_args) or any("{git_repo}" in v for v in raw_env.values()):
        repo = workdir / "repo"
        if not (repo / ".git").exists():
            _make_git_repo(repo)
        placeholders["git_repo"] = str(repo)
    args = [_expand(a, placeholders) for a in raw_args]
    env = {k: _expand(v, placeholders) for k, v in raw_env.items()}
    # Keep node on PATH (the SDK's default environment passes PATH through) and
    # keep tool caches inside the scratch dir.
    env.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
    env.setdefault("XDG_CACHE_HOME", str(workdir / ".xdg-cache"))
    env.setdefault("NO_UPDATE_NOTIFIER", "1")
    if entry["registry"] == "npm":
        command = shutil.which("node") or "node"
        args = [str(_npm_bin(entry, root)), *args]
    else:
        command = str(root / "bin" / entry["bin"])
        # Some servers build schema defaults from a set (mcp-atlassian): fix the
        # string hash seed so a re-capture is byte-identical.
        env.setdefault("PYTHONHASHSEED", "0")
    return Launch(name=name, command=command, args=args, env=env, cwd=str(workdir), entry=dict(entry))


@contextlib.contextmanager
def launched(name: str, *, install: bool = True) -> Iterator[Launch]:
    """A ``Launch`` for ``name`` with a fresh scratch directory that is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=f"mcp-{name}-") as tmp:
        yield launch_spec(name, Path(tmp), install=install)


# --------------------------------------------------------------------------- capture


async def _send_raw_list(session: Any, cursor: str | None, timeout: float) -> dict[str, Any]:
    """One ``tools/list`` request whose result is returned as the raw JSON object.

    ``ClientSession.send_request`` validates results against the SDK's models, which
    rejects real catalogs (e.g. an ``inputSchema`` without a root ``type``) -- exactly
    the schemas this capture must record. So the request is stamped like the SDK
    does (protocol-version headers/_meta for the negotiated era) and sent through
    the session's dispatcher without result validation. Private SDK attributes are
    used here on purpose; the fallback keeps working on an SDK without them.
    """
    import mcp_types as types
    from pydantic import TypeAdapter

    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    request = types.ListToolsRequest(params=params)
    stamp = getattr(session, "_stamp", None)
    dispatcher = getattr(session, "_dispatcher", None)
    if stamp is None or dispatcher is None:  # pragma: no cover - other SDK layouts
        return await session.send_request(request, TypeAdapter(dict[str, Any]))
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {"timeout": timeout}
    stamp(data, opts)
    return await dispatcher.send_raw_request(data["method"], data.get("params"), opts)


async def list_tools_raw(server: Any, *, timeout: float = 120.0, mode: str = "auto") -> tuple[str, list[dict[str, Any]]]:
    """Connect to ``server`` (StdioServerParameters or URL), list every tool following nextCursor.

    Returns (negotiated protocol version, raw tool dicts exactly as the server sent them).
    The raw result is read instead of the SDK's ``list_tools`` so that nothing is
    filtered or normalised on the way.
    """
    import anyio
    from mcp import Client

    tools: list[dict[str, Any]] = []
    with anyio.fail_after(timeout):
        async with Client(server, mode=mode, read_timeout_seconds=timeout) as client:
            protocol = client.protocol_version
            cursor: str | None = None
            seen: set[str] = set()
            for page in range(MAX_PAGES):
                result = await _send_raw_list(client.session, cursor, timeout)
                page_tools = result.get("tools", [])
                log.info("page %d: %d tools", page + 1, len(page_tools))
                tools.extend(page_tools)
                cursor = result.get("nextCursor")
                if cursor is None:
                    break
                if cursor in seen:
                    raise RuntimeError(f"server repeated cursor {cursor!r}")
                seen.add(cursor)
            else:
                raise RuntimeError(f"more than {MAX_PAGES} pages of tools")
    return protocol, tools


def catalog_document(entry: Mapping[str, Any], protocol: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    names = [t["name"] for t in tools]
    if len(set(names)) != len(names):
        raise RuntimeError(f"{entry['name']}: duplicate tool names in listing")
    return {
        "server": entry["name"],
        "package": entry["package"],
        "version": entry["version"],
        "registry": entry["registry"],
        "protocolVersion": protocol,
        "tools": [_tool_record(t) for t in tools],
    }


def _tool_record(tool: Mapping[str, Any]) -> dict[str, Any]:
    """What a fixture keeps of one listed tool: its name, inputSchema and (if declared) outputSchema."""
    record = {"name": tool["name"], "inputSchema": tool["inputSchema"]}
    if "outputSchema" in tool:
        record["outputSchema"] = tool["outputSchema"]
    return record


def write_catalog(doc: Mapping[str, Any], out_dir: Path = CATALOG_DIR) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{doc['server']}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


async def capture_server(name: str, *, timeout: float = 120.0, mode: str = "auto") -> dict[str, Any]:
    entry = server_entry(name)
    ensure_installed(entry)
    with launched(name) as launch:
        log.info("starting %s: %s", name, " ".join(launch.argv()))
        try:
            protocol, tools = await list_tools_raw(launch.stdio_parameters(), timeout=timeout, mode=mode)
        except Exception:
            if mode != "auto":
                raise
            log.warning("%s: auto negotiation failed; retrying with the legacy initialize handshake", name, exc_info=True)
            protocol, tools = await list_tools_raw(launch.stdio_parameters(), timeout=timeout, mode="legacy")
    return catalog_document(entry, protocol, tools)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="manifest server names to capture")
    parser.add_argument("--all", action="store_true", help="capture every server in the manifest")
    parser.add_argument("--list", action="store_true", help="print the manifest and exit")
    parser.add_argument("--install-only", action="store_true", help="install, do not capture")
    parser.add_argument("--out", type=Path, default=CATALOG_DIR, help="output directory (default fixtures/catalogs)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--mode", default="auto", help="Client mode: auto (default) or legacy")
    parser.add_argument("--keep-going", action="store_true", help="with several servers, continue after a failure")
    adhoc = parser.add_argument_group("ad-hoc server (not in the manifest)")
    adhoc.add_argument("--server", help="fixture name")
    adhoc.add_argument("--package")
    adhoc.add_argument("--version")
    adhoc.add_argument("--registry", choices=["npm", "pypi"])
    adhoc.add_argument("--url", help="Streamable HTTP URL of a running server")
    parser.epilog = "An ad-hoc stdio server follows a literal --: ... -- COMMAND ARGS..."
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, cmd = argv[:split], argv[split + 1 :]
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    import anyio

    if args.list:
        for s in load_manifest():
            state = "installed" if is_installed(s) else "not installed"
            print(f"{s['name']:32} {s['registry']:5} {s['package']}@{s['version']}  ({state})")
        return 0

    if args.url and cmd:
        parser.error("give either --url or -- COMMAND, not both")
    if args.url or cmd:
        missing = [o for o in ("server", "package", "version", "registry") if getattr(args, o) is None]
        if missing:
            parser.error("an ad-hoc capture needs " + ", ".join("--" + m for m in missing))
        entry = {"name": args.server, "package": args.package, "version": args.version, "registry": args.registry}
        if args.url:
            target: Any = args.url
        else:
            from mcp.client.stdio import StdioServerParameters

            target = StdioServerParameters(command=cmd[0], args=cmd[1:])
        protocol, tools = anyio.run(lambda: list_tools_raw(target, timeout=args.timeout, mode=args.mode))
        path = write_catalog(catalog_document(entry, protocol, tools), args.out)
        log.info("wrote %s (%d tools, protocol %s)", path, len(tools), protocol)
        return 0

    names = server_names() if args.all else args.names
    if not names:
        parser.error("name servers, or use --all / --list / --url / -- COMMAND")
    failures: list[str] = []
    for name in names:
        started = time.monotonic()
        try:
            if args.install_only:
                ensure_installed(name)
                continue
            doc = anyio.run(lambda: capture_server(name, timeout=args.timeout, mode=args.mode))
            path = write_catalog(doc, args.out)
            log.info(
                "%s: wrote %s (%d tools, protocol %s, %.1fs)",
                name, path.relative_to(REPO) if path.is_relative_to(REPO) else path,
                len(doc["tools"]), doc["protocolVersion"], time.monotonic() - started,
            )
        except Exception as exc:  # noqa: BLE001 - report and go on with --keep-going
            log.error("%s: FAILED: %s", name, exc, exc_info=not args.keep_going)
            failures.append(name)
            if not args.keep_going:
                break
    if failures:
        log.error("failed: %s", ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
