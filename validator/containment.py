"""Schema containment: is every value a NEW schema accepts also accepted by the OLD one?

    verdict = compare(old_schema, new_schema, dialect="contract")
    verdict.kind      # "unchanged" | "narrowed" | "widened" | "unsupported"
    verdict.pointer   # JSON Pointer into the new schema ("" is its root)
    verdict.reason    # one sentence naming what changed and why it counts as wider

The answer is sound and conservative: "narrowed" (or "unchanged") is given only
when containment is proven; whatever cannot be proven is "widened". An operator
who pins a tool wants a changed definition to be refused unless it is provably
harmless, so a false "widened" costs one manual review and a false "narrowed"
could let a tool quietly accept arguments nobody approved.

How the proof goes: NEW is contained in OLD when NEW implies every assertion of
OLD. So the prover walks OLD's keywords and, for each, looks for an assertion of
NEW at least as strong. NEW is held as a list of conjuncts (the schema, its
``allOf`` branches, the targets of its ``$ref``), because a value NEW accepts
satisfies all of them; when that is not enough and NEW has ``anyOf``/``oneOf``,
the proof splits into one case per branch. Where NEW can only accept finitely
many values (``enum``, ``const``, ``boolean``/``null`` types) the question is
decided exactly by running both schemas on those values with the project's own
validator. Recursive schemas are compared coinductively: meeting the same pair
of locations again after descending into a part of the value counts as proven,
which is sound by induction on the size of the value.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Mapping

from .compiler import Compiler
from .compiler import compile as _compile
from .errors import EXECUTION_FAILURE, InputSchemaError, pointer
from .json_values import describe, equality_key, resolve_pointer, type_name
from .keywords import EXTENDED
from .patterns import PatternError, PatternTimeout, compile_pattern

UNCHANGED = "unchanged"
NARROWED = "narrowed"
WIDENED = "widened"
UNSUPPORTED = "unsupported"

ALL_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})

# Keywords that never change which values a schema accepts (or that are handled
# together with the keyword they qualify: minContains with contains, then/else with if).
NEUTRAL = frozenset({
    "description", "title", "default", "examples", "format", "contentEncoding", "contentMediaType",
    "contentSchema", "$schema", "$comment", "$id", "deprecated", "readOnly", "writeOnly", "x-mcp-header",
    "$defs", "definitions", "minContains", "maxContains", "then", "else",
})

# Beyond this many nested comparisons, or this many in all, the prover gives up and
# answers "widened": case splits on anyOf/oneOf can multiply the work.
MAX_STEPS_DEEP = 200
MAX_STEPS = 5_000  # a fraction of a second


@dataclass(frozen=True)
class Verdict:
    """The answer of compare(); ``pointer`` and ``reason`` explain a widening or an unsupported schema."""

    kind: str
    pointer: str = ""
    reason: str = ""

    @property
    def contained(self) -> bool:
        return self.kind in (UNCHANGED, NARROWED)

    @property
    def message(self) -> str:
        return f"{self.pointer or '(root)'}: {self.reason}" if self.reason else self.kind


class _Wider(Exception):
    """Raised inside the prover: containment could not be proven at ``tokens``."""

    def __init__(self, tokens: tuple, reason: str) -> None:
        super().__init__(reason)
        self.tokens = tokens
        self.reason = reason


def compare(old_schema: Any, new_schema: Any, dialect: str = "contract") -> Verdict:
    """Whether ``new_schema`` accepts only values ``old_schema`` accepted (see the module docstring)."""
    try:
        _compile(new_schema, dialect)
    except InputSchemaError as exc:
        return Verdict(UNSUPPORTED, exc.schema_path, f"the new schema cannot be enforced in the {dialect} dialect: {exc.message}")
    try:
        _compile(old_schema, dialect)
    except InputSchemaError as exc:
        return Verdict(WIDENED, "", f"the old schema could not be enforced ({exc.message}), so every call was refused "
                       "and any enforceable schema accepts more")
    if equality_key(old_schema) == equality_key(new_schema):
        return Verdict(UNCHANGED)
    prover = _Prover(old_schema, new_schema, dialect)
    conj: list[tuple[Any, tuple]] = [(new_schema, ())]
    if dialect == EXTENDED and isinstance(new_schema, Mapping) and "type" not in new_schema:
        conj.append(({"type": "object"}, ()))  # the validator reads a typeless root as an object
    try:
        prover.sub(old_schema, (), conj)
    except _Wider as wider:
        return Verdict(WIDENED, pointer(wider.tokens), wider.reason)
    except RecursionError:  # a deep caller's stack: no proof, so no claim
        return Verdict(WIDENED, "", "the schemas nest too deeply to compare here, so the change cannot be proven narrower")
    return Verdict(NARROWED)


# --- helpers ---------------------------------------------------------------------------


def _exact(number: int | float) -> int | Fraction:
    return number if type(number) is int else Fraction(Decimal(repr(number)))


def _types(value: Any) -> frozenset:
    return frozenset([value] if type(value) is str else value)


def _intersect_types(a: frozenset | None, b: frozenset) -> frozenset:
    if a is None:
        return b
    out = set()
    for t in a:
        if t in b:
            out.add(t)
        elif (t == "number" and "integer" in b) or (t == "integer" and "number" in b):
            out.add("integer")
    return frozenset(out)


def _shown_types(types: frozenset) -> str:
    return ", ".join(f'"{t}"' for t in sorted(types))


def _at(schema: Any, tokens: tuple, key: str) -> tuple:
    """The pointer to ``key`` of ``schema`` when it has one, else to the schema itself."""
    return tokens + (key,) if isinstance(schema, Mapping) and key in schema else tokens


def _additional(schema: Mapping) -> tuple[Any, str]:
    for key in ("additionalProperties", "additional_properties"):
        if key in schema:
            return schema[key], key
    return True, "additionalProperties"


def _trivial(schema: Any) -> bool:
    """Accepts every value: true, or an object of annotations only."""
    if schema is True:
        return True
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key in NEUTRAL:
            continue
        if key in ("additionalProperties", "additional_properties") and value is True:
            continue
        if key in ("properties", "patternProperties", "dependentSchemas") and isinstance(value, Mapping) \
                and all(_trivial(s) for s in value.values()):
            continue
        if key in ("items", "propertyNames") and _trivial(value):
            continue
        if key in ("required",) and value == []:
            continue
        if key in ("minLength", "minItems", "minProperties") and value == 0:
            continue
        return False
    return True


def _dependencies(schema: Mapping) -> tuple[dict, dict]:
    """(dependentRequired, dependentSchemas), with draft-07 dependencies split into the two."""
    needed: dict[str, set] = {}
    schemas: dict[str, list] = {}
    for key in ("dependentRequired", "dependencies"):
        for name, value in (schema.get(key) or {}).items():
            if type(value) is list:
                needed.setdefault(name, set()).update(value)
            elif key == "dependencies":
                schemas.setdefault(name, []).append((value, ("dependencies", name)))
    for name, value in (schema.get("dependentSchemas") or {}).items():
        schemas.setdefault(name, []).append((value, ("dependentSchemas", name)))
    return needed, schemas


class _Facts:
    """What a list of conjuncts implies together (over-approximating the accepted set)."""

    def __init__(self) -> None:
        self.empty = False
        self.types: frozenset | None = None
        self.type_at: tuple | None = None
        self.lower: tuple | None = None  # (bound, exclusive, tokens)
        self.upper: tuple | None = None
        self.multiples: list[tuple[Any, tuple]] = []
        self.min_length = 0
        self.max_length: tuple | None = None
        self.patterns: dict[str, tuple] = {}
        self.min_items = 0
        self.max_items: int | None = None
        self.unique = False
        self.required: set = set()
        self.min_props = 0
        self.max_props: int | None = None
        self.finite: tuple | None = None  # (candidate values, tokens of the enum/const)
        self.schemas: list[tuple[Mapping, tuple]] = []

    def might(self, *kinds: str) -> bool:
        return not self.empty and (self.types is None or any(k in self.types for k in kinds))


class _Prover:
    def __init__(self, old_root: Any, new_root: Any, dialect: str) -> None:
        self.old_root = old_root
        self.new_root = new_root
        self.dialect = dialect
        self.depth = 0
        self.descents = 0
        self.open: dict[tuple, int] = {}
        self.checkers: dict[tuple, Any] = {}
        self.steps = 0
        self.rests: dict[tuple, Any] = {}

    # --- running the validator on candidate values ------------------------------------

    def checker(self, root: Any, schema: Any, tokens: tuple) -> Any:
        key = (id(root), id(schema), tokens)
        found = self.checkers.get(key)
        if found is None:
            compiler = Compiler(self.dialect)
            compiler.document = root
            found = self.checkers[key] = (compiler.cell(schema, tokens, 0, ensured=False), schema)
        return found[0]

    def new_accepts(self, conj: list, value: Any) -> bool:
        for schema, tokens in conj:
            if type(schema) is bool:
                if not schema:
                    return False
                continue
            try:
                check = self.checker(self.new_root, schema, tokens)
            except InputSchemaError:
                continue  # cannot tell: assume accepted, the conservative side for NEW
            failure = check(value)
            if failure is not None and failure.kind is not EXECUTION_FAILURE:
                return False
        return True

    def old_accepts(self, schema: Any, tokens: tuple, value: Any) -> bool:
        if type(schema) is bool:
            return schema
        try:
            check = self.checker(self.old_root, schema, tokens)
        except InputSchemaError:
            return False  # cannot tell: assume refused, the conservative side for OLD
        return check(value) is None

    # --- identity --------------------------------------------------------------------------

    def resolve(self, root: Any, reference: str) -> tuple[Any, tuple] | None:
        return resolve_pointer(root, reference)

    def same(self, old: Any, new: Any, seen: set | None = None) -> bool:
        """Equal as JSON, and every $ref inside resolves to equal subtrees in both documents."""
        if equality_key(old) != equality_key(new):
            return False
        refs: list[str] = []

        def collect(node: Any) -> None:
            if isinstance(node, Mapping):
                if type(node.get("$ref")) is str:
                    refs.append(node["$ref"])
                for value in node.values():
                    collect(value)
            elif type(node) is list:
                for value in node:
                    collect(value)

        collect(old)
        seen = set() if seen is None else seen
        for reference in refs:
            if reference in seen:
                continue
            seen.add(reference)
            a, b = self.resolve(self.old_root, reference), self.resolve(self.new_root, reference)
            if a is None or b is None or not self.same(a[0], b[0], seen):
                return False
        return True

    # --- the conjuncts of the new side ---------------------------------------------------------

    def expand(self, conj: list) -> list:
        out: list = []
        seen: set = set()

        def add(schema: Any, tokens: tuple) -> None:
            key = (id(schema), tokens)
            if key in seen:
                return
            seen.add(key)
            out.append((schema, tokens))
            if not isinstance(schema, Mapping):
                return
            for i, branch in enumerate(schema.get("allOf") or ()):
                add(branch, tokens + ("allOf", i))
            if type(schema.get("$ref")) is str:
                found = self.resolve(self.new_root, schema["$ref"])
                if found is not None:
                    add(*found)

        for schema, tokens in conj:
            add(schema, tokens)
        return out

    def facts(self, conj: list) -> _Facts:
        f = _Facts()
        finite_from: tuple | None = None
        for schema, tokens in self.expand(conj):
            if schema is True:
                continue
            if schema is False:
                f.empty = True
                continue
            f.schemas.append((schema, tokens))
            if "type" in schema:
                f.types = _intersect_types(f.types, _types(schema["type"]))
                f.type_at = tokens + ("type",)
            for key in ("enum", "const"):
                if key in schema and finite_from is None:
                    values = schema["enum"] if key == "enum" else [schema["const"]]
                    finite_from = (values, tokens + (key,))
            if isinstance(schema.get("not"), Mapping) and _trivial(schema["not"]) or schema.get("not") is True:
                f.empty = True
            for key, exclusive in (("minimum", False), ("exclusiveMinimum", True)):
                if key in schema:
                    bound = schema[key]
                    if f.lower is None or bound > f.lower[0] or (bound == f.lower[0] and exclusive):
                        f.lower = (bound, exclusive, tokens + (key,))
            for key, exclusive in (("maximum", False), ("exclusiveMaximum", True)):
                if key in schema:
                    bound = schema[key]
                    if f.upper is None or bound < f.upper[0] or (bound == f.upper[0] and exclusive):
                        f.upper = (bound, exclusive, tokens + (key,))
            if "multipleOf" in schema:
                f.multiples.append((schema["multipleOf"], tokens + ("multipleOf",)))
            f.min_length = max(f.min_length, int(schema.get("minLength", 0)))
            if "maxLength" in schema and (f.max_length is None or schema["maxLength"] < f.max_length[0]):
                f.max_length = (int(schema["maxLength"]), tokens + ("maxLength",))
            if "pattern" in schema:
                f.patterns.setdefault(schema["pattern"], tokens + ("pattern",))
            f.min_items = max(f.min_items, int(schema.get("minItems", 0)))
            if "maxItems" in schema:
                f.max_items = int(schema["maxItems"]) if f.max_items is None else min(f.max_items, int(schema["maxItems"]))
            f.unique = f.unique or schema.get("uniqueItems") is True
            f.required.update(schema.get("required") or ())
            f.min_props = max(f.min_props, int(schema.get("minProperties", 0)))
            if "maxProperties" in schema:
                m = int(schema["maxProperties"])
                f.max_props = m if f.max_props is None else min(f.max_props, m)
        if f.types is not None and not f.types:
            f.empty = True
        if finite_from is None and f.types is not None and f.types <= {"boolean", "null"}:
            finite_from = ([v for v in (True, False, None) if type_name(v) in f.types], f.type_at or ())
        if finite_from is not None:
            f.finite = finite_from
        return f

    # --- the proof ---------------------------------------------------------------------------

    def sub(self, old: Any, old_tokens: tuple, conj: list, descend: bool = False) -> None:
        """Prove that the conjunction ``conj`` (of the new schema) implies ``old``, or raise _Wider."""
        if descend:
            self.descents += 1
        self.depth += 1
        try:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise _Wider(conj[0][1], "the schemas are too large to compare, so the change cannot be proven narrower")
            if self.depth > MAX_STEPS_DEEP:
                raise _Wider(conj[0][1], "the schemas nest too deeply to compare, so the change cannot be proven narrower")
            key = (id(old), tuple((id(s), t) for s, t in conj))
            if key in self.open:
                if self.descents > self.open[key]:
                    return  # coinductive step: the same question about a smaller part of the value
                raise _Wider(conj[0][1], "the schema refers to itself without descending into the value, "
                             "so the change cannot be proven narrower")
            self.open[key] = self.descents
            try:
                self._sub(old, old_tokens, conj)
            finally:
                del self.open[key]
        finally:
            self.depth -= 1
            if descend:
                self.descents -= 1

    def _sub(self, old: Any, old_tokens: tuple, conj: list) -> None:
        if _trivial(old):
            return
        if len(conj) == 1 and self.same(old, conj[0][0]):
            return
        facts = self.facts(conj)
        if facts.empty:
            return
        where = conj[0][1]
        if facts.finite is not None:
            values, at = facts.finite
            for i, value in enumerate(values):
                if self.new_accepts(conj, value) and not self.old_accepts(old, old_tokens, value):
                    raise _Wider(at + ((i,) if at and at[-1] == "enum" else ()),
                                 f"the value {describe(value)} is now accepted here and was refused before")
            return
        if old is False:
            raise _Wider(where, "a value is now accepted here where none was accepted before")
        try:
            self.keywords(old, old_tokens, conj, facts)
        except _Wider:
            # NEW as a whole did not imply OLD; try each alternative of a NEW anyOf/oneOf on its own.
            split = self.split(conj)
            if split is None:
                raise
            for case in split:
                self.sub(old, old_tokens, case)

    def split(self, conj: list) -> list | None:
        """One case per branch of NEW's first anyOf/oneOf (with the rest of its schema), or None."""
        for index, (schema, tokens) in enumerate(conj):
            if not isinstance(schema, Mapping):
                continue
            for key in ("anyOf", "oneOf"):
                if key in schema:
                    # One copy per schema and keyword, so that the coinductive check recognises it.
                    rest = self.rests.setdefault((id(schema), key), {k: v for k, v in schema.items() if k != key})
                    base = conj[:index] + [(rest, tokens)] + conj[index + 1:]
                    return [base + [(branch, tokens + (key, i))] for i, branch in enumerate(schema[key])]
        return None

    def keywords(self, old: Mapping, ot: tuple, conj: list, f: _Facts) -> None:
        where = conj[0][1]
        handled = {"type", "enum", "const", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum",
                   "multipleOf", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
                   "items", "prefixItems", "contains", "required", "properties", "additionalProperties",
                   "additional_properties", "patternProperties", "minProperties", "maxProperties",
                   "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "allOf",
                   "anyOf", "oneOf", "not", "if", "$ref"}
        for key in old:
            if key not in NEUTRAL and key not in handled:
                if not any(key in s and self.same(old[key], s[key]) for s, _ in f.schemas):
                    raise _Wider(where, f'the constraint "{key}" changed or was removed, so the change cannot be proven narrower')

        if "type" in old:
            allowed = _types(old["type"])
            if f.types is None:
                raise _Wider(where, f"the type constraint ({_shown_types(allowed)}) was removed, so values of any type are accepted")
            extra = {t for t in f.types if not (t in allowed or (t == "integer" and "number" in allowed))}
            if extra:
                raise _Wider(f.type_at or where, f"the type now accepts {_shown_types(frozenset(extra))}, "
                             f"which was refused before (it was {_shown_types(allowed)})")
        for key in ("enum", "const"):
            if key in old:
                raise _Wider(where, f"the {key} of the old schema is no longer implied: values outside its "
                             f"choices ({describe(old[key], limit=40)}) are accepted now")

        if f.might("number", "integer"):
            self.numbers(old, f, where)
        if f.might("string"):
            self.strings(old, f, where)
        if f.might("array"):
            self.arrays(old, ot, conj, f, where)
        if f.might("object"):
            self.objects(old, ot, conj, f, where)

        for i, branch in enumerate(old.get("allOf") or ()):
            self.sub(branch, ot + ("allOf", i), conj)
        if type(old.get("$ref")) is str:
            target = self.resolve(self.old_root, old["$ref"])
            if target is None:
                raise _Wider(where, f"the old $ref {describe(old['$ref'])} could not be followed")
            self.sub(target[0], target[1], conj)
        if "anyOf" in old:
            self.any_of(old, ot, conj, f, where)
        if "oneOf" in old:
            self.one_of(old, ot, conj, f, where)
        if "not" in old:
            self.not_(old, ot, conj, f, where)
        if "if" in old and ("then" in old or "else" in old):
            triple = {k: old[k] for k in ("if", "then", "else") if k in old}
            if not any(all(k in s and self.same(v, s[k]) for k, v in triple.items())
                       and not any(k in s for k in {"then", "else"} - set(triple)) for s, _ in f.schemas):
                raise _Wider(where, "the if/then/else condition changed or was removed, so the change cannot be proven narrower")

    # --- keyword families -----------------------------------------------------------------------

    def numbers(self, old: Mapping, f: _Facts, where: tuple) -> None:
        for key, exclusive, have, lower in (("minimum", False, f.lower, True), ("exclusiveMinimum", True, f.lower, True),
                                            ("maximum", False, f.upper, False), ("exclusiveMaximum", True, f.upper, False)):
            if key not in old:
                continue
            bound = old[key]
            if have is None:
                raise _Wider(where, f"the {key} of {describe(bound)} was removed")
            value, strict, at = have
            stronger = (value > bound if lower else value < bound) or (value == bound and (strict or not exclusive))
            if not stronger:
                moved = "lowered" if lower else "raised"
                raise _Wider(at, f"the {'lower' if lower else 'upper'} bound was {moved} or relaxed "
                             f"({key} {describe(bound)} -> {at[-1]} {describe(value)})")
        if "multipleOf" in old:
            divisor = _exact(old["multipleOf"])
            integral = f.types is not None and "number" not in f.types
            if integral and (Fraction(1) / divisor) % 1 == 0:
                return
            for mine, at in f.multiples:
                if (Fraction(_exact(mine)) / divisor) % 1 == 0:
                    return
            at = f.multiples[0][1] if f.multiples else where
            raise _Wider(at, f"numbers need no longer be multiples of {describe(old['multipleOf'])}")

    def strings(self, old: Mapping, f: _Facts, where: tuple) -> None:
        if old.get("minLength", 0) > f.min_length:
            raise _Wider(where, f"the minLength was lowered ({describe(old['minLength'])} -> {f.min_length})")
        if "maxLength" in old:
            if f.max_length is None:
                raise _Wider(where, f"the maxLength of {describe(old['maxLength'])} was removed")
            if f.max_length[0] > old["maxLength"]:
                raise _Wider(f.max_length[1], f"the maxLength was raised ({describe(old['maxLength'])} -> {f.max_length[0]})")
        if "pattern" in old and old["pattern"] not in f.patterns:
            if f.patterns:
                mine, at = next(iter(f.patterns.items()))
                raise _Wider(at, f"the pattern changed ({describe(old['pattern'])} -> {describe(mine)}); "
                             "a different pattern cannot be proven narrower")
            raise _Wider(where, f"the pattern {describe(old['pattern'])} was removed")

    def arrays(self, old: Mapping, ot: tuple, conj: list, f: _Facts, where: tuple) -> None:
        if old.get("minItems", 0) > f.min_items:
            raise _Wider(where, f"the minItems was lowered ({describe(old['minItems'])} -> {f.min_items})")
        if "maxItems" in old and (f.max_items is None or f.max_items > old["maxItems"]):
            raise _Wider(where, f"the maxItems was raised or removed ({describe(old['maxItems'])} -> "
                         f"{'none' if f.max_items is None else f.max_items})")
        if old.get("uniqueItems") is True and not f.unique and not (f.max_items is not None and f.max_items <= 1):
            raise _Wider(where, "items need no longer be unique")
        if "contains" in old:
            triple = {k: old[k] for k in ("contains", "minContains", "maxContains") if k in old}
            if not any(all(k in s and self.same(v, s[k]) for k, v in triple.items()) for s, _ in f.schemas):
                raise _Wider(where, "the contains constraint changed or was removed, so the change cannot be proven narrower")
        if "items" not in old and "prefixItems" not in old:
            return
        holders = [(s, t) for s, t in f.schemas if "items" in s or "prefixItems" in s]
        self.by_one_of(holders or [({}, where)], lambda holder, ht: self.elements(old, ot, holder, ht, f))

    def elements(self, old: Mapping, ot: tuple, holder: Mapping, ht: tuple, f: _Facts) -> None:
        """OLD's element schemas are implied by those of ``holder``, one conjunct of NEW."""
        o_prefix, n_prefix = old.get("prefixItems") or [], holder.get("prefixItems") or []
        o_rest, n_rest = old.get("items", True), holder.get("items", True)
        known = max(len(o_prefix), len(n_prefix))
        for i in range(known + 1):  # each prefix position, then "every later item"
            if f.max_items is not None and i >= f.max_items:
                break  # NEW allows no item here
            o_schema, o_at = (o_prefix[i], ot + ("prefixItems", i)) if i < len(o_prefix) else (o_rest, ot + ("items",))
            n_schema, n_at = (n_prefix[i], ht + ("prefixItems", i)) if i < len(n_prefix) else (n_rest, ht + ("items",))
            if _trivial(n_schema) and not _trivial(o_schema):
                raise _Wider(_at(holder, ht, "prefixItems" if i < len(n_prefix) else "items"),
                             "array items are no longer constrained" if i == known
                             else f"the array item {i} is no longer constrained")
            self.sub(o_schema, o_at, [(n_schema, n_at)], descend=True)

    def objects(self, old: Mapping, ot: tuple, conj: list, f: _Facts, where: tuple) -> None:
        for name in old.get("required") or ():
            if name not in f.required:
                raise _Wider(_at(conj[0][0], where, "required"),
                             f'the property "{name}" is no longer required')
        if old.get("minProperties", 0) > f.min_props:
            raise _Wider(where, f"the minProperties was lowered ({describe(old['minProperties'])} -> {f.min_props})")
        if "maxProperties" in old and (f.max_props is None or f.max_props > old["maxProperties"]):
            raise _Wider(where, "the maxProperties was raised or removed")
        needed, dependent = _dependencies(old)
        n_needed: dict = {}
        n_dependent: dict = {}
        for s, t in f.schemas:
            a, b = _dependencies(s)
            for k, v in a.items():
                n_needed.setdefault(k, set()).update(v)
            for k, v in b.items():
                n_dependent.setdefault(k, []).extend((schema, t + at) for schema, at in v)
        for name, names in needed.items():
            missing = set(names) - f.required - n_needed.get(name, set())
            if missing:
                raise _Wider(where, f'the properties required when "{name}" is present were relaxed '
                             f"({_shown_types(frozenset(missing))} no longer required)")
        for name, schemas in dependent.items():
            for schema, at in schemas:
                proven = False
                for candidate, n_at in n_dependent.get(name, []):
                    try:
                        self.sub(schema, ot + at, [(candidate, n_at)])
                        proven = True
                        break
                    except _Wider:
                        continue
                if not proven:
                    raise _Wider(where, f'the schema that applies when "{name}" is present was relaxed or removed')
        if "propertyNames" in old:
            names = [(s, t) for s, t in f.schemas if "propertyNames" in s]
            if not names:
                raise _Wider(where, "the propertyNames constraint was removed")
            self.by_one_of(names, lambda holder, ht: self.sub(old["propertyNames"], ot + ("propertyNames",),
                                                              [(holder["propertyNames"], ht + ("propertyNames",))]))
        keys = ("properties", "patternProperties", "additionalProperties", "additional_properties")
        if not any(k in old for k in keys):
            return
        holders = [(s, t) for s, t in f.schemas if any(k in s for k in keys)]
        self.by_one_of(holders or [({}, where)], lambda holder, ht: self.members(old, ot, holder, ht))

    def by_one_of(self, holders: list, prove: Callable[[Mapping, tuple], None]) -> None:
        """Prove with whichever conjunct of NEW can: a value NEW accepts satisfies each of them, so one is enough.

        A schema and the target of its ``$ref`` (or its ``allOf`` branches) may
        each declare members or elements; asking only the first would call a
        schema compared with itself wider. When none can, the first one's reason
        is given. A spent step budget stays spent: every later attempt stops at once.
        """
        try:
            prove(*holders[0])
            return
        except _Wider as exc:
            first = exc
        for holder, ht in holders[1:]:
            try:
                prove(holder, ht)
                return
            except _Wider:
                continue
        raise first

    def members(self, old: Mapping, ot: tuple, new: Mapping, nt: tuple) -> None:
        o_props, n_props = old.get("properties") or {}, new.get("properties") or {}
        (o_add, o_add_key), (n_add, n_add_key) = _additional(old), _additional(new)
        o_pat = old.get("patternProperties") or {} if self.dialect == EXTENDED else {}
        n_pat = new.get("patternProperties") or {} if self.dialect == EXTENDED else {}
        if set(o_pat) != set(n_pat):  # the same patterns, as text, match the same names in both
            raise _Wider(_at(new, nt, "patternProperties"), "the patternProperties changed, so the change cannot be proven narrower")
        for source, schema in o_pat.items():
            self.sub(schema, ot + ("patternProperties", source),
                     [(n_pat[source], nt + ("patternProperties", source))], descend=True)
        matchers = []
        for source in o_pat:
            try:
                matchers.append(compile_pattern(source, extended=True))
            except PatternError:
                raise _Wider(_at(new, nt, "patternProperties"), "a patternProperties pattern could not be compiled") from None

        def matched(name: str) -> bool:
            try:
                return any(m(name) for m in matchers)
            except PatternTimeout:
                return True  # unknown: treat as matched, which is the conservative side below

        for name, schema in o_props.items():
            if name in n_props:
                self.sub(schema, ot + ("properties", name), [(n_props[name], nt + ("properties", name))], descend=True)
                continue
            if _trivial(schema):
                continue
            if matched(name):
                raise _Wider(_at(new, nt, "properties"), f'the property "{name}" was removed from properties, so only '
                             "patternProperties constrain it now")
            if _trivial(n_add):
                raise _Wider(_at(new, nt, "properties"), f'the property "{name}" was removed from properties, '
                             "so it may now hold any value")
            self.sub(schema, ot + ("properties", name), [(n_add, nt + (n_add_key,))], descend=True)
        for name, schema in n_props.items():
            if name in o_props or matched(name):
                continue
            if o_add is False and schema is not False:
                try:
                    self.sub(False, ot + (o_add_key,), [(schema, nt + ("properties", name))], descend=True)
                except _Wider:
                    raise _Wider(nt + ("properties", name), f'the property "{name}" was added, and the old schema '
                                 "allowed no additional properties") from None
                continue
            self.sub(o_add, ot + (o_add_key,), [(schema, nt + ("properties", name))], descend=True)
        if o_add is False:
            if n_add is False:
                return
            try:
                self.sub(False, ot + (o_add_key,), [(n_add, nt + (n_add_key,))], descend=True)
            except _Wider:
                raise _Wider(_at(new, nt, n_add_key), "additional properties are accepted now and were refused before") from None
            return
        if _trivial(o_add):
            return
        if _trivial(n_add):
            raise _Wider(_at(new, nt, n_add_key), "additional properties are no longer constrained")
        self.sub(o_add, ot + (o_add_key,), [(n_add, nt + (n_add_key,))], descend=True)

    # --- composition ----------------------------------------------------------------------------

    def any_of(self, old: Mapping, ot: tuple, conj: list, f: _Facts, where: tuple) -> None:
        branches = old["anyOf"]
        if any("anyOf" in s and self.same(branches, s["anyOf"]) for s, _ in f.schemas):
            return
        if self.into_some(branches, ot + ("anyOf",), conj):
            return
        cases = self.split(conj)
        if cases is not None and all(self.into_some(branches, ot + ("anyOf",), case) for case in cases):
            return
        raise _Wider(where, "a value can now match none of the old anyOf alternatives, "
                     "or this could not be proven otherwise")

    def into_some(self, branches: list, at: tuple, conj: list) -> bool:
        for i, branch in enumerate(branches):
            try:
                self.sub(branch, at + (i,), conj)
                return True
            except _Wider:
                continue
        return False

    def one_of(self, old: Mapping, ot: tuple, conj: list, f: _Facts, where: tuple) -> None:
        branches = old["oneOf"]
        if any("oneOf" in s and self.same(branches, s["oneOf"]) for s, _ in f.schemas):
            return
        if self.exactly_one(branches, ot + ("oneOf",), conj):
            return
        cases = self.split(conj)
        if cases is not None and all(self.exactly_one(branches, ot + ("oneOf",), case) for case in cases):
            return
        raise _Wider(where, "the oneOf alternatives changed, and a value might now match none or several of the old ones")

    def exactly_one(self, branches: list, at: tuple, conj: list) -> bool:
        """Contained in one old branch and provably disjoint from every other."""
        for i, branch in enumerate(branches):
            try:
                self.sub(branch, at + (i,), conj)
            except _Wider:
                continue
            if all(self.disjoint(conj, other) for j, other in enumerate(branches) if j != i):
                return True
        return False

    def disjoint(self, conj: list, other: Any) -> bool:
        """Whether no value satisfies both ``conj`` and the old schema ``other`` (sufficient tests only)."""
        mine = self.facts(conj)
        if mine.empty or other is False:
            return True
        if not isinstance(other, Mapping):
            return False
        if "type" in other and mine.types is not None and not _intersect_types(mine.types, _types(other["type"])):
            return True
        if mine.finite is not None:
            values = [v for v in mine.finite[0] if self.new_accepts(conj, v)]
            # The old checker for ``other`` needs its location; the caller's branch tokens are not at hand,
            # so only type and discriminator tests are used below for non-finite values.
            choices = other.get("enum", [other["const"]] if "const" in other else None)
            if choices is not None and not ({equality_key(v) for v in values} & {equality_key(c) for c in choices}):
                return True
        # A discriminator: a property OTHER requires whose allowed values NEW excludes, on objects only.
        if mine.types is not None and mine.types <= {"object"}:
            o_props = other.get("properties") or {}
            for name in other.get("required") or ():
                o_values = self.choices(o_props.get(name))
                if o_values is None:
                    continue
                for s, _ in mine.schemas:
                    n_values = self.choices((s.get("properties") or {}).get(name))
                    if n_values is not None and not (n_values & o_values):
                        return True
        return False

    @staticmethod
    def choices(schema: Any) -> set | None:
        if not isinstance(schema, Mapping):
            return None
        if "const" in schema:
            return {equality_key(schema["const"])}
        if "enum" in schema:
            return {equality_key(c) for c in schema["enum"]}
        return None

    def not_(self, old: Mapping, ot: tuple, conj: list, f: _Facts, where: tuple) -> None:
        excluded = old["not"]
        for s, t in f.schemas:
            if "not" in s:
                if self.same(excluded, s["not"]):
                    return
        if self.disjoint(conj, excluded):
            return
        raise _Wider(where, "the value excluded by the old not schema may now be accepted, "
                     "or this could not be proven otherwise")
