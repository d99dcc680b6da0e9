"""Compile a schema once into nested closures; validate arguments many times.

All schema inspection happens here: every keyword, every subschema, absent
properties and every composition branch are checked before any argument is
seen. The closure a schema object compiles to only does what the argument
value requires.
"""

from __future__ import annotations

from typing import Any, Mapping

from .errors import UNSUPPORTED, VALIDATION, InputSchemaError, pointer
from .failures import Failure
from .json_values import NotJson, check_json, describe
from .keywords import CONTRACT, EXTENDED, KEYWORDS, Keyword
from .site import Check, Site

DIALECTS = (CONTRACT, EXTENDED)

# Subschema nesting beyond this is refused: each level costs a few interpreter
# frames at validation time, and Python's recursion limit is 1000.
MAX_SCHEMA_DEPTH = 64

# The exact Python types each applicability class is called with.
_APPLIES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),  # never bool: type(True) is bool
}


def _accept(value: Any) -> None:
    return None


class DeclaredNames(frozenset):
    """Property names a schema declares; calling it asks whether a name is declared."""

    __slots__ = ()
    __call__ = frozenset.__contains__

    @property
    def names(self) -> frozenset:
        return self


class Compiler:
    """Turns schema objects into checks for one dialect."""

    def __init__(self, dialect: str = CONTRACT, table: Mapping[str, Keyword] = KEYWORDS) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
        self.dialect = dialect
        self.table = {name: row for name, row in table.items() if dialect in row.dialects}
        self.unavailable = {name for name, row in table.items() if dialect not in row.dialects}

    def _error(self, kind: str, tokens: tuple, keyword: str, text: str) -> InputSchemaError:
        location = pointer(tokens)
        return InputSchemaError(kind, f"schema {location or '(root)'}: {text}", schema_path=location, keyword=keyword)

    def root(self, schema: Any) -> Check:
        """The tool schema root is object-only: it must declare "type": "object"."""
        if isinstance(schema, Mapping):
            declared = schema.get("type")
            if declared != "object" and declared != ["object"]:
                what = "no type" if declared is None else f"type {describe(declared)}"
                raise self._error(
                    UNSUPPORTED, ("type",), "type",
                    f'a tool schema root must declare "type": "object"; this one has {what}',
                )
        return self.node(schema, (), 0)

    def node(self, schema: Any, tokens: tuple, depth: int) -> Check:
        if type(schema) is bool:
            raise self._error(
                UNSUPPORTED, tokens, "",
                f"boolean schemas ({describe(schema)}) are outside the {self.dialect} dialect; use {{}} or {{\"not\": {{}}}}",
            )
        if not isinstance(schema, Mapping):
            raise self._error(VALIDATION, tokens, "", f"a schema must be an object, not {describe(schema)}")
        if depth > MAX_SCHEMA_DEPTH:
            raise self._error(UNSUPPORTED, tokens, "", f"schemas nested deeper than {MAX_SCHEMA_DEPTH} levels are not supported")
        for key in schema:
            if type(key) is not str:
                raise self._error(VALIDATION, tokens, "", f"schema keys must be strings, not {describe(key)}")
            if key not in self.table:
                hint = " (it is supported in the extended dialect)" if key in self.unavailable else ""
                raise self._error(UNSUPPORTED, tokens + (key,), key, f'the keyword "{key}" is not supported{hint}')
        if "additionalProperties" in schema and "additional_properties" in schema:
            raise self._error(
                VALIDATION, tokens + ("additional_properties",), "additional_properties",
                "additional_properties is an alias of additionalProperties; give only one of them",
            )

        leading: Check | None = None
        specific: dict[type, list[Check]] = {}
        trailing: list[Check] = []
        for name, row in self.table.items():  # table order is evaluation order
            if name not in schema:
                continue
            check = row.compile(schema[name], Site(schema, name, tokens + (name,), self, depth))
            if check is None:
                continue
            if row.applies == "type":
                leading = check
            elif row.applies == "any":
                trailing.append(check)
            else:
                for t in _APPLIES[row.applies]:
                    specific.setdefault(t, []).append(check)
        return _combine(leading, {t: _sequence(cs) for t, cs in specific.items()}, trailing)

    def declared_properties(self, schema: Mapping) -> DeclaredNames:
        props = schema.get("properties")
        return DeclaredNames(props if isinstance(props, Mapping) else ())


def _sequence(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]
    checks_t = tuple(checks)

    def check_all(v: Any) -> None:
        for check in checks_t:
            check(v)

    return check_all


def _combine(leading: Check | None, by_type: dict[type, Check], trailing: list[Check]) -> Check:
    """One closure for a schema object; specialised so common shapes pay no dispatch."""
    after = _sequence(trailing) if trailing else None
    if not by_type:
        parts = [c for c in (leading, after) if c is not None]
        return _sequence(parts) if parts else _accept
    if len(by_type) == 1 and after is None:
        (only_type, only_check), = by_type.items()
        if leading is None:

            def check_one_type(v: Any) -> None:
                if type(v) is only_type:
                    only_check(v)

            return check_one_type

        def check_typed(v: Any) -> None:
            leading(v)
            if type(v) is only_type:
                only_check(v)

        return check_typed
    lookup = by_type.get
    first = leading or _accept
    last = after or _accept

    def check_node(v: Any) -> None:
        first(v)
        specific = lookup(type(v))
        if specific is not None:
            specific(v)
        last(v)

    return check_node


class CompiledSchema:
    """A preflighted tool schema; ``validate`` checks one set of arguments."""

    __slots__ = ("schema", "dialect", "_check")

    def __init__(self, schema: Mapping, dialect: str, check: Check) -> None:
        self.schema = schema
        self.dialect = dialect
        self._check = check

    def validate(self, arguments: Any) -> None:
        """Raise InputSchemaError unless ``arguments`` is a JSON value the schema accepts."""
        try:
            check_json(arguments)
        except NotJson as exc:
            where = pointer(exc.tokens)
            raise InputSchemaError(
                VALIDATION, f"{where or 'arguments'}: {exc.reason}", instance_path=where, keyword=""
            ) from None
        try:
            self._check(arguments)
        except Failure as failure:
            raise failure.to_error() from None

    def is_valid(self, arguments: Any) -> bool:
        """True or False; an execution failure still raises, since it is not an answer."""
        try:
            self.validate(arguments)
        except InputSchemaError as exc:
            if exc.kind == "execution_failure":
                raise
            return False
        return True

    def __repr__(self) -> str:
        return f"<CompiledSchema dialect={self.dialect}>"


def compile(schema: Any, dialect: str = CONTRACT) -> CompiledSchema:
    """Preflight the complete schema once; raises InputSchemaError."""
    return CompiledSchema(schema, dialect, Compiler(dialect).root(schema))
