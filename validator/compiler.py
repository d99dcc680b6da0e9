"""Compile a schema once into nested closures; validate arguments many times.

All schema inspection happens here: every keyword, every subschema, absent
properties and every composition branch are checked before any argument is
seen. The closure a schema object compiles to only does what the argument
value requires.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from urllib.parse import unquote

from .errors import EXECUTION_FAILURE, UNSUPPORTED, VALIDATION, InputSchemaError, pointer
from .failures import Invalid
from .json_values import NotJson, check_json, describe, resolve_pointer
from .keywords import CONTRACT, EXTENDED
from .table import KEYWORDS, VENDOR, VENDOR_PREFIX, Keyword
from .fastpath import generate
from .patterns import PatternError, compile_pattern
from .nodes import check_domain, check_scalar_domain, combine, domain_failure, sequence, trusted
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


# Keywords that may stand beside a draft-07 $ref without changing its meaning.
_REF_NEUTRAL = frozenset({
    "$ref", "$defs", "definitions", "title", "description", "default", "examples", "$comment",
    "deprecated", "readOnly", "writeOnly", "$schema", "$id",
})


def _closes_objects(schema: Mapping) -> bool:
    """Whether every property of an object value reaches some subschema (or is refused)."""
    for key in ("additionalProperties", "additional_properties"):
        if key in schema:
            return schema[key] is not True
    return False


class DeclaredNames(frozenset):
    """Property names a schema declares; calling it asks whether a name is declared."""

    __slots__ = ()
    __call__ = frozenset.__contains__

    @property
    def names(self) -> frozenset:
        return self


class DeclaredByPattern:
    """Declared names plus patternProperties: a name is declared if listed or matched."""

    __slots__ = ("names", "patterns")

    def __init__(self, names: frozenset, patterns: tuple) -> None:
        self.names = names
        self.patterns = patterns

    def __call__(self, name: str) -> bool:
        if name in self.names:
            return True
        for matches in self.patterns:
            if matches(name):
                return True
        return False


class Cell:
    """A schema location compiled once and shared by every $ref to it.

    ``edges`` are the cells this one reaches by $ref *in place* (without the
    value descending into a child): a cycle of those would recurse forever.
    """

    __slots__ = ("key", "check", "baseline", "edges")

    def __init__(self, key: tuple, baseline: int) -> None:
        self.key = key
        self.check: Check | None = None
        self.baseline = baseline
        self.edges: list[tuple[tuple, str]] = []

    def deferred(self) -> Check:
        def check_deferred(v: Any) -> Any:
            return self.check(v)  # type: ignore[misc]  # set before any validation runs

        return check_deferred


class Compiler:
    """Turns schema objects into checks for one dialect."""

    def __init__(self, dialect: str = CONTRACT, table: Mapping[str, Keyword] = KEYWORDS) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
        self.dialect = dialect
        self.table = {name: row for name, row in table.items() if dialect in row.dialects}
        self.unavailable = {name for name, row in table.items() if dialect not in row.dialects}
        self.vendor = dialect in VENDOR.dialects  # "x-…" keywords without a row are annotations
        self.document: Any = None
        self.cells: dict[tuple, Cell] = {}
        self.open_cells: list[Cell] = []
        self.descents = 0  # how many value-descending keywords enclose the current compile
        # Whether the value of each schema object being compiled (innermost last) is
        # already held to the JSON domain; compile_properties reads it (see node()).
        self.ensured: list[bool] = []
        # (schema location, ensured) -> the closure compiled there, for the fast path to fall back to.
        self.checks: dict[tuple, Check] = {}
        # (holder, location, branches) of each oneOf/anyOf: the fast path fills holder with
        # one yes/no predicate per branch, so a passing composition formats no messages.
        self.compositions: list[tuple[list, tuple, list]] = []
        self.ref_targets: dict[tuple, tuple] = {}  # location of a $ref -> (target location, target schema)
        self.recursive = False
        self.resume: Callable[[dict, str], Any] | None = None  # see node() and explainer

    def _error(self, kind: str, tokens: tuple, keyword: str, text: str) -> InputSchemaError:
        location = pointer(tokens)
        return InputSchemaError(kind, f"schema {location or '(root)'}: {text}", schema_path=location, keyword=keyword)

    def root(self, schema: Any) -> Check:
        """The tool schema root is object-only: it must declare "type": "object"."""
        if isinstance(schema, Mapping):
            declared = schema.get("type")
            if declared is None and self.dialect == EXTENDED:
                # MCP arguments are always an object: a root without "type" (as some servers
                # publish) is read as "type": "object", which narrows and never drops a constraint.
                self.document = schema
                # Only the type: the rest of the root answers for the value being JSON.
                root_type = self.node({"type": "object"}, (), 0, ensured=True)
                rest = self.cell(schema, (), 0, ensured=False)
                self._refuse_in_place_cycles()
                return sequence([root_type, rest])
            malformed = type(declared) is list and (
                len({repr(t) for t in declared}) != len(declared) or any(type(t) is not str for t in declared)
            )
            if declared != "object" and declared != ["object"] and not malformed:  # node() reports a malformed list
                what = "no type" if declared is None else f"type {describe(declared)}"
                raise self._error(
                    UNSUPPORTED, ("type",), "type",
                    f'a tool schema root must declare "type": "object"; this one has {what}',
                )
        self.document = schema
        check = self.cell(schema, (), 0, ensured=False)
        self._refuse_in_place_cycles()
        return check

    def sub(self, schema: Any, tokens: tuple, depth: int, descend: bool) -> Check:
        if not descend:
            # Applied to the value its parent already holds to the JSON domain.
            return self.node(schema, tokens, depth, ensured=True)
        self.descents += 1
        try:
            return self.node(schema, tokens, depth)
        finally:
            self.descents -= 1

    def cell(self, schema: Any, tokens: tuple, depth: int, ensured: bool = True) -> Check:
        """Compile the schema at ``tokens`` once; later references share it.

        Every use but the root is a $ref, which applies in place: the value's
        JSON domain is already held by the schema object the $ref stands in.
        """
        known = self.cells.get(tokens)
        if known is not None:
            if known.check is not None:
                return known.check
            self.recursive = True  # a $ref back into a schema still being compiled
            return known.deferred()
        cell = self.cells[tokens] = Cell(tokens, self.descents)
        self.open_cells.append(cell)
        try:
            cell.check = self.node(schema, tokens, depth, ensured)
        finally:
            self.open_cells.pop()
        return cell.check

    def ref(self, reference: str, site: Site) -> Check:
        """A local $ref: "#", or "#" + a JSON Pointer (percent-decoded) into this document."""
        if not reference.startswith("#"):
            raise site.unsupported(f"the non-local $ref {describe(reference)} is not supported (references are never fetched)")
        fragment = unquote(reference[1:])
        if fragment and not fragment.startswith("/"):
            raise site.unsupported(f"the anchor reference {describe(reference)} is not supported (no $anchor)")
        draft = self.document.get("$schema") if isinstance(self.document, Mapping) else None
        if type(draft) is str and any(d in draft for d in ("draft-04", "draft-06", "draft-07")):
            siblings = [k for k in site.schema
                        if k not in _REF_NEUTRAL and not (self.vendor and k.startswith(VENDOR_PREFIX))]
            if siblings:
                raise site.unsupported(
                    f"in {draft} a $ref ignores its sibling keywords ({', '.join(siblings)}); "
                    "enforcing or dropping them would both change the schema's meaning"
                )
        found = resolve_pointer(self.document, reference)
        if found is None:
            raise site.malformed(f"the $ref {describe(reference)} does not resolve inside this schema")
        target, key = found
        self.ref_targets[site.tokens] = (key, target)
        holder = self.open_cells[-1]
        if self.descents == holder.baseline:
            holder.edges.append((key, site.path))
        return self.cell(target, key, site.depth + 1)

    def _refuse_in_place_cycles(self) -> None:
        state: dict[tuple, int] = {}  # 1 = on the DFS path, 2 = finished

        def visit(key: tuple) -> None:
            state[key] = 1
            for target, where in self.cells[key].edges:
                if state.get(target) == 1:
                    raise self._error(
                        UNSUPPORTED, tuple(where.split("/")[1:]), "$ref",
                        "this $ref cycles back to the same value without descending into it; "
                        "validating it would never terminate",
                    )
                if target not in state:
                    visit(target)
            state[key] = 2

        for key in list(self.cells):
            if key not in state:
                visit(key)

    def row(self, name: str) -> Keyword:
        """The table row of a keyword this dialect supports (KeyError otherwise)."""
        row = self.table.get(name)
        if row is None and self.vendor and name.startswith(VENDOR_PREFIX):
            return VENDOR
        return self.table[name]

    def name_pattern(self, source: Any, site: Site, *more: str | int) -> Any:
        """A patternProperties name predicate (raises PatternTimeout, see name_timeout)."""
        if type(source) is not str:
            raise site.malformed("patternProperties keys must be strings")
        try:
            matches = compile_pattern(source, extended=self.dialect == EXTENDED)
        except PatternError as exc:
            raise site.fail(exc.kind, f"pattern {describe(source)}: {exc.message}", *more) from None
        return matches

    def node(self, schema: Any, tokens: tuple, depth: int, ensured: bool = False) -> Check:
        """The check for one schema object. ``ensured``: the value is known to be JSON already."""
        if type(schema) is bool and self.dialect == EXTENDED:
            if schema:
                return trusted if ensured else check_domain
            path = pointer(tokens)

            def check_false(v: Any) -> Invalid:
                return Invalid("false", path, f"{describe(v)} is not allowed here (the schema is false)")

            return check_false
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
                if self.vendor and key.startswith(VENDOR_PREFIX):
                    VENDOR.compile(schema[key], Site(schema, key, tokens + (key,), self, depth))
                    continue
                extended_has_it = key in self.unavailable or (key.startswith(VENDOR_PREFIX) and not self.vendor)
                hint = " (it is supported in the extended dialect)" if extended_has_it else ""
                raise self._error(UNSUPPORTED, tokens + (key,), key, f'the keyword "{key}" is not supported{hint}')
        if "additionalProperties" in schema and "additional_properties" in schema:
            raise self._error(
                VALIDATION, tokens + ("additional_properties",), "additional_properties",
                "additional_properties is an alias of additionalProperties; give only one of them",
            )

        leading: Check | None = None
        specific: dict[type, list[Check]] = {}
        trailing: list[Check] = []
        self.ensured.append(ensured)
        try:
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
        finally:
            self.ensured.pop()
        if ensured:
            if leading is None:
                leading = trusted
            check = self.checks[(tokens, ensured)] = combine(leading, specific, trailing)
            return check
        # Each node answers for its own value being JSON, walking each part once. The
        # type check does it for scalars (and refuses NaN); a container is covered
        # when every part of it is handed to a subschema that does the same, or when
        # the properties check holds the members no subschema declares (an open object).
        if leading is None:
            if not specific and not trailing:
                self.checks[(tokens, ensured)] = check_domain
                return check_domain  # an empty or annotation-only schema: one walk, nothing else
            leading = check_scalar_domain
        for t, covered in ((dict, _closes_objects(schema)), (list, "items" in schema)):
            if t in leading.exact and not covered:  # type: ignore[attr-defined]
                if t is dict and any(getattr(c, "covers_domain", False) for c in specific.get(dict, ())):
                    continue
                specific.setdefault(t, []).insert(0, check_domain)
        if tokens == () and specific.get(dict):
            # The root's properties walk, when it is the first thing asked of an object
            # after the type: the fast path then names the member where it said no.
            self.resume = getattr(specific[dict][0], "resume", None)
        check = self.checks[(tokens, ensured)] = combine(leading, specific, trailing)
        return check

    def declared_properties(self, site: Site) -> DeclaredNames | DeclaredByPattern:
        schema = site.schema
        props = schema.get("properties")
        names = DeclaredNames(props if isinstance(props, Mapping) else ())
        patterns = schema.get("patternProperties") if self.dialect == EXTENDED else None
        if not isinstance(patterns, Mapping) or not patterns:
            return names
        site = site.sibling("patternProperties")
        return DeclaredByPattern(frozenset(names), tuple(self.name_pattern(p, site, p) for p in patterns))


def explainer(check: Check, resume: Callable[[dict, str], Any] | None,
              walk_first: bool) -> Callable[[Any, "bool | str | None"], "InputSchemaError | None"]:
    """What validating does once the fast path has not said yes: the closures find the error, returned as a value.

    ``verdict`` is False (a no), None (the fast path could not tell: a pattern ran
    out of its work limit, a fallen-back closure failed to finish, the value nests
    too deeply) or the name of the root member a no was met in, where the root's
    properties walk (``resume``) picks up instead of starting over; the error is
    the same either way. The caller raises it, so the traceback starts there.

    The closures are the authority on every answer the fast path could not give:
    for None, their acceptance returns None. After a definite no they should
    never accept (tests/validator/test_fast_path.py holds the two paths to the
    same verdicts); if they do, the two disagree, which is a bug, and the call is
    refused as an execution failure rather than let through on one opinion.
    """

    def explain(arguments: Any, verdict: bool | str | None) -> InputSchemaError | None:
        if type(verdict) is str:
            try:
                failure = resume(arguments, verdict)  # type: ignore[misc]
            except RecursionError:
                failure = None
            if failure is not None:
                return failure.to_error()
        try:
            if walk_first:
                try:
                    check_json(arguments)
                except NotJson as exc:
                    return domain_failure(exc).to_error()
            failure = check(arguments)
        except RecursionError:
            # Bounded depths make this unreachable from a shallow caller; a deep one still gets a value.
            return InputSchemaError(EXECUTION_FAILURE, "arguments: the value nests too deeply to validate here")
        if failure is not None:
            return failure.to_error()
        if verdict is None:
            return None
        return InputSchemaError(
            EXECUTION_FAILURE, "arguments: the validator's fast path refused these arguments but its full check "
            "accepts them; the call is refused to stay safe. This is a bug in mcp-schema-gate: please report it "
            "with the tool's inputSchema and these arguments")

    return explain


class CompiledSchema:
    """A preflighted tool schema; ``validate(arguments)`` raises InputSchemaError unless the schema accepts them.

    ``validate`` is an attribute, not a method: for a compiled schema it is the
    generated fast path itself (fastpath.py), so a valid call costs one Python
    call, and every other answer goes to the closures through ``explainer``.
    Built from closures alone (``entry`` None), it asks them directly.
    """

    __slots__ = ("schema", "dialect", "validate", "_check", "_walk_first")

    validate: Callable[[Any], None]

    def __init__(self, schema: Mapping, dialect: str, check: Check, walk_first: bool = False,
                 entry: Callable[[Any], None] | None = None) -> None:
        self.schema = schema
        self.dialect = dialect
        self._check = check
        # Without recursion the arguments can only nest as deep as the schema does
        # before every part is checked; a recursive schema has no such bound, so
        # the nesting limit is applied up front.
        self._walk_first = walk_first
        if entry is None:
            explain = explainer(check, None, walk_first)

            def entry(arguments: Any) -> None:
                error = explain(arguments, None)
                if error is not None:
                    raise error

        self.validate = entry

    def is_valid(self, arguments: Any) -> bool:
        """True or False; an execution failure still raises, since it is not an answer."""
        try:
            self.validate(arguments)
        except InputSchemaError as exc:
            if exc.kind == EXECUTION_FAILURE:
                raise
            return False
        return True

    def __repr__(self) -> str:
        return f"<CompiledSchema dialect={self.dialect}>"


def compile(schema: Any, dialect: str = CONTRACT) -> CompiledSchema:
    """Preflight the complete schema once; raises InputSchemaError."""
    compiler = Compiler(dialect)
    check = compiler.root(schema)
    explain = explainer(check, compiler.resume, compiler.recursive)
    entry = generate(compiler, schema, compiler.recursive, explain)
    return CompiledSchema(schema, dialect, check, walk_first=compiler.recursive, entry=entry)
