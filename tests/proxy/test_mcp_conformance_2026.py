"""The conformance suite's scenarios for protocol revision 2026-07-28, directly and through the gate.

@modelcontextprotocol/conformance 0.2.0-alpha.12 (installed beside the 0.1.x pin by
tests/support/node.py) runs `server --requirements 2026-07-28`: the 37 server scenarios that
revision requires (sessionless Streamable HTTP: server/discover and per-request `_meta`, caching
hints, the `input-required-result-*` multi round-trip family, ...), plus the extension and pending
scenarios it runs without scoring. They run against our own reference server,
tests/support/conformance_server_2026.py (written for this project from what the scenarios check):

- direct: its Streamable HTTP transport at http://127.0.0.1:PORT/mcp;
- http-upstream: `proxy serve --listen http://127.0.0.1:0 --upstream http://127.0.0.1:PORT/mcp`;
- stdio-upstream: `proxy serve --listen http://127.0.0.1:0 -- python tests/support/conformance_server_2026.py --stdio`.

Every copy of the server gets the same request-state key ($CONFORMANCE_REQUEST_STATE_KEY), so a
`requestState` minted by one stdio child verifies in another, whichever the gate routes a retry to.

Directly, every scenario named in PASS_DIRECT must pass (no FAILURE or WARNING, at least one
SUCCESS), so the comparison cannot pass vacuously. The tasks extension's scenarios fail directly
(the reference server does not implement that extension) and are only printed. A gated mode fails
on every scenario that passes directly and not through the gate: a check that is SUCCESS directly
and anything else (or absent) through the gate, or a FAILURE or WARNING through the gate, unless
the check is named in EXEMPT with the reason. The table of every check of the three runs and the
tail of the gate's stderr are printed either way.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.proxy.test_mcp_conformance import Checks, read_checks, render_table, why
from tests.support.node import NodeTools, node_tools, require_conformance_next
from tests.support.processes import LISTENING, no_process_mentions, started

REVISION = "2026-07-28"
SUITE_TIMEOUT = 300
SERVER = Path(__file__).resolve().parents[1] / "support" / "conformance_server_2026.py"
SERVER_LISTENING = re.compile(r"^PORT (\d+)$", re.M)
# The server scenarios 0.2.0-alpha.12 requires for 2026-07-28 (`conformance list --requirements 2026-07-28`).
REQUIRED = [
    "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
    "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
    "tools-call-with-progress", "server-sse-multiple-streams", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found", "prompts-list",
    "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
    "dns-rebinding-protection", "caching",
    *(f"input-required-result-{name}" for name in (
        "basic-elicitation", "basic-sampling", "basic-list-roots", "request-state", "multiple-input-requests",
        "multi-round", "missing-input-response", "non-tool-request", "result-type", "unsupported-methods",
        "tampered-state", "capability-check", "ignore-extra-params", "validate-input")),
]
# Pending scenarios the runner adds unscored, which the reference server passes too.
PENDING = ["json-schema-2020-12", "http-header-validation", "http-custom-header-server-validation"]
PASS_DIRECT = REQUIRED + PENDING
# (scenario, check id) -> why that check may differ through the gate although the scenario passes directly.
EXEMPT: dict[tuple[str, str], str] = {}

_GATED: dict[str, Checks] = {}  # label -> checks, for the table of all three runs
STATE_KEY = secrets.token_hex(32)


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


@pytest.fixture(scope="module")
def runner(tools: NodeTools) -> list[str]:
    return require_conformance_next(tools)


def env(tools: NodeTools) -> dict[str, str]:
    return tools.env(CONFORMANCE_REQUEST_STATE_KEY=STATE_KEY)


def run_suite(tools: NodeTools, runner: list[str], url: str, out: Path) -> Checks:
    """Every scenario 2026-07-28 requires (and the unscored ones) against `url`: {(scenario, check id): check}."""
    out.mkdir(parents=True)
    done = subprocess.run([*runner, "server", "--url", url, "--requirements", REVISION, "--output-dir", str(out)],
                          env=env(tools), cwd=out, capture_output=True, text=True, timeout=SUITE_TIMEOUT)
    assert done.returncode in (0, 1), f"the conformance runner exited {done.returncode}:\n{done.stderr[-3000:]}"
    checks = read_checks(out)
    ran = {scenario for scenario, _ in checks}
    assert set(REQUIRED) <= ran, f"scenarios that did not run: {sorted(set(REQUIRED) - ran)}\n{done.stdout[-3000:]}"
    return checks


def scenarios(checks: Checks) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for (scenario, _), check in checks.items():
        found.setdefault(scenario, []).append(check["status"])
    return found


def passing(checks: Checks) -> set[str]:
    """Scenarios with at least one SUCCESS and no FAILURE or WARNING."""
    return {scenario for scenario, statuses in scenarios(checks).items()
            if "SUCCESS" in statuses and not {"FAILURE", "WARNING"} & set(statuses)}


def summary(checks: Checks) -> str:
    statuses = [c["status"] for c in checks.values()]
    counts = " ".join(f"{s} {statuses.count(s)}" for s in ("SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO")
                      if s in statuses)
    ok = passing(checks)
    return f"{counts}; scenarios passing: {len(ok & set(REQUIRED))}/{len(REQUIRED)} required, " \
           f"{len(ok & set(PENDING))}/{len(PENDING)} pending"


def regression(key: tuple[str, str], direct: Checks, gated: Checks) -> bool:
    """A check of a scenario that passes directly which is lost or fails through the gate (and is not exempt)."""
    if key[0] not in passing(direct) or key in EXEMPT:
        return False
    before = direct[key]["status"] if key in direct else "-"
    after = gated[key]["status"] if key in gated else "-"
    return (before == "SUCCESS" and after != "SUCCESS") or after in ("FAILURE", "WARNING")


def table(direct: Checks) -> str:
    labels = sorted(_GATED)

    def marks(key: tuple[str, str]) -> list[str]:
        found = [f"REGRESSION({label})" for label in labels if regression(key, direct, _GATED[label])]
        return found + [f"exempt({label})" for label in labels if key in EXEMPT
                        and _GATED[label].get(key, {}).get("status") != direct.get(key, {}).get("status")]

    return render_table(f"conformance {REVISION} checks against {SERVER.name}",
                        {"direct": direct, **{label: _GATED[label] for label in labels}}, summary, marks,
                        (46, 56), 200)


def compare(direct: Checks, gated: Checks, label: str, gate_stderr: str) -> list[str]:
    """Print the table (with every gated run so far) and the gate's stderr; the regressions of `gated`."""
    _GATED[label] = gated
    print(table(direct))
    for key, reason in EXEMPT.items():
        print(f"exempt: {key[0]} / {key[1]}: {reason}")
    print(f"--- gate stderr ({label}), last 60 lines:\n" + "\n".join(gate_stderr.splitlines()[-60:]))
    lost = sorted(passing(direct) - passing(gated))
    print(f"{label}: scenarios that pass directly and not through the gate ({len(lost)}): {', '.join(lost) or '-'}")
    # Shown, not counted: a scenario that fails directly says little about the gate, but a check it loses may.
    for key in sorted(direct):
        if key[0] not in passing(direct) and direct[key]["status"] == "SUCCESS" \
                and gated.get(key, {}).get("status") != "SUCCESS":
            print(f"{label}: not counted (the scenario fails directly): {key[0]} / {key[1]} SUCCESS directly, "
                  f"{gated[key]['status'] if key in gated else 'absent'} through the gate: {why(gated.get(key))[:200]}")
    return [f"{key[0]} / {key[1]}: direct {direct[key]['status'] if key in direct else '-'}, through the gate "
            f"{gated[key]['status'] if key in gated else '-'}: {why(gated.get(key))[:300]}"
            for key in sorted(set(direct) | set(gated)) if regression(key, direct, gated)]


