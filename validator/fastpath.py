"""The yes/no fast path: each compiled schema also becomes one generated Python function.

The closures (nodes.py) answer with a Failure that explains itself, which costs
a call per schema object and per keyword. Most arguments are valid, and for
them only the verdict matters. So after a schema compiles, this module writes
straight-line Python source for the verdict alone — children inlined while the
nesting stays shallow, `'p' in d` then `d['p']`, no failure objects — and the
closures stay the authority: whenever the fast path says no (or cannot tell),
validate() runs the closures, which build the error.

Nothing from the schema is ever written into the source text: property names,
bounds, enum keys and patterns are bound into the namespace as constants named
by index (c0, c1, …), so a hostile schema cannot inject code. A schema object
using a keyword the generator does not know is answered by its own closure
(see _call), which keeps every keyword's semantics in one place.

The generated code mirrors the closures' JSON-domain rule exactly: a value
not yet known to be JSON is held to the domain by its own node (type check,
closed objects and typed arrays by their parts, open objects by their
undeclared members), so the verdicts agree on non-JSON values too.
A pattern search that runs out of its work limit raises PatternTimeout out of
the generated code, and a fallen-back closure's execution failure raises
Unknown: the entry (validate itself, see _entry) then asks the closures, which
report it.

Code that can raise neither, nor recurse with the arguments' depth, is
bounded by the schema's own depth (MAX_SCHEMA_DEPTH), so from a shallow
caller it cannot raise RecursionError either; its entry has no try statement.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from .errors import EXECUTION_FAILURE
from .json_values import MAX_DEPTH, NotJson, check_json, equality_key
from .keywords import EXTENDED, TYPES, type_set
from .patterns import PatternTimeout, compile_pattern

# Keywords the generator writes code for; any other asserting keyword in a schema
# object hands that object to its closure.
_GENERATED = frozenset({
    "type", "required", "properties", "additionalProperties", "additional_properties",
    "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "pattern", "minItems", "maxItems", "items",
    "minProperties", "maxProperties", "oneOf", "anyOf", "not", "allOf", "$ref",
})
# Keywords whose presence changes what a generated keyword means (items after
# prefixItems, additionalProperties beside patternProperties): such objects fall back.
_CHANGES_MEANING = frozenset({"prefixItems", "patternProperties"})

# Inline children while ``ind`` (the nesting depth the generator tracks) is below
# this; deeper children become their own function. Python refuses more than 20
# nested loops and 100 indentation levels in one function: every loop the
# generator writes adds at least 2 to ``ind`` (the type section and the loop),
# so a function holds at most 12 nested loops.
_INLINE_INDENT = 24

_SCALARS = frozenset({str, int, bool, type(None)})
_JSON_TYPES = frozenset({str, int, bool, type(None), float, dict, list})


class Unknown(Exception):
    """A fallen-back closure reported an execution failure: the verdict is not a yes or a no."""


def _is_json(v: Any) -> bool:
    try:
        check_json(v)
    except NotJson:
        return False
    return True


def _member_is_json(v: Any) -> bool:
    try:
        check_json(v, MAX_DEPTH - 1)  # one container level is already spent, as in nodes.check_member_domain
    except NotJson:
        return False
    return True


def _call(check: Callable[[Any], Any], v: Any) -> bool:
    failure = check(v)
    if failure is None:
        return True
    if failure.kind is EXECUTION_FAILURE:
        raise Unknown()
    return False


class Generator:
    """Writes the fast path for one compiled schema; ``compiler`` holds the closures to fall back to."""

    def __init__(self, compiler: Any) -> None:
        self.compiler = compiler
        self.extended = compiler.dialect == EXTENDED
        self.constants: list[Any] = []
        self.constant_ids: dict[Any, int] = {}
        self.functions: list[list[str]] = []
        self.counter = 0
        self.patterns: dict[str, Any] = {}
        self.named: dict[tuple, str] = {}  # (tokens, ensured) -> function already written
        # Whether the code may raise instead of answering (a timed pattern search, a fallen-back closure).
        self.undecided = False

    # --- names ---------------------------------------------------------------------

    def const(self, value: Any) -> str:
        """The name a constant is bound to in the generated module's namespace."""
        try:
            key = (type(value), value)
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in self.constant_ids:
            return f"c{self.constant_ids[key]}"
        index = len(self.constants)
        self.constants.append(value)
        if key is not None:
            self.constant_ids[key] = index
        return f"c{index}"

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # --- functions -------------------------------------------------------------------

    def function(self, schema: Any, tokens: tuple, ensured: bool, walk_first: bool = False, root: bool = False) -> str:
        """A function ``name(v) -> bool`` for one schema object; returns its name."""
        # The root's function is never shared: it may answer with a member's name (object_checks).
        shared = not root and tokens != ()
        if shared:
            known = self.named.get((tokens, ensured))
            if known is not None:
                return known
        name = self.fresh("f")
        if shared:
            self.named[(tokens, ensured)] = name
        lines = [f"def {name}(v):"]
        if walk_first:
            lines.append("    if not _is_json(v): return False")
        if root and isinstance(schema, Mapping) and "type" not in schema:
            lines.append("    if type(v) is not dict: return False")  # the extended dialect's implicit object root
        self.node(schema, tokens, ensured, "v", 1, lines)
        lines.append("    return True")
        self.functions.append(lines)
        return name

    def closure(self, tokens: tuple, ensured: bool, var: str, ind: int, out: list[str]) -> None:
        check = self.compiler.checks[(tokens, ensured)]
        self.undecided = True
        out.append(f"{'    ' * ind}if not _call({self.const(check)}, {var}): return False")

    def child(self, schema: Any, tokens: tuple, ensured: bool, var: str, ind: int, out: list[str]) -> None:
        """A subschema's code, inline if shallow enough, else a call to its own function."""
        if ind < _INLINE_INDENT:
            self.node(schema, tokens, ensured, var, ind, out)
        else:
            out.append(f"{'    ' * ind}if not {self.function(schema, tokens, ensured)}({var}): return False")

    # --- one schema object ---------------------------------------------------------------

    def node(self, schema: Any, tokens: tuple, ensured: bool, var: str, ind: int, out: list[str]) -> None:
        pad = "    " * ind
        if schema is True:
            if not ensured:
                out.append(f"{pad}if type({var}) not in _SCALARS and not _is_json({var}): return False")
            return
        if schema is False:
            out.append(f"{pad}return False")
            return
        asserting = False
        for key in schema:
            if key in _CHANGES_MEANING or (self.compiler.row(key).applies is not None and key not in _GENERATED):
                self.closure(tokens, ensured, var, ind, out)
                return
            asserting = asserting or self.compiler.row(key).applies is not None
        if not asserting:  # an empty or annotation-only schema: the JSON domain is all it asks
            self.node(True, tokens, ensured, var, ind, out)
            return

        # Which Python types the value may have, and the type check.
        t = self.fresh("t")
        out.append(f"{pad}{t} = type({var})")
        declared = schema.get("type")
        if declared is not None:
            names = [declared] if type(declared) is str else list(declared)
            allowed = type_set(tp for n in names for tp in TYPES[n])
            integral_floats = "integer" in names and "number" not in names
            exact = type_set(allowed - {float})
            if float in allowed or integral_floats:
                out.append(f"{pad}if {t} is float:")
                out.append(f"{pad}    if {var} - {var} != 0: return False")
                if float not in allowed:
                    out.append(f"{pad}    if not {var}.is_integer(): return False")
                out.append(f"{pad}elif {t} not in {self.const(exact)}: return False")
            elif len(exact) == 1:
                (only,) = exact
                out.append(f"{pad}if {t} is not {self.const(only)}: return False")
            else:
                out.append(f"{pad}if {t} not in {self.const(exact)}: return False")
            possible = allowed | ({float} if integral_floats else set())
        else:
            if not ensured:
                out.append(f"{pad}if {t} is float:")
                out.append(f"{pad}    if {var} - {var} != 0: return False")
                out.append(f"{pad}elif {t} not in _JSON_TYPES: return False")
            possible = set(_JSON_TYPES)

        sections: list[tuple[tuple[type, ...], list[str]]] = []
        if dict in possible:
            body = self.object_checks(schema, tokens, ensured, var, ind + 1)
            if body:
                sections.append(((dict,), body))
        if list in possible:
            body = self.array_checks(schema, tokens, ensured, var, ind + 1)
            if body:
                sections.append(((list,), body))
        if str in possible:
            body = self.string_checks(schema, var, ind + 1)
            if body:
                sections.append(((str,), body))
        numeric = tuple(tp for tp in (int, float) if tp in possible)
        if numeric:
            body = self.number_checks(schema, var, ind + 1)
            if body:
                sections.append((numeric, body))
        if len(sections) == 1 and set(sections[0][0]) >= possible:
            out.extend(line[4:] for line in sections[0][1])  # the only possible type: no test
        else:
            first = True
            for types, body in sections:
                test = " or ".join(f"{t} is {self.const(tp)}" for tp in types)
                out.append(f"{pad}{'if' if first else 'elif'} {test}:")
                out.extend(body)
                first = False
        self.trailing(schema, tokens, var, ind, out)

    def object_checks(self, schema: Mapping, tokens: tuple, ensured: bool, var: str, ind: int) -> list[str]:
        pad, out = "    " * ind, []
        required = schema.get("required") or ()
        if required:
            test = " or ".join(f"{self.const(n)} not in {var}" for n in dict.fromkeys(required))
            out.append(f"{pad}if {test}: return False")
        for key, op in (("minProperties", "<"), ("maxProperties", ">")):
            if key in schema:
                out.append(f"{pad}if len({var}) {op} {self.const(_count(schema[key]))}: return False")
        props = schema.get("properties") or {}
        extra_key = next((k for k in ("additionalProperties", "additional_properties") if k in schema), None)
        extra = schema[extra_key] if extra_key is not None else True
        declared = frozenset(props)
        if extra is True and not ensured:
            # The domain walk of an open object skips the members a subschema holds to the
            # domain anyway: its own properties', and those of what applies in place.
            declared |= self.in_place_names(schema, tokens)
        names = self.const(declared)
        # Whether every member is declared, asked in C (a non-str key is never declared):
        # the usual valid call then skips the per-member loop entirely.
        only_declared = f"{self.const(declared.issuperset)}({var})"
        if extra is False:
            out.append(f"{pad}if not {only_declared}: return False")
        elif extra is not True:
            k, x = self.fresh("k"), self.fresh("x")
            out.append(f"{pad}if not {only_declared}:")
            out.append(f"{pad}    for {k}, {x} in {var}.items():")
            out.append(f"{pad}        if {k} not in {names}:")
            out.append(f"{pad}            if type({k}) is not str: return False")
            self.child(extra, tokens + (extra_key,), False, x, ind + 3, out)
        elif not ensured:
            k, x = self.fresh("k"), self.fresh("x")
            out.append(f"{pad}if not {only_declared}:")
            out.append(f"{pad}    for {k}, {x} in {var}.items():")
            out.append(f"{pad}        if {k} not in {names}:")
            out.append(f"{pad}            if type({k}) is not str: return False")
            out.append(f"{pad}            if type({x}) not in _SCALARS and not _member_is_json({x}): return False")
        present = frozenset(required)  # tested above: read without a membership test
        # At the root, when the closures can resume there (Compiler.resume), a "no" inside a
        # declared member answers with the member's name, so the closures need not start over.
        named_no = tokens == () and self.compiler.resume is not None
        for name, sub in props.items():
            x = self.fresh("x")
            c = self.const(name)
            member: list[str] = []
            if name in present:
                out.append(f"{pad}{x} = {var}[{c}]")
                self.child(sub, tokens + ("properties", name), False, x, ind, member)
            else:
                out.append(f"{pad}if {c} in {var}:")
                member.append(f"{pad}    {x} = {var}[{c}]")
                self.child(sub, tokens + ("properties", name), False, x, ind + 1, member)
            if named_no:
                # Every exit of the generated code is a line ending in "return False" (no
                # schema value is ever written into the source, so nothing else can end so).
                member = [line[:-5] + c if line.endswith("return False") else line for line in member]
            out.extend(member)
        return out

    def in_place_names(self, schema: Mapping, tokens: tuple) -> frozenset:
        """The property names declared by what always applies to this object's value in place.

        A $ref target and allOf branches are applied to the same value, and each of
        their declared members goes to a subschema that holds it to the JSON domain
        (properties' subschemas are never compiled as ensured), so the open object's
        own domain walk need not cover those members again; without this a chain of
        $refs walked every member once per link. anyOf and oneOf branches are left
        out: a member only a losing branch declares is checked by nothing.
        """
        names: set[str] = set()
        pending: list[tuple[Any, tuple]] = [(schema, tokens)]
        seen: set[tuple] = set()
        while pending:
            node, where = pending.pop()
            if where in seen or not isinstance(node, Mapping):
                continue
            seen.add(where)
            if node is not schema:
                props = node.get("properties")
                if isinstance(props, Mapping):
                    names.update(props)
            ref = self.compiler.ref_targets.get(where + ("$ref",)) if "$ref" in node else None
            if ref is not None:
                pending.append((ref[1], ref[0]))
            branches = node.get("allOf")
            if isinstance(branches, list):
                pending.extend((branch, where + ("allOf", i)) for i, branch in enumerate(branches))
        return frozenset(names)

    def array_checks(self, schema: Mapping, tokens: tuple, ensured: bool, var: str, ind: int) -> list[str]:
        pad, out = "    " * ind, []
        for key, op in (("minItems", "<"), ("maxItems", ">")):
            if key in schema:
                out.append(f"{pad}if len({var}) {op} {self.const(_count(schema[key]))}: return False")
        if "items" in schema:
            x = self.fresh("x")
            out.append(f"{pad}for {x} in {var}:")
            self.child(schema["items"], tokens + ("items",), False, x, ind + 1, out)
        elif not ensured:
            out.append(f"{pad}if not _is_json({var}): return False")
        return out

    def string_checks(self, schema: Mapping, var: str, ind: int) -> list[str]:
        pad, out = "    " * ind, []
        if "minLength" in schema and _count(schema["minLength"]) > 0:
            out.append(f"{pad}if len({var}) < {self.const(_count(schema['minLength']))}: return False")
        if "maxLength" in schema:
            out.append(f"{pad}if len({var}) > {self.const(_count(schema['maxLength']))}: return False")
        if "pattern" in schema:
            source = schema["pattern"]
            matches = self.patterns.get(source)
            if matches is None:
                matches = self.patterns[source] = compile_pattern(source, extended=self.extended)
            # A string short enough to need no work limit is searched right here (see compile_pattern).
            self.undecided = True
            out.append(f"{pad}if len({var}) <= {self.const(matches.untimed)}:")
            out.append(f"{pad}    if {self.const(matches.search)}({var}) is None: return False")
            out.append(f"{pad}elif not {self.const(matches)}({var}): return False")
        return out

    def number_checks(self, schema: Mapping, var: str, ind: int) -> list[str]:
        pad, out = "    " * ind, []
        for key, op in (("minimum", "<"), ("maximum", ">"), ("exclusiveMinimum", "<="), ("exclusiveMaximum", ">=")):
            if key in schema:
                out.append(f"{pad}if {var} {op} {self.const(schema[key])}: return False")
        return out

    def trailing(self, schema: Mapping, tokens: tuple, var: str, ind: int, out: list[str]) -> None:
        pad = "    " * ind
        if "enum" in schema:
            keys = self.const(frozenset(equality_key(c) for c in schema["enum"]))
            t = self.fresh("t")
            out.append(f"{pad}{t} = type({var})")
            out.append(f"{pad}if ({var} if {t} is str or {t} is int or {t} is float or {var} is None "
                       f"else _key({var})) not in {keys}: return False")
        if "const" in schema:
            out.append(f"{pad}if _key({var}) != {self.const(equality_key(schema['const']))}: return False")
        if "allOf" in schema:
            for i, branch in enumerate(schema["allOf"]):
                self.child(branch, tokens + ("allOf", i), True, var, ind, out)
        if "anyOf" in schema:
            calls = [f"{self.function(b, tokens + ('anyOf', i), True)}({var})" for i, b in enumerate(schema["anyOf"])]
            out.append(f"{pad}if not ({' or '.join(calls)}): return False")
        if "oneOf" in schema:
            calls = [f"{self.function(b, tokens + ('oneOf', i), True)}({var})" for i, b in enumerate(schema["oneOf"])]
            out.append(f"{pad}if ({' + '.join(calls)}) != 1: return False")
        if "not" in schema:
            out.append(f"{pad}if {self.function(schema['not'], tokens + ('not',), True)}({var}): return False")
        if "$ref" in schema:
            key, target = self.compiler.ref_targets[tokens + ("$ref",)]
            if key == ():
                # The document root: its closure (the root's own function also checks the implicit object type).
                out.append(f"{pad}if not _call({self.const(self.compiler.cells[key].check)}, {var}): return False")
            else:
                # Applied in place, so the target is compiled as ensured (Compiler.cell); a recursive
                # reference calls the function being written, which is why it is named before its body.
                out.append(f"{pad}if not {self.function(target, key, True)}({var}): return False")

    # --- assembly --------------------------------------------------------------------------

    def build(self, explain: Callable[[Any, Any], Any]) -> dict[str, Any]:
        namespace: dict[str, Any] = {
            "_is_json": _is_json, "_member_is_json": _member_is_json, "_call": _call, "_key": equality_key,
            "_SCALARS": _SCALARS, "_JSON_TYPES": _JSON_TYPES,
            "_no": explain, "_Undecided": (PatternTimeout, Unknown, RecursionError),
        }
        namespace.update((f"c{i}", value) for i, value in enumerate(self.constants))
        source = "\n".join(line for lines in self.functions for line in lines) + "\n"
        exec(compile(source, "<validator fast path>", "exec"), namespace)
        namespace["__source__"] = source
        return namespace


