"""proxy.core.policy: the TOML policy file, decisions, hiding, overlays and errors that name the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proxy.check import tools_from_document
from proxy.core.policy import DENIED_BY_POLICY, Policy, PolicyError

ROOT = Path(__file__).resolve().parents[2]

EXAMPLE = '''\
version = 1
deny = ["write_file", "edit_file", "move_*"]
hide = true

[[overlay]]
tools = ["read_file", "read_text_file"]
schema = { type = "object", properties = { path = { type = "string", pattern = "^/workspace/" } } }
'''


def filesystem_schema(name: str) -> dict:
    tools, _ = tools_from_document(json.loads((ROOT / "fixtures/catalogs/server-filesystem.json").read_text()))
    return next(t["inputSchema"] for t in tools if t["name"] == name)


def test_deny_and_hide():
    policy = Policy.from_text(EXAMPLE, "ops.toml")
    assert policy.decide("read_file").allowed
    decision = policy.decide("move_file")
    assert not decision.allowed and decision.rule == 'deny "move_*"'
    assert decision.message.startswith(f'{DENIED_BY_POLICY}: the tool "move_file" may not be called')
    assert "ops.toml" in decision.message and "do not retry" in decision.message
    assert policy.hidden("move_file") and not policy.hidden("read_file")


def test_hide_is_off_by_default():
    policy = Policy.from_text('deny = ["write_file"]')
    assert not policy.decide("write_file").allowed and not policy.hidden("write_file")


def test_allow_list_and_deny_wins():
    policy = Policy.from_text('allow = ["read_*", "list_*"]\ndeny = ["read_media_file"]')
    assert policy.decide("read_file").allowed and policy.decide("list_directory").allowed
    assert policy.decide("write_file").rule == "allow (no glob matches this name)"
    assert policy.decide("read_media_file").rule == 'deny "read_media_file"'


def test_globs_are_case_sensitive_and_a_single_string_is_a_list():
    policy = Policy.from_text('deny = "Write_*"')
    assert policy.decide("write_file").allowed and not policy.decide("Write_file").allowed


def test_empty_policy_allows_everything():
    policy = Policy.from_text("")
    assert policy.decide("anything").allowed and policy.overlay("anything") is None and not policy.hidden("x")


def test_overlay_on_the_real_read_file_schema():
    import validator

    policy = Policy.from_text(EXAMPLE)
    tool = validator.compile(filesystem_schema("read_file"))
    overlay = policy.overlay("read_file")
    assert overlay is not None and overlay.problem is None
    inside, outside = {"path": "/workspace/x"}, {"path": "/etc/passwd"}
    tool.validate(inside)
    tool.validate(outside)  # the server's own schema accepts any path ...
    assert overlay.check(inside) is None
    problem = overlay.check(outside)  # ... the operator's overlay does not
    assert problem is not None and problem.keyword == "pattern" and problem.schema_path == "/properties/path/pattern"
    assert "does not match the pattern" in problem.message
    assert policy.overlay("list_directory") is None


def test_several_overlays_all_apply():
    policy = Policy.from_text(EXAMPLE + '''
[[overlay]]
tools = "read_*"
schema = { type = "object", properties = { path = { type = "string", minLength = 12 } } }
''')
    overlay = policy.overlay("read_file")
    assert len(overlay.rules) == 2
    assert overlay.check({"path": "/workspace/"}).keyword == "minLength"
    assert overlay.check({"path": "/workspace/abc"}) is None
    assert len(policy.overlay("read_media_file").rules) == 1


def test_overlay_outside_the_dialect_denies_the_tool_but_loads():
    text = '''
[[overlay]]
tools = ["read_file"]
schema = { type = "object", properties = { path = { const = "/workspace/a" } } }
'''
    contract = Policy.from_text(text, "ops.toml", "contract")
    decision = contract.decide("read_file")
    assert not decision.allowed and decision.rule.startswith("overlay[0] (read_file): schema /properties/path/const")
    assert "cannot be enforced" in decision.message
    assert contract.decide("list_directory").allowed
    assert contract.overlay("read_file").check({"path": "/workspace/a"}) is not None
    extended = Policy.from_text(text, "ops.toml", "extended")
    assert extended.decide("read_file").allowed
    assert extended.overlay("read_file").check({"path": "/workspace/a"}) is None


def test_overlay_schema_as_a_subtable():
    policy = Policy.from_text('''
[[overlay]]
tools = ["read_file"]
[overlay.schema]
type = "object"
required = ["path"]
[overlay.schema.properties.path]
type = "string"
pattern = "^/workspace/"
''')
    assert policy.overlay("read_file").check({"path": "/etc/passwd"}).keyword == "pattern"
    assert policy.overlay("read_file").check({}).keyword == "required"


@pytest.mark.parametrize("text,expected", [
    ('deny = ["a"\nhide = true\n', "line 2, column 1: the policy is not valid TOML"),
    ('deny = ["a"]\nhide = tru\n', "line 2, column 8: the policy is not valid TOML"),
    ('deny = [\n', "line 1 (the end of the file): the policy is not valid TOML"),
    ('version = 1\ndney = ["a"]\n', 'line 2: the key "dney" is not part of a policy'),
    ('version = 2\n', "line 1: version must be 1"),
    ('\nhide = "yes"\n', "line 2: hide must be true or false"),
    ('allow = []\n', "line 1: allow must be a non-empty list of tool-name globs"),
    ('deny = [1]\n', "line 1: deny must be a non-empty list"),
    ('hide = false\n\n[[overlay]]\nschema = { type = "object" }\n', "line 3: this overlay has no tools"),
    ('[[overlay]]\ntools = ["a"]\nschema = {}\n\n[[overlay]]\ntools = ["b"]\nshema = {}\n',
     'line 7: the key "shema" is not part of an overlay'),
    ('[[overlay]]\ntools = ["a"]\nschema = "{}"\n', "line 3: this overlay needs a schema table"),
    ('[[overlay]]\ntools = []\nschema = {}\n', "line 2: tools must be a non-empty list"),
    ('overlay = 3\n', "line 1: overlays are written as [[overlay]] tables"),
])
def test_malformed_policies_name_the_line(text, expected):
    with pytest.raises(PolicyError) as info:
        Policy.from_text(text, "ops.toml")
    assert str(info.value).startswith("ops.toml, ")
    assert expected in str(info.value)


def test_load_from_a_file(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text(EXAMPLE, encoding="utf-8")
    assert not Policy.load(str(path)).decide("write_file").allowed
    path.write_text("deny = [\n  'a',\n  b\n]\n", encoding="utf-8")
    with pytest.raises(PolicyError, match=r"policy.toml, line 3, column 3: the policy is not valid TOML"):
        Policy.load(str(path))
    with pytest.raises(PolicyError, match="cannot read the policy file .*; check the path"):
        Policy.load(str(tmp_path / "absent.toml"))


def test_docs_examples_load(tmp_path):
    """The worked example in docs/operator-control.md stays a valid policy."""
    text = (ROOT / "docs" / "operator-control.md").read_text()
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    policy = Policy.from_text(block, "docs")
    assert policy.overlay("read_file").check({"path": "/etc/passwd"}) is not None
    assert policy.overlay("read_file").check({"path": "/workspace/notes.md"}) is None


def test_answers_for_many_names_stay_bounded():
    policy = Policy.from_text('deny = ["x*"]')
    for i in range(10_000):
        assert policy.decide(f"x{i}").allowed is False
    assert len(policy._cache) <= 4096
    assert policy.decide("x9999").rule == 'deny "x*"'