def server_command(*, stdio: bool = False) -> list[str]:
    return [sys.executable, str(SERVER), *(["--stdio"] if stdio else [])]


@contextmanager
def reference_http(tools: NodeTools, marker: Path):
    """The reference server over Streamable HTTP; yields its URL. `marker` goes on its command line (it ignores it)."""
    with started([*server_command(), str(marker)], env(tools), SERVER_LISTENING, stream="stdout") as (match, _):
        yield f"http://127.0.0.1:{match.group(1)}/mcp"


def gate_command(*upstream: str) -> list[str]:
    return [sys.executable, "-m", "proxy", "serve", "--listen", "http://127.0.0.1:0", *upstream]


@pytest.fixture(scope="module")
def direct(tools: NodeTools, runner: list[str], tmp_path_factory) -> Checks:
    tmp = tmp_path_factory.mktemp("conformance-2026-direct")
    with reference_http(tools, tmp) as url:
        checks = run_suite(tools, runner, url, tmp / "results")
    assert not no_process_mentions(str(tmp))
    return checks


def test_conformance_2026_direct(direct: Checks) -> None:
    """The reference server passes every scenario in PASS_DIRECT: the comparison through the gate is not vacuous."""
    print(table(direct))
    ok = passing(direct)
    missing = [f"{scenario}: " + "; ".join(f"{key[1]} {check['status']} {why(check)[:200]}"
                                           for key, check in sorted(direct.items())
                                           if key[0] == scenario and check["status"] in ("FAILURE", "WARNING"))
               for scenario in PASS_DIRECT if scenario not in ok]
    assert not missing, "scenarios expected to pass against the reference server directly:\n" + "\n".join(missing)


def test_conformance_2026_through_the_gate_http_upstream(tools, runner, direct, tmp_path) -> None:
    with reference_http(tools, tmp_path) as url:
        with started(gate_command("--upstream", url), env(tools), LISTENING) as (listening, gate):
            gated = run_suite(tools, runner, listening.group(1), tmp_path / "results")
        stderr = gate.err
    left = no_process_mentions(str(tmp_path))
    regressions = compare(direct, gated, "http-upstream", stderr)
    assert not left, f"processes outlived the test: {left}"
    assert not regressions, "checks of scenarios that pass directly, not through the gate:\n" + "\n".join(regressions)


def test_conformance_2026_through_the_gate_stdio_upstream(tools, runner, direct, tmp_path) -> None:
    gate = gate_command("--", *server_command(stdio=True), str(tmp_path))
    with started(gate, env(tools), LISTENING) as (listening, gate_proc):
        gated = run_suite(tools, runner, listening.group(1), tmp_path / "results")
    left = no_process_mentions(str(tmp_path))
    regressions = compare(direct, gated, "stdio-upstream", gate_proc.err)
    assert not left, f"processes outlived the test: {left}"
    assert not regressions, "checks of scenarios that pass directly, not through the gate:\n" + "\n".join(regressions)
