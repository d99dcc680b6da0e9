"""The capture manifest and the reusable launcher of scripts/capture_catalog.py.

Nothing here touches a registry. The live re-capture runs only for servers that
are already installed under .cache/ (``python scripts/capture_catalog.py
--install-only NAME``); otherwise it is skipped with that reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.catalogs.catalog_support import CATALOG_DIR, load_script

capture = load_script("capture_catalog")
MANIFEST = capture.load_manifest()

# Environment keys that look like secrets must hold obvious dummies.
SECRET_KEY = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL", re.I)


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["name"] for e in MANIFEST])
def test_manifest_entry_is_pinned_and_offline(entry):
    assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", entry["name"]), entry["name"]
    assert entry["registry"] in ("npm", "pypi")
    assert re.fullmatch(r"\d+(\.\d+)*([.-][0-9A-Za-z.-]+)?", entry["version"]), "an exact version, not a range"
    for key, value in entry.get("env", {}).items():
        if SECRET_KEY.search(key):
            assert "dummy" in value.lower() or set(value) <= set("T0"), f"{key} must be an obvious dummy"
    for arg in entry.get("args", []):
        # Only loopback addresses may appear (a server that dials out at startup must fail fast, locally).
        for host in re.findall(r"://(?:[^@/]*@)?([^:/]+)", arg):
            assert host in ("127.0.0.1", "localhost"), arg
    install = capture.install_dir(entry)
    assert install.is_relative_to(capture.CACHE_DIR)


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["name"] for e in MANIFEST])
def test_launch_spec_without_install(entry, tmp_path: Path):
    if not capture.is_installed(entry):
        with pytest.raises(FileNotFoundError):
            capture.launch_spec(entry["name"], tmp_path, install=False)
        return
    launch = capture.launch_spec(entry["name"], tmp_path, install=False)
    assert Path(launch.command).exists()
    assert launch.cwd == str(tmp_path)
    assert not any("{" in a and "}" in a for a in launch.args), "unexpanded placeholder"
    params = launch.stdio_parameters()
    assert params.command == launch.command and params.args == launch.args


LIVE = ["server-memory", "mcp-server-time"]


@pytest.mark.parametrize("name", LIVE)
def test_live_recapture_matches_fixture(name: str, tmp_path: Path):
    if not capture.is_installed(name):
        try:  # installs into .cache/ once, from the registry the manifest pins
            capture.launch_spec(name, tmp_path, install=True)
        except (RuntimeError, OSError) as exc:
            reason = f"{name} could not be installed (registry unreachable?): {exc}"
            print(f"\nSKIPPED live re-capture: {reason}")
            pytest.skip(reason)
    doc = anyio.run(lambda: capture.capture_server(name, timeout=60))
    fixture = capture.json.loads((CATALOG_DIR / f"{name}.json").read_text(encoding="utf-8"))
    assert doc == fixture


UPSTREAM = Path(__file__).resolve().parents[1] / "proxy" / "upstream_server.py"


def _list(page_size: int) -> tuple[str, list[dict]]:
    import sys

    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=[str(UPSTREAM)], env={"UPSTREAM_PAGE_SIZE": str(page_size)}
    )
    return anyio.run(lambda: capture.list_tools_raw(params, timeout=60))


def test_capture_follows_next_cursor(caplog: pytest.LogCaptureFixture):
    """The capture lists every page: a paginating server yields the same raw tools as one page."""
    if not UPSTREAM.exists():
        pytest.skip(f"{UPSTREAM} (the proxy tests' upstream server) is not in this tree")
    protocol_one, one_page = _list(0)
    caplog.clear()
    with caplog.at_level("INFO", logger="capture_catalog"):
        protocol_paged, paged = _list(2)
    pages = [r for r in caplog.records if r.name == "capture_catalog" and r.getMessage().startswith("page ")]
    assert len(pages) == (len(one_page) + 1) // 2
    assert len(one_page) > 2, "the upstream server must have more tools than one page"
    assert paged == one_page
    assert protocol_one == protocol_paged and protocol_one
