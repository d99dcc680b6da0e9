"""Failures raised by compiled checks while they walk the arguments.

Checks know their schema location at compile time but not where in the
arguments they run, so the instance path is collected on the way *out*: each
container check appends its key to ``tokens`` as the failure passes through.
The happy path therefore pays nothing for path bookkeeping.
"""

from __future__ import annotations

from .errors import EXECUTION_FAILURE, VALIDATION, InputSchemaError, pointer


class Failure(Exception):
    __slots__ = ("keyword", "schema_path", "text", "tokens", "causes")

    kind = VALIDATION

    def __init__(self, keyword: str, schema_path: str, text: str, causes: list["Failure"] | None = None) -> None:
        self.keyword = keyword
        self.schema_path = schema_path
        self.text = text
        self.tokens: list[str | int] = []  # innermost first
        self.causes = causes

    def location(self, prefix: tuple = ()) -> tuple:
        return prefix + tuple(reversed(self.tokens))

    def render(self, prefix: tuple = ()) -> str:
        where = pointer(self.location(prefix)) or "arguments"
        text = self.text
        if self.causes:
            absolute = self.location(prefix)
            text += " " + "; ".join(f"[{i}] {c.render(absolute)}" for i, c in _numbered(self.causes))
        return f"{where}: {text}"

    def to_error(self) -> InputSchemaError:
        if self.causes:
            message = self.render()
            where = pointer(self.location())
        else:  # the common case, without building tuples
            where = pointer(reversed(self.tokens))
            message = f"{where or 'arguments'}: {self.text}"
        return InputSchemaError(
            self.kind, message, instance_path=where, schema_path=self.schema_path, keyword=self.keyword
        )


class Invalid(Failure):
    """The value breaks a constraint. Compositions (not, oneOf, anyOf) may absorb it."""


class Exhausted(Failure):
    """A pattern ran out of its work limit. Never absorbed: it is not a mismatch."""

    kind = EXECUTION_FAILURE


_MAX_CAUSES = 5


def _numbered(causes: list[Failure]):
    """Branch failures to quote in a composition message (a few, each with its branch index)."""
    shown = [(i, c) for i, c in enumerate(causes) if c is not None][:_MAX_CAUSES]
    return shown
