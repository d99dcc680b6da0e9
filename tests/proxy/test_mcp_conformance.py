"""The official MCP conformance suite's server scenarios, directly and through the gate.

@modelcontextprotocol/conformance 0.1.16 (installed with node 22 into .cache/node22/ by
tests/support/node.py) runs every server scenario of its "all" suite (the default "active"
suite leaves out the pending ones, among them server-sse-polling and json-schema-2020-12)
against our own reference server, tests/support/conformance_server.py (the Python `mcp` SDK's
lowlevel Server with exactly the tools, prompts and resources the scenarios call; written for
this project, not copied from the suite's example server):

- direct: its Streamable HTTP transport at http://127.0.0.1:PORT/mcp (it binds port 0 and prints
  `PORT <n>`);
- http-upstream: `proxy --listen http://127.0.0.1:0 --upstream http://127.0.0.1:PORT/mcp`;
- stdio-upstream: `proxy --listen http://127.0.0.1:0 -- python tests/support/conformance_server.py --stdio`
  (one server per session, compared with the same direct run).

The suite writes one checks.json per scenario; every check has a status (SUCCESS, FAILURE,
WARNING, INFO). The direct run must pass every check named in EXPECTED_DIRECT and fail none, so a
broken reference server cannot make the comparison vacuous (server-sse-polling's priming-event and
retry-field checks are WARNINGs directly: the scenario posts with protocol version 2025-03-26, and
the SDK primes and closes SSE streams only from 2025-11-25 on). A gated mode fails on every check
that is SUCCESS directly but FAILURE, WARNING, INFO ("not applicable") or absent through the gate,
and on every FAILURE through the gate that is not a FAILURE directly; the only exception is a
check named in INFO_THROUGH_THE_GATE (SUCCESS directly, INFO through the gate, for the reason
written there). The full table of checks (direct / http-upstream / stdio-upstream) is printed
either way.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.node import NodeTools, node_tools
from tests.support.processes import LISTENING, no_process_mentions, started

SUITE_TIMEOUT = 150
SERVER = Path(__file__).resolve().parents[1] / "support" / "conformance_server.py"
SERVER_LISTENING = re.compile(r"^PORT (\d+)$", re.M)
# Every check the suite reports as SUCCESS against our reference server directly, by scenario.
EXPECTED_DIRECT = {
    "server-initialize": ["server-initialize"],
    "ping": ["ping"],
    "logging-set-level": ["logging-set-level"],
    "completion-complete": ["completion-complete"],
    "tools-list": ["tools-list"],
    "tools-call-simple-text": ["tools-call-simple-text"],
    "tools-call-image": ["tools-call-image"],
    "tools-call-audio": ["tools-call-audio"],
    "tools-call-embedded-resource": ["tools-call-embedded-resource"],
    "tools-call-mixed-content": ["tools-call-mixed-content"],
    "tools-call-with-logging": ["tools-call-with-logging"],
    "tools-call-with-progress": ["tools-call-with-progress"],
    "tools-call-error": ["tools-call-error"],
    "tools-call-sampling": ["tools-call-sampling"],
    "tools-call-elicitation": ["tools-call-elicitation"],
    "json-schema-2020-12": ["json-schema-2020-12-tool-found", "json-schema-2020-12-$schema",
                            "json-schema-2020-12-$defs", "json-schema-2020-12-additionalProperties"],
    "elicitation-sep1034-defaults": [f"elicitation-sep1034-{kind}-default"
                                     for kind in ("string", "integer", "number", "enum", "boolean")],
    "elicitation-sep1330-enums": [f"elicitation-sep1330-{kind}" for kind in (
        "untitled-single", "titled-single", "legacy-enumnames", "untitled-multi", "titled-multi")],
    "server-sse-multiple-streams": ["server-accepts-multiple-post-streams", "server-sse-streams-functional"],
    "resources-list": ["resources-list"],
    "resources-read-text": ["resources-read-text"],
    "resources-read-binary": ["resources-read-binary"],
    "resources-templates-read": ["resources-templates-read"],
    "resources-subscribe": ["resources-subscribe"],
    "resources-unsubscribe": ["resources-unsubscribe"],
    "prompts-list": ["prompts-list"],
    "prompts-get-simple": ["prompts-get-simple"],
    "prompts-get-with-args": ["prompts-get-with-args"],
    "prompts-get-embedded-resource": ["prompts-get-embedded-resource"],
    "prompts-get-with-image": ["prompts-get-with-image"],
    "dns-rebinding-protection": ["localhost-host-rebinding-rejected", "localhost-host-valid-accepted"],
}
# Checks that may be SUCCESS directly and INFO through the gate, with the reason.
INFO_THROUGH_THE_GATE = {
    "server-sse-streams-functional": (
        "the gate answers a request POST with one JSON body unless the call sends messages before its reply "
        "or takes over a second; the MCP spec lets the server choose per POST, and the suite reports a server "
        "that answers every POST in JSON as INFO \"SSE streaming is optional\""
    ),
}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")

Checks = dict[tuple[str, str], dict]
_GATED: dict[str, Checks] = {}  # label -> checks, for the table of all three runs


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


def read_checks(out: Path) -> Checks:
    """{(scenario, check id): check} from the runner's checks.json files (an id repeated in a scenario gets #2, #3…)."""
    checks: Checks = {}
    for result in sorted(out.iterdir()):
        match = RESULT_DIR.match(result.name)
        if not match or not (result / "checks.json").exists():
            continue
        seen: dict[str, int] = {}
        for check in json.loads((result / "checks.json").read_text()):
            seen[check["id"]] = seen.get(check["id"], 0) + 1
            key = check["id"] if seen[check["id"]] == 1 else f"{check['id']}#{seen[check['id']]}"
            checks[(match["scenario"], key)] = check
    return checks


