"""Background processes for tests that drive outside programs synchronously (node clients, the conformance runner).

    with started(command, env, LISTENING, stream="stderr") as (match, proc):
        url = match.group(1)

`started` reads the process's stdout and stderr in threads (kept in proc.out / proc.err),
waits for a pattern, and always stops the process: SIGTERM, then SIGKILL after a grace
period. `no_process_mentions(marker)` checks for orphans: no live process whose command line
contains `marker` (a unique temporary path or port given to everything the test started).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from tests.support.node import ROOT

LISTENING = re.compile(r"listening on (http://\S+/mcp)")


class Proc:
    def __init__(self, popen: subprocess.Popen) -> None:
        self.popen = popen
        self.out = ""
        self.err = ""
        self._threads = [
            threading.Thread(target=self._read, args=(popen.stdout, "out"), daemon=True),
            threading.Thread(target=self._read, args=(popen.stderr, "err"), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, stream, attr: str) -> None:
        for line in iter(stream.readline, ""):
            setattr(self, attr, getattr(self, attr) + line)
        stream.close()

    def wait_for(self, pattern: re.Pattern, stream: str, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = pattern.search(self.out if stream == "stdout" else self.err)
            if match:
                return match
            if self.popen.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(
            f"{pattern.pattern!r} not seen on {stream} of {self.popen.args[:4]} (exit {self.popen.poll()}):\n"
            f"--- stdout\n{self.out[-3000:]}\n--- stderr\n{self.err[-3000:]}"
        )

    def stop(self, grace: float = 10.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        for thread in self._threads:
            thread.join(5)


@contextmanager
def started(command: list[str], env: dict[str, str], pattern: re.Pattern, stream: str = "stderr",
            timeout: float = 30.0, cwd: Path = ROOT):
    popen = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, errors="replace")
    proc = Proc(popen)
    try:
        yield proc.wait_for(pattern, stream, timeout), proc
    finally:
        proc.stop()


def _mentioning(marker: str) -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != "Z":
            found.append((int(entry.name), cmdline.strip()))
    return found


def no_process_mentions(marker: str, timeout: float = 10.0) -> list[str]:
    """Wait until no live process has `marker` in its command line; kill and return the ones that stayed."""
    deadline = time.monotonic() + timeout
    while (left := _mentioning(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return [f"{pid}: {cmdline}" for pid, cmdline in left]