# Every exit of a generated function: "return False", or at the root "return c<i>" naming a member.
_EXIT = re.compile(r"return (False|c[0-9]+)$")


def _entry(lines: list[str], guarded: bool) -> list[str]:
    """The root function rewritten as validate(): a yes returns None, a no raises what ``_no`` returns.

    ``_no`` (the compiler's explainer) runs the closures and returns their
    error, which validate raises itself: an exception raised one call deeper
    would carry that frame in its traceback too. A fast path that cannot tell
    hands the closures None, and raises only if they refuse. Only a ``guarded``
    entry (code that can meet a pattern's work limit, a fallen-back closure or
    unbounded recursion) wraps its body in a try statement: every refusal's
    exception passes out through the exits, and through a handler it would pay
    for the match and the re-raise, about a tenth of a refused call.
    """
    out = ["def validate(v):"]
    if guarded:
        out.append("    try:")
    for line in lines[1:]:
        if line == "    return True":
            line = "    return None"
        else:
            exit_ = _EXIT.search(line)
            if exit_ is not None:
                line = f"{line[:exit_.start()]}raise _no(v, {exit_.group(1)})"
        out.append("    " + line if guarded else line)
    if guarded:
        out += ["    except _Undecided:", "        pass", "    _e = _no(v, None)", "    if _e is not None:",
                "        raise _e"]
    return out