def run_suite(tools: NodeTools, url: str, out: Path) -> Checks:
    """Every server scenario against `url`; {(scenario, check id): check} from the suite's checks.json files."""
    out.mkdir(parents=True)
    done = subprocess.run([*tools.conformance, "server", "--url", url, "--suite", "all", "--output-dir", str(out)],
                          env=tools.env(), cwd=out, capture_output=True, text=True, timeout=SUITE_TIMEOUT)
    assert done.returncode in (0, 1), f"the conformance runner exited {done.returncode}:\n{done.stderr[-3000:]}"
    checks = read_checks(out)
    assert len({scenario for scenario, _ in checks}) >= 30, f"too few scenarios ran:\n{done.stdout[-3000:]}"
    return checks


def summary(checks: Checks) -> str:
    statuses = [c["status"] for c in checks.values()]
    return " ".join(f"{s} {statuses.count(s)}" for s in ("SUCCESS", "FAILURE", "WARNING", "INFO") if s in statuses)


def why(check: dict | None) -> str:
    if check is None:
        return "absent"
    if check.get("errorMessage"):
        return check["errorMessage"]
    details = check.get("details") or {}
    return str(details.get("message", "")) if isinstance(details, dict) else ""


def regression(before: dict | None, after: dict | None) -> bool:
    a = before["status"] if before else "-"
    b = after["status"] if after else "-"
    if a == "SUCCESS" and b == "INFO" and before["id"] in INFO_THROUGH_THE_GATE:
        return False
    return (a == "SUCCESS" and b != "SUCCESS") or (b == "FAILURE" and a != "FAILURE")


def render_table(title: str, runs: dict[str, Checks], summary: Callable[[Checks], str],
                 marks: Callable[[tuple[str, str]], list[str]], widths: tuple[int, int], note_width: int) -> str:
    """Every check of every run side by side (the direct run first): its marks, and why it is not SUCCESS."""
    scenario_width, check_width = widths
    rows = [f"{title}: " + " / ".join(runs)]
    rows += [f"  {label:15} {summary(checks)}" for label, checks in runs.items()]
    rows.append(f"  {'scenario':{scenario_width}} {'check':{check_width}} "
                f"{' / '.join(f'{label[:8]:8}' for label in runs)}")
    for key in sorted(set().union(*runs.values())):
        statuses = [checks[key]["status"] if key in checks else "-" for checks in runs.values()]
        if all(status in ("INFO", "-") for status in statuses):
            continue  # the suite's own notes (requests sent, responses seen), not checks
        notes = sorted({why(checks.get(key)) for checks in runs.values()
                        if key in checks and checks[key]["status"] != "SUCCESS"} - {""})
        note = f"  [{' | '.join(n[:note_width] for n in notes)}]" if notes else ""
        rows.append(f"  {key[0]:{scenario_width}} {key[1]:{check_width}} {' / '.join(f'{st:8}' for st in statuses)} "
                    f"{' '.join(marks(key))}{note}")
    return "\n".join(rows)


