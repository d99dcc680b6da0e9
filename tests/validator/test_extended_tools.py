"""Extended-dialect tool schemas (fixtures/extended-tools): the shapes real servers emit ($defs/$ref,
allOf-wrapped refs, const discriminators, exclusive bounds, recursion), with recorded examples."""

import json
from pathlib import Path

import pytest

import validator

FIXTURES = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "extended-tools").glob("*.json"))
TOOLS = {path.stem: json.loads(path.read_text()) for path in FIXTURES}


def test_fixtures_present():
    assert len(TOOLS) >= 3


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_unsupported_under_the_contract(name):
    with pytest.raises(validator.InputSchemaError) as caught:
        validator.compile(TOOLS[name]["inputSchema"])
    assert caught.value.kind == "unsupported_capability"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_examples_under_the_extended_dialect(name):
    compiled = validator.compile(TOOLS[name]["inputSchema"], dialect="extended")
    for arguments in TOOLS[name]["valid"]:
        compiled.validate(arguments)
    for case in TOOLS[name]["invalid"]:
        with pytest.raises(validator.InputSchemaError) as caught:
            compiled.validate(case["arguments"])
        error = caught.value
        assert (error.kind, error.instance_path, error.keyword) == (
            case["kind"], case["instancePath"], case["keyword"]), error.message


def test_jsonschema_agrees_on_every_example():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is the test oracle (install the test extra)")
    for name, tool in TOOLS.items():
        oracle = jsonschema.Draft202012Validator(tool["inputSchema"])
        for arguments in tool["valid"]:
            assert oracle.is_valid(arguments), (name, arguments)
        for case in tool["invalid"]:
            assert not oracle.is_valid(case["arguments"]), (name, case)