class _Said(Exception):
    """The fast path's answer, carried out of validate by ``answers``."""


def answers(validate: Callable[[Any], None]) -> Callable[[Any], "bool | str | None"]:
    """The fast path's bare answer behind a compiled schema's ``validate``, for tests.

    The same source run again with a ``_no`` that hands the answer back: True
    (yes), False (no), a root member's name (no, inside it) or None (cannot tell).
    """
    namespace = dict(validate.__globals__)  # type: ignore[attr-defined]
    namespace["_no"] = lambda v, answer: _Said(answer)
    exec(compile(namespace["__source__"], "<validator fast path>", "exec"), namespace)
    entry = namespace["validate"]

    def answer(v: Any) -> bool | str | None:
        try:
            entry(v)
        except _Said as said:
            return said.args[0]
        return True

    return answer


def _count(value: Any) -> int:
    return int(value)  # preflight accepted it as a count: an int or an integral float


def generate(compiler: Any, schema: Any, walk_first: bool,
             explain: Callable[[Any, Any], Any]) -> Callable[[Any], None]:
    """``validate`` for a schema the compiler has just compiled (closures recorded in compiler.checks).

    The root's function is written as the entry itself (see _entry): nothing else
    calls it, since a reference to the document root goes through its closure.
    """
    generator = Generator(compiler)
    root = generator.function(schema, (), False, walk_first=walk_first, root=compiler.dialect == EXTENDED)
    compositions = [
        (holder, [generator.function(b, tokens + (i,), True) for i, b in enumerate(branches)])
        for holder, tokens, branches in compiler.compositions
    ]
    index = next(i for i, lines in enumerate(generator.functions) if lines[0] == f"def {root}(v):")
    generator.functions[index] = _entry(generator.functions[index], walk_first or generator.undecided)
    namespace = generator.build(explain)
    for holder, names in compositions:
        holder.extend(namespace[n] for n in names)
    return namespace["validate"]
