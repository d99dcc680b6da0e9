"""A lone argument member that folds like a declared property (`Path` for `path`) is refused, since Go-style servers read it as that property."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.core.catalog import Catalog
from proxy.core.gate import Gate
from tests.proxy.conftest import raw_proxy

SCHEMA = {"type": "object", "properties": {
    "path": {"type": "string", "pattern": "^/safe/"},
    "filePath": {"type": "string", "pattern": "^/safe/"},  # a declared name that is not its own folding
    "opts": {"type": "object", "properties": {"mode": {"enum": ["r"]}}},
    "list": {"type": "array", "items": {"anyOf": [{"type": "object", "properties": {"kind": {"type": "string"}}}]}},
    "ref": {"$ref": "#/$defs/inner"},
}, "$defs": {"inner": {"type": "object", "properties": {"depth": {"type": "integer"}}}}}


def check(arguments: dict) -> str | None:
    catalog = Catalog("extended")
    catalog.replace([{"name": "t", "inputSchema": SCHEMA}])
    rejection = Gate().check({"name": "t", "arguments": arguments}, catalog.tools)
    return None if rejection is None else rejection.error.instance_path


@pytest.mark.parametrize(("arguments", "where"), [
    ({"Path": "/etc/passwd"}, "/Path"),
    ({"filepath": "/etc/passwd"}, "/filepath"),
    ({"pat\u0000h": "/etc/passwd"}, "/pat\u0000h"),
    ({"opts": {"MODE": "w"}}, "/opts/MODE"),
    ({"list": [{"kind": "a"}, {"\u212aind": "b"}]}, "/list/1/\u212aind"),
    ({"ref": {"DEPTH": "deep"}}, "/ref/DEPTH"),
])
def test_a_case_or_nul_variant_of_a_declared_property_is_refused(arguments: dict, where: str) -> None:
    assert check(arguments) == where


@pytest.mark.parametrize("arguments", [{"path": "/safe/x"}, {"filePath": "/safe/x"}, {"other": 1}, {"opts": {"mode": "r", "x": 1}}, {}])
def test_declared_and_unrelated_members_pass(arguments: dict) -> None:
    assert check(arguments) is None


async def test_a_shadowing_member_never_reaches_the_upstream(record: Path, tmp_path: Path) -> None:
    import base64
    import json
    import sys

    recorded = tmp_path / "lines.jsonl"
    upstream = [sys.executable, str(Path(__file__).with_name("recording_upstream.py"))]
    async with raw_proxy(record, upstream=upstream, RECORDING_UPSTREAM_FILE=str(recorded)) as session:
        await session.initialize()
        reply = await session.request(1, "tools/call", {"name": "note", "arguments": {"TEXT": "far too long a note"}})
        detail = reply["result"]["structuredContent"]
        assert (detail["kind"], detail["instancePath"], detail["keyword"]) == ("validation", "/TEXT", "properties")
        reply = await session.request(2, "tools/call", {"name": "note", "arguments": {"text": "ok"}})
        assert "result" in reply
    lines = [base64.b64decode(json.loads(row)["b64"]) for row in recorded.read_text().splitlines()]
    assert not [line for line in lines if b"TEXT" in line]
    assert [line for line in lines if b'"tools/call"' in line and b'"ok"' in line]
