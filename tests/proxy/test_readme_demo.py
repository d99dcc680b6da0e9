"""The README's main-job demo, run verbatim: the proxy in front of the bundled demo server."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from tests.proxy.conftest import ROOT


def demo_command() -> str:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- proxy-demo:start -->\s*```\n(.*?)```\s*<!-- proxy-demo:end -->", readme, re.S)
    assert block, "the README lost its proxy demo block"
    return block.group(1)


def test_readme_demo_shows_an_accepted_and_a_rejected_call() -> None:
    command = demo_command()
    if not (ROOT / ".venv" / "bin" / "mcp-schema-gate").exists():
        pytest.skip("the console script is not installed (pip install -e .); the README command needs it")
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    replies = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert set(replies) == {1, 2, 3, 4}
    assert replies[2]["result"]["content"][0]["text"] == "added todo #1: buy milk"
    assert replies[3]["result"]["isError"] is True
    assert replies[3]["result"]["structuredContent"]["keyword"] == "additionalProperties"
    assert replies[4]["result"]["structuredContent"]["kind"] == "unsupported_capability"
    assert "convert_time: unsupported_capability: title at /title" in done.stderr
    assert "2 tools listed, 1 unsupported (dialect contract)" in done.stderr
