"""Failures returned by compiled checks while they walk the arguments.

A check returns None when the value passes and a Failure when it does not.
Returning instead of raising keeps the failure path as cheap as the happy
one: a raised exception would build a traceback at every level it crosses.

Checks know their schema location at compile time but not where in the
arguments they run, so the instance path is collected on the way *out*: each
container check appends its key to ``tokens`` as it returns the failure.
"""

from __future__ import annotations

from .errors import EXECUTION_FAILURE, VALIDATION, InputSchemaError, escape_token, new_exception, pointer

_MAX_CAUSES = 5


class Failure:
    __slots__ = ("keyword", "schema_path", "text", "tokens", "causes")

    kind = VALIDATION

    def __init__(self, keyword: str, schema_path: str, text: str, causes: list["Failure"] | None = None) -> None:
        self.keyword = keyword
        self.schema_path = schema_path
        self.text = text
        self.tokens: list[str | int] = []  # innermost first
        self.causes = causes

    def _render(self, where: str) -> str:
        """The message of this failure, whose value is at the JSON Pointer ``where``.

        A cause's pointer is its parent's plus the cause's own tokens, so each
        pointer is built once, by appending: a refused anyOf renders one per branch.
        """
        text = self.text
        if self.causes:
            parts = []
            for i, cause in enumerate(self.causes[:_MAX_CAUSES]):
                tokens = cause.tokens  # usually none: a branch that failed on the value itself
                parts.append(f"[{i}] {cause._render(where + pointer(reversed(tokens)) if tokens else where)}")
            text = f"{text} {'; '.join(parts)}"
        return f"{where or 'arguments'}: {text}"

    def to_error(self) -> InputSchemaError:
        tokens = self.tokens
        if len(tokens) == 1:  # the commonest case: a member of the arguments, usually needing no escape
            token = tokens[0]
            where = "/" + (token if type(token) is str and "~" not in token and "/" not in token
                           else escape_token(token))
        elif tokens:
            where = pointer(reversed(tokens))
        else:
            where = ""
        message = self._render(where) if self.causes else f"{where or 'arguments'}: {self.text}"
        # Built here rather than by a constructor call: every refused call makes one.
        error = new_exception(InputSchemaError, message)
        error.kind = self.kind
        error.instance_path = where
        error.schema_path = self.schema_path
        error.keyword = self.keyword
        error.message = message
        return error

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.keyword} at {self.schema_path!r}: {self.text}>"


class Invalid(Failure):
    """The value breaks a constraint. Compositions (not, oneOf, anyOf) may absorb it."""

    __slots__ = ()


class Exhausted(Failure):
    """A pattern ran out of its work limit. Never absorbed: it is not a mismatch."""

    __slots__ = ()
    kind = EXECUTION_FAILURE
