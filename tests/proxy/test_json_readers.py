"""The oracle checked on its own: the reader models and the rule they judge the gate by.

If these were wrong, test_wire_differential.py would blame the gate for the
harness's mistakes; so each reader's reading of the classic smuggling frames is
pinned here, without any process.
"""

from __future__ import annotations

import pytest

from tests.proxy.json_readers import (
    read_first_wins,
    read_go_fold,
    read_go_fold_nul,
    read_go_struct_args,
    read_last_wins,
    readings,
    upstream_violations,
    wire_verdict,
)

VALID = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"/safe/x"}}}'


def test_a_clean_valid_call_reads_the_same_everywhere_and_is_accepted() -> None:
    every = readings(VALID)
    assert {(r.kind, r.method, r.id, r.tool, str(r.arguments)) for r in every} == {
        ("request", "tools/call", 1, "read", "{'path': '/safe/x'}")}
    assert upstream_violations(VALID) == []
    verdict = wire_verdict(VALID)
    assert not verdict.refuse and not verdict.drop


def test_duplicate_method_reads_differently_first_and_last() -> None:
    raw = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"/etc/passwd"}},"method":"ping"}'
    assert read_last_wins(raw).method == "ping"
    assert read_first_wins(raw).method == "tools/call"
    assert read_go_fold(raw).method == "ping"  # Go: the last match wins
    assert wire_verdict(raw).refuse and wire_verdict(raw).reply_id == 1
    assert any("first-wins" in v for v in upstream_violations(raw))


@pytest.mark.parametrize("twin", ["Arguments", "ARGUMENTS", "argument\u017f"])
def test_go_folding_maps_case_and_long_s_variants_onto_arguments(twin: str) -> None:
    raw = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"/safe/x"},'
           f'"{twin}":{{"path":"/etc/passwd"}}}}}}')
    assert read_last_wins(raw).arguments == {"path": "/safe/x"}
    assert read_go_fold(raw).arguments == {"path": "/etc/passwd"}
    assert wire_verdict(raw).refuse


def test_nul_in_a_name_matters_only_to_the_nul_stripping_reader() -> None:
    raw = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"note","arguments":{"path":"/etc/passwd"},'
           '"name\\u0000":"read"}}')
    assert read_go_fold(raw).tool == "note"
    assert read_go_fold_nul(raw).tool == "read"
    assert wire_verdict(raw).refuse


def test_kelvin_sign_folds_to_k_in_a_typed_argument_struct() -> None:
    raw = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"note",'
           '"arguments":{"kind":"memo","\\u212aind":"rm"}}}')
    assert read_go_fold(raw).arguments == {"kind": "memo", "\u212aind": "rm"}  # a map keeps both
    assert read_go_struct_args(raw).arguments == {"kind": "rm"}  # a struct has one field
    assert any("go-struct-args" in v for v in upstream_violations(raw))
    assert wire_verdict(raw).refuse


def test_go_reads_method_with_error_as_a_request_and_a_null_id_as_a_notification() -> None:
    mixed = '{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"x"},"method":"tools/call","params":{}}'
    assert read_go_fold(mixed).kind == "request"
    assert wire_verdict(mixed).refuse and wire_verdict(mixed).reply_id == "x"
    null_id = '{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"read","arguments":{"path":"/etc/x"}}}'
    assert read_go_fold(null_id).kind == "notification"
    assert wire_verdict(null_id).refuse


@pytest.mark.parametrize("raw, outcome", [
    ('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read","arguments":{"path":"/safe/x"}}}', "drop"),
    ('{"jsonrpc":"2.0","method":"ping"}', "drop"),
    ('{"jsonrpc":"2.0","method":"notifications/initialized"}', "accept"),
    ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}', "accept"),
    ('{"jsonrpc":"2.0","id":"s1","result":{}}', "accept"),
    ('{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}', "refuse"),
    ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "refuse"),
    ('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":{"b":[{"c":1,"c":2}]}}}', "refuse"),
    ('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1,"X":2}}', "refuse"),
    ('{"jsonrpc":"2.0","id":1,"method":"ping","Jsonrpc":"2.0"}', "refuse"),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","Arguments":{}}}', "refuse"),
    # a look-alike only matters for the names the gate reads; elsewhere case differs freely
    ('{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"URI":"file:///x"}}', "accept"),
    ('{"jsonrpc":"2.0","id":1.0,"method":"ping"}', "refuse"),
])
def test_the_rule_refuses_drops_or_accepts(raw: str, outcome: str) -> None:
    verdict = wire_verdict(raw)
    assert ("refuse" if verdict.refuse else "drop" if verdict.drop else "accept") == outcome, verdict.reasons
