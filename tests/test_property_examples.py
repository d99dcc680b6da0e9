"""PROPERTY_EXAMPLES raises the proxy property tests' example counts, never lowers them."""

from __future__ import annotations

import pytest

from tests.support.examples import examples


def test_without_property_examples_each_test_keeps_its_own_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROPERTY_EXAMPLES", raising=False)
    assert examples(300) == 300


def test_property_examples_raises_a_count_but_never_lowers_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROPERTY_EXAMPLES", "20000")
    assert examples(300) == 20000
    monkeypatch.setenv("PROPERTY_EXAMPLES", "10")
    assert examples(300) == 300


def test_a_property_examples_that_is_not_a_number_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROPERTY_EXAMPLES", "lots")
    with pytest.raises(ValueError, match=r"PROPERTY_EXAMPLES='lots' is not a whole number; set it to"):
        examples(300)