def table(direct: Checks) -> str:
    """Every check of the direct run and of the gated runs done so far, side by side."""
    labels = sorted(_GATED)

    def marks(key: tuple[str, str]) -> list[str]:
        found = []
        for label in labels:
            after = _GATED[label].get(key)
            if regression(direct.get(key), after):
                found.append(f"REGRESSION({label})")
            elif direct.get(key, {}).get("status") == "SUCCESS" and after and after["status"] == "INFO":
                found.append(f"exempt({label})")
        return found

    return render_table("conformance server checks against tests/support/conformance_server.py",
                        {"direct": direct, **{label: _GATED[label] for label in labels}}, summary, marks,
                        (32, 42), 160)


def compare(direct: Checks, gated: Checks, label: str) -> list[str]:
    """Print the table (with every gated run so far); the regressions of `gated` against `direct`."""
    _GATED[label] = gated
    print(table(direct))
    return [f"{key[0]} / {key[1]}: direct {direct[key]['status'] if key in direct else '-'}, through the gate "
            f"{gated[key]['status'] if key in gated else '-'}: {why(gated.get(key))}"
            for key in sorted(set(direct) | set(gated)) if regression(direct.get(key), gated.get(key))]


def server_command(*, stdio: bool = False) -> list[str]:
    return [sys.executable, str(SERVER), *(["--stdio"] if stdio else [])]


@contextmanager
def reference_http(tools: NodeTools, marker: Path):
    """Our reference server over Streamable HTTP; yields its URL. `marker` goes on its command line (it ignores it)."""
    with started([*server_command(), str(marker)], tools.env(), SERVER_LISTENING, stream="stdout") as (match, _):
        yield f"http://127.0.0.1:{match.group(1)}/mcp"


@pytest.fixture(scope="module")
def direct(tools: NodeTools, tmp_path_factory) -> Checks:
    tmp = tmp_path_factory.mktemp("conformance-direct")
    with reference_http(tools, tmp) as url:
        checks = run_suite(tools, url, tmp / "results")
    assert not no_process_mentions(str(tmp))
    return checks


def test_conformance_direct(direct) -> None:
    """The reference server passes every check named in EXPECTED_DIRECT and fails none."""
    print(table(direct))
    missing = [f"{scenario} / {check}: {direct[(scenario, check)]['status'] if (scenario, check) in direct else '-'}"
               f" {why(direct.get((scenario, check)))}"
               for scenario, checks in EXPECTED_DIRECT.items() for check in checks
               if direct.get((scenario, check), {}).get("status") != "SUCCESS"]
    failed = [f"{key[0]} / {key[1]}: {why(check)}" for key, check in sorted(direct.items())
              if check["status"] == "FAILURE"]
    assert not missing, "checks expected to pass against the reference server directly:\n" + "\n".join(missing)
    assert not failed, "checks that fail against the reference server directly:\n" + "\n".join(failed)


def test_conformance_through_the_gate_http_upstream(tools, direct, tmp_path) -> None:
    with reference_http(tools, tmp_path) as url:
        gate = [sys.executable, "-m", "proxy", "--listen", "http://127.0.0.1:0", "--upstream", url]
        with started(gate, tools.env(), LISTENING) as (listening, gate_proc):
            gated = run_suite(tools, listening.group(1), tmp_path / "results")
        assert gate_proc.popen.returncode is not None
    left = no_process_mentions(str(tmp_path))
    regressions = compare(direct, gated, "http-upstream")
    assert not left, f"processes outlived the test: {left}"
    assert not regressions, "checks that pass directly but not through the gate:\n" + "\n".join(regressions)


def test_conformance_through_the_gate_stdio_upstream(tools, direct, tmp_path) -> None:
    gate = [sys.executable, "-m", "proxy", "--listen", "http://127.0.0.1:0", "--",
            *server_command(stdio=True), str(tmp_path)]
    with started(gate, tools.env(), LISTENING) as (listening, gate_proc):
        gated = run_suite(tools, listening.group(1), tmp_path / "results")
    left = no_process_mentions(str(tmp_path))
    regressions = compare(direct, gated, "stdio-upstream")
    assert not left, f"processes outlived the test: {left}"
    assert not regressions, "checks that pass directly but not through the gate:\n" + "\n".join(regressions)
