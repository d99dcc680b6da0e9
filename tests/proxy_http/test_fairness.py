"""Through the gate, concurrent callers are served in turn: under load, no caller waits many turns while later ones pass.

Counted, not timed: each of 64 callers keeps one tools/call in flight for two
seconds, and a gate that answers in the order calls arrive gives every caller
about as many answers (the server alone, measured the same way, gives each
within one of the others). A queue that sends a waiting caller to the back of
the line gave some callers 2.5x as many answers as others.
"""

from __future__ import annotations

import sys

import pytest

from scripts.bench_proxy_http import HTTP_SERVER, Target, load


@pytest.mark.parametrize("traffic", ["session", "sessionless"])
async def test_concurrent_callers_through_the_gate_each_get_about_as_many_answers(traffic: str) -> None:
    server = Target("direct json", [sys.executable, "-c", HTTP_SERVER, "json"])
    gate = None
    try:
        url = server.start()
        gate = Target("gate", [sys.executable, "-m", "proxy", "--quiet", "--listen", "http://127.0.0.1:0",
                                     "--json-response", "--upstream", url])
        result = await load(gate.start(), 64, duration=2.0, warmup=0.3, traffic=traffic)
    finally:
        if gate is not None:
            gate.stop()
        server.stop()
    fewest, most = result["calls_per_worker"]
    assert fewest > 0, result
    assert most <= 1.2 * fewest + 2, f"calls per caller ranged from {fewest} to {most}: {result}"
