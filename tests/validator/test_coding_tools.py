"""The ten coding-agent tool schemas in fixtures/coding-tools: each preflights, and its examples are judged as recorded."""

import json
from pathlib import Path

import pytest

import validator

FIXTURES = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "coding-tools").glob("*.json"))
TOOLS = {path.stem: json.loads(path.read_text()) for path in FIXTURES}


def test_there_are_ten_tools():
    assert sorted(TOOLS) == [
        "edit_file", "glob", "grep", "list_directory", "multi_edit",
        "read_file", "run_shell", "todo_write", "web_fetch", "write_file",
    ]


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_valid_examples_pass(name):
    compiled = validator.compile(TOOLS[name]["inputSchema"])
    assert TOOLS[name]["valid"], "every tool needs valid examples"
    for arguments in TOOLS[name]["valid"]:
        compiled.validate(arguments)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_invalid_examples_fail_where_recorded(name):
    compiled = validator.compile(TOOLS[name]["inputSchema"])
    assert TOOLS[name]["invalid"], "every tool needs invalid examples"
    for case in TOOLS[name]["invalid"]:
        with pytest.raises(validator.InputSchemaError) as caught:
            compiled.validate(case["arguments"])
        error = caught.value
        assert (error.kind, error.instance_path, error.keyword) == (
            case["kind"], case["instancePath"], case["keyword"]
        ), error.message
        assert error.message.startswith((case["instancePath"] or "arguments") + ": ")


def test_jsonschema_agrees_on_every_example():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is the test oracle (install the test extra)")
    for name, tool in TOOLS.items():
        oracle = jsonschema.Draft202012Validator(tool["inputSchema"])
        for arguments in tool["valid"]:
            assert oracle.is_valid(arguments), (name, arguments)
        for case in tool["invalid"]:
            assert not oracle.is_valid(case["arguments"]), (name, case)


def test_edit_file_oneof_message_names_each_alternative():
    compiled = validator.compile(TOOLS["edit_file"]["inputSchema"])
    with pytest.raises(validator.InputSchemaError) as caught:
        compiled.validate({"path": "a.py", "edit": {"old_string": "", "new_string": "b"}})
    message = caught.value.message
    assert message.startswith("/edit: an object matches none of the 2 alternatives")
    assert '[0] /edit/old_string: "" is shorter than 1 character' in message
    assert '[1] /edit: missing required property "start_line"' in message
