"""`mcp-schema-gate check --upstream URL` against the HTTP test server, over both HTTP transports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests.proxy.conftest import ROOT, environment
from tests.proxy_http.conftest import http_upstream, upstream_url


@pytest.mark.parametrize("kind", ["sse", "http"])
async def test_check_lists_an_http_upstream(record: Path, kind: str) -> None:
    async with http_upstream(record) as base:
        url = upstream_url(base, kind)
        with anyio.fail_after(30):
            done = await anyio.run_process([sys.executable, "-m", "proxy", "check", "--json", "--upstream", url],
                                           env=environment(record), cwd=str(ROOT), check=False)
    assert done.returncode == 1, done.stderr.decode()  # `titled` carries `title`, outside the contract
    doc = json.loads(done.stdout)
    assert doc["source"] == url
    rows = {row["name"]: row for row in doc["tools"]}
    assert rows["echo"]["supported"] and not rows["titled"]["supported"]
    assert rows["titled"]["error"]["keyword"] == "title"
