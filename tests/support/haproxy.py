"""HAProxy for the scale-out tests: the one on PATH, else Debian's package installed on first use.

    from tests.support.haproxy import haproxy_binary
    binary = haproxy_binary()     # skips (fails under REQUIRE_HAPROXY=1) when haproxy cannot be had

Installing runs `apt-get install -y haproxy` (and `apt-get update` once if apt
knows no candidate), which needs root; an exclusive lock
(`.cache/haproxy.lock`, fcntl) keeps concurrent pytest workers from running
apt at the same time. The outcome is remembered for the rest of the run, so a
machine without apt or without a network is asked once, not once per test.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / ".cache" / "haproxy.lock"
INSTALL_TIMEOUT = 600

_RESULT: str | Path | None = None  # the binary, or why there is none


def _run(command: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env)


def _has_candidate() -> bool:
    policy = _run(["apt-cache", "policy", "haproxy"])
    return "Candidate:" in policy.stdout and "Candidate: (none)" not in policy.stdout


def _find() -> Path | None:
    # Debian puts it in /usr/sbin, which a non-root PATH often lacks.
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    return Path(found) if found else None


def _install() -> Path | str:
    if found := _find():
        return found
    if shutil.which("apt-get") is None:
        return "haproxy is not on PATH and there is no apt-get to install it"
    if os.geteuid() != 0:
        return "haproxy is not on PATH and installing it with apt-get needs root"
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be installing it right now
        if found := _find():
            return found
        print("installing haproxy with apt-get (once)", file=sys.stderr)
        try:
            if not _has_candidate():
                _run(["apt-get", "update"])
            done = _run(["apt-get", "install", "-y", "--no-install-recommends", "haproxy"])
        except (OSError, subprocess.SubprocessError) as exc:
            return f"apt-get install haproxy failed: {exc}"
        if (found := _find()) is None:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return f"apt-get install haproxy failed (exit {done.returncode}): {' / '.join(tail)}"
        return found


def haproxy_binary() -> Path:
    """The haproxy executable; skips with the reason (fails under REQUIRE_HAPROXY=1) when it cannot be had."""
    global _RESULT
    if _RESULT is None:
        _RESULT = _install()
    if isinstance(_RESULT, Path):
        return _RESULT
    reason = f"haproxy unavailable: {_RESULT}"
    print(f"SKIPPED haproxy test: {reason}", file=sys.stderr)
    if os.environ.get("REQUIRE_HAPROXY") == "1":
        pytest.fail(reason + " and REQUIRE_HAPROXY=1")
    pytest.skip(reason)
