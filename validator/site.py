"""What a keyword's compile function sees: its value, its schema object, where it is."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .errors import UNSUPPORTED, VALIDATION, InputSchemaError, pointer
from .json_values import NotJson, check_json

if TYPE_CHECKING:
    from .compiler import Compiler

# A check returns None when the value passes, or the Failure that explains why not.
Check = Callable[[Any], Any]

# Keywords that apply their subschemas to the same value rather than to a part of
# it. A $ref cycle made only of these would never terminate (see Compiler.cell).
IN_PLACE = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies", "$ref"})


class Site:
    """One keyword occurrence: ``schema[keyword]`` at schema location ``tokens``."""

    __slots__ = ("schema", "keyword", "tokens", "compiler", "depth")

    def __init__(self, schema: Mapping, keyword: str, tokens: tuple, compiler: "Compiler", depth: int) -> None:
        self.schema = schema
        self.keyword = keyword
        self.tokens = tokens
        self.compiler = compiler
        self.depth = depth

    @property
    def path(self) -> str:
        return pointer(self.tokens)

    @property
    def dialect(self) -> str:
        return self.compiler.dialect

    def fail(self, kind: str, text: str, *more: str | int) -> InputSchemaError:
        location = pointer(self.tokens + more)
        return InputSchemaError(
            kind, f"schema {location or '(root)'}: {text}", schema_path=location, keyword=self.keyword
        )

    def malformed(self, text: str, *more: str | int) -> InputSchemaError:
        return self.fail(VALIDATION, text, *more)

    def unsupported(self, text: str, *more: str | int) -> InputSchemaError:
        return self.fail(UNSUPPORTED, text, *more)

    def sub(self, schema: Any, *more: str | int) -> Check:
        """Compile a subschema found at ``schema[keyword][more...]``."""
        return self.compiler.sub(schema, self.tokens + more, self.depth + 1, self.keyword not in IN_PLACE)

    def sibling(self, keyword: str) -> "Site":
        """The Site of another keyword of the same schema object (then/else beside if, …)."""
        return Site(self.schema, keyword, self.tokens[:-1] + (keyword,), self.compiler, self.depth)

    # Shapes that several keywords share. Each raises a `validation` error naming the keyword.

    def number(self, value: Any) -> int | float:
        if type(value) is int or (type(value) is float and math.isfinite(value)):
            return value
        raise self.malformed(f"{self.keyword} must be a finite number, not {_shape(value)}")

    def count(self, value: Any) -> int:
        """A non-negative integer; integral floats such as 2.0 count, as in JSON Schema."""
        if type(value) is float and value.is_integer():
            value = int(value)
        if type(value) is int and value >= 0:
            return value
        raise self.malformed(f"{self.keyword} must be a non-negative integer, not {_shape(value)}")

    def string(self, value: Any) -> str:
        if type(value) is str:
            return value
        raise self.malformed(f"{self.keyword} must be a string, not {_shape(value)}")

    def array(self, value: Any, *, non_empty: bool = False) -> list:
        if type(value) is not list:
            raise self.malformed(f"{self.keyword} must be an array, not {_shape(value)}")
        if non_empty and not value:
            raise self.malformed(f"{self.keyword} must be a non-empty array")
        return value

    def json_value(self, value: Any, *more: str | int) -> Any:
        try:
            check_json(value)
        except NotJson as exc:
            raise self.malformed(f"{self.keyword} holds a non-JSON value: {exc.reason}", *more, *exc.tokens) from None
        return value


def _shape(value: Any) -> str:
    from .json_values import describe

    return describe(value, limit=30)
