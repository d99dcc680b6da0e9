"""Shared helpers for the captured-catalog tests: loading the scripts, and a
schema-driven hypothesis strategy generator for tool arguments.

The generator is deliberately small. It aims at arguments that are *likely*
valid (drawn from the schema) plus mutations that are *likely* invalid; the
differential test never trusts the generator's opinion — validity is whatever
``jsonschema.Draft202012Validator`` says, and our validator must say the same.

Patterns: every generated string avoids LF, CR, U+2028 and U+2029. Those are the
only characters on which the contract's ECMAScript pattern semantics (``.`` does
not match line terminators, ``$`` is end of input) and Python ``re.search`` (what
jsonschema uses) differ for the portable pattern subset. Strings under a
``pattern`` are drawn with ``hypothesis.strategies.from_regex`` over a printable
ASCII alphabet (so ``\\d``/``\\w`` of the extended dialect cannot meet Unicode
digits/letters on which ECMAScript and Python disagree), and then filtered by
the string length bounds. Pattern semantics themselves are covered by the
validator's own pattern tests, not here.
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
CATALOG_DIR = REPO / "fixtures" / "catalogs"
SCRIPTS = REPO / "scripts"

LINE_TERMINATORS = "\n\r\u2028\u2029"

# section -> counter name -> count; printed by conftest.py after the run.
EVIDENCE: dict[str, dict[str, int]] = {}


def count(section: str, name: str, n: int = 1) -> None:
    bucket = EVIDENCE.setdefault(section, {})
    bucket[name] = bucket.get(name, 0) + n


def load_script(name: str) -> Any:
    """scripts/<name>.py, imported as the package module `scripts.<name>`."""
    return importlib.import_module(f"scripts.{name}")


# --------------------------------------------------------------------------- JSON values

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=LINE_TERMINATORS), max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**6), max_value=10**6)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)
ANY_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_TEXT, children, max_size=3),
    max_leaves=6,
)
_PATTERN_ALPHABET = st.characters(min_codepoint=0x20, max_codepoint=0x7E)

MAX_DEPTH = 8


def _regex_minimal(pattern: str) -> str | None:
    """A short string built from the regex's parse tree (first branch, minimum repeats)."""
    try:
        import re._parser as sre_parse  # Python >= 3.11
        from re._constants import (
            ANY, AT, BRANCH, CATEGORY, CATEGORY_DIGIT, CATEGORY_SPACE, CATEGORY_WORD, IN, LITERAL,
            MAX_REPEAT, MIN_REPEAT, NEGATE, NOT_LITERAL, RANGE, SUBPATTERN,
        )
    except ImportError:  # pragma: no cover
        return None

    def pick_in(items: list[Any]) -> str | None:
        negate = any(op is NEGATE for op, _ in items)
        allowed: list[str] = []
        for op, av in items:
            if op is LITERAL:
                allowed.append(chr(av))
            elif op is RANGE:
                allowed.append(chr(av[0]))
            elif op is CATEGORY:
                allowed.append({CATEGORY_DIGIT: "0", CATEGORY_WORD: "a", CATEGORY_SPACE: " "}.get(av, "a"))
        if not negate:
            return allowed[0] if allowed else None
        return next((c for c in "a0 _-.xZ" if c not in allowed), None)

    def build(tree: Any) -> str | None:
        out = []
        for op, av in tree:
            if op is LITERAL:
                out.append(chr(av))
            elif op is NOT_LITERAL:
                out.append("a" if chr(av) != "a" else "b")
            elif op is ANY:
                out.append("a")
            elif op is AT:
                continue
            elif op is IN:
                c = pick_in(av)
                if c is None:
                    return None
                out.append(c)
            elif op is BRANCH:
                part = build(av[1][0])
                if part is None:
                    return None
                out.append(part)
            elif op is SUBPATTERN:
                part = build(av[-1])
                if part is None:
                    return None
                out.append(part)
            elif op in (MAX_REPEAT, MIN_REPEAT):
                lo, _hi, sub = av
                part = build(sub)
                if part is None:
                    return None
                out.append(part * lo)
            elif op is CATEGORY:
                out.append({CATEGORY_DIGIT: "0", CATEGORY_WORD: "a", CATEGORY_SPACE: " "}.get(av, "a"))
            else:
                return None
        return "".join(out)

    try:
        return build(sre_parse.parse(pattern))
    except Exception:  # noqa: BLE001 - anything unusual: no example
        return None


def _pattern_example(pattern: str, min_len: int, max_len: Any) -> str | None:
    """A short string matching ``pattern`` within the length bounds, or None."""
    try:
        rx = re.compile(pattern)
    except re.error:
        return None
    for candidate in (_regex_minimal(pattern), "a" * min_len, "x"):
        if (
            candidate is not None
            and not any(c in candidate for c in LINE_TERMINATORS)
            and rx.search(candidate) is not None
            and len(candidate) >= min_len
            and (not isinstance(max_len, int) or len(candidate) <= max_len)
        ):
            return candidate
    return None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _merge(base: Mapping[str, Any], extra: Any) -> dict[str, Any]:
    """Shallow conjunction of two schemas, good enough for *generation* only."""
    if not isinstance(extra, Mapping):
        return dict(base)
    out = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(out.get("properties"), Mapping) and isinstance(value, Mapping):
            out["properties"] = {**out["properties"], **value}
        elif key == "required" and isinstance(out.get("required"), list) and isinstance(value, list):
            out["required"] = list(dict.fromkeys([*out["required"], *value]))
        else:
            out[key] = value
    return out


class ArgumentStrategies:
    """Strategies for JSON values drawn from one tool's ``inputSchema``."""

    def __init__(self, root: Any) -> None:
        self.root = root

    # -- refs -----------------------------------------------------------------
    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return True
        node: Any = self.root
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                node = node[int(part)]
            elif isinstance(node, Mapping) and part in node:
                node = node[part]
            else:
                return True
        return node

    # -- entry points ---------------------------------------------------------
    def valid(self, schema: Any = None, depth: int = 0) -> st.SearchStrategy[Any]:
        schema = self.root if schema is None and depth == 0 else schema
        if schema is True or schema is None or depth > MAX_DEPTH:
            return ANY_JSON
        if schema is False or not isinstance(schema, Mapping):
            return ANY_JSON
        if "$ref" in schema and isinstance(schema["$ref"], str):
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return self.valid(_merge(rest, self._resolve(schema["$ref"])) if rest else self._resolve(schema["$ref"]), depth + 1)
        if "const" in schema:
            return st.just(copy.deepcopy(schema["const"]))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return st.sampled_from(schema["enum"]).map(copy.deepcopy)
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for branch in schema["allOf"]:
                if isinstance(branch, Mapping) and "$ref" in branch and isinstance(branch["$ref"], str):
                    branch = self._resolve(branch["$ref"])
                merged = _merge(merged, branch)
            return self.valid(merged, depth + 1)
        for comb in ("oneOf", "anyOf"):
            if isinstance(schema.get(comb), list) and schema[comb]:
                rest = {k: v for k, v in schema.items() if k != comb}
                branches = [self.valid(_merge(rest, b), depth + 1) for b in schema[comb]]
                return st.one_of(branches)
        types = schema.get("type")
        if isinstance(types, str):
            types = [types]
        if not isinstance(types, list) or not types:
            types = self._inferred_types(schema)
        if not types:
            return ANY_JSON
        return st.one_of([self._typed(t, schema, depth) for t in types])

    def arguments(self) -> st.SearchStrategy[Any]:
        """Likely-valid arguments, targeted violations of one constraint, and blind mutations."""
        valid = self.valid()
        rnd = st.randoms(use_true_random=False)
        targeted = st.tuples(valid, rnd).map(lambda t: self.violate(t[0], t[1]))
        mutated = st.tuples(valid, st.integers(0, 6), ANY_JSON, rnd).map(lambda t: mutate(*t))
        return st.one_of(valid, targeted, mutated)

    # -- targeted violations ----------------------------------------------------
    def _flatten(self, schema: Any, depth: int = 0) -> Any:
        """Resolve a ``$ref`` and fold ``allOf`` so a site's own assertions are visible."""
        for _ in range(MAX_DEPTH):
            if isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = _merge(rest, self._resolve(schema["$ref"])) if rest else self._resolve(schema["$ref"])
            else:
                break
        if isinstance(schema, Mapping) and isinstance(schema.get("allOf"), list) and depth < MAX_DEPTH:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for branch in schema["allOf"]:
                merged = _merge(merged, self._flatten(branch, depth + 1))
            return merged
        return schema

    def _sites(self, value: Any, schema: Any, out: list[tuple[Any, Any, Any]], holder: Any = None, key: Any = None, depth: int = 0) -> None:
        """(holder, key, subschema) for every node of ``value`` whose governing schema is known."""
        schema = self._flatten(schema)
        if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
            return
        out.append((holder, key, schema))
        if isinstance(value, dict):
            props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
            for name, sub in props.items():
                if name in value:
                    self._sites(value[name], sub, out, value, name, depth + 1)
        elif isinstance(value, list):
            items = schema.get("items")
            prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
            for i, item in enumerate(value):
                sub = prefix[i] if i < len(prefix) else items
                if isinstance(sub, Mapping):
                    self._sites(item, sub, out, value, i, depth + 1)

    @staticmethod
    def _violations(schema: Mapping[str, Any], current: Any) -> list[Any]:
        """Replacement values for ``current`` that each break one assertion of ``schema``."""
        out: list[Any] = []
        types = schema.get("type")
        types = [types] if isinstance(types, str) else types if isinstance(types, list) else None
        if types:
            samples = {"null": None, "boolean": True, "integer": 7, "number": 0.5, "string": "x", "array": [], "object": {}}
            for name, sample in samples.items():
                allowed = name in types or (name == "integer" and "number" in types)
                if not allowed:
                    out.append(sample)
        for comb in ("oneOf", "anyOf"):
            branches = schema.get(comb)
            if isinstance(branches, list) and branches and not types:
                branch_types: set[str] = set()
                for b in branches:
                    bt = b.get("type") if isinstance(b, Mapping) else None
                    if isinstance(bt, str):
                        branch_types.add(bt)
                    elif isinstance(bt, list):
                        branch_types.update(x for x in bt if isinstance(x, str))
                    else:
                        branch_types = set()
                        break
                if branch_types:
                    samples = {"null": None, "boolean": True, "integer": 7, "number": 0.5, "string": "x", "array": [], "object": {}}
                    out += [v for name, v in samples.items()
                            if name not in branch_types and not (name == "integer" and "number" in branch_types)]
        for key in ("enum", "const"):
            choices = schema.get(key) if key == "enum" else [schema.get(key)] if "const" in schema else None
            if isinstance(choices, list) and choices:
                for c in choices:
                    for cand in ((c + "_") if isinstance(c, str) else (c + 1) if _is_number(c) else None,):
                        if cand is not None and all(cand != e or type(cand) is not type(e) for e in choices):
                            out.append(cand)
                out.append("__not_a_choice__")
        int_only = types == ["integer"]
        for key, delta in (("minimum", -1), ("maximum", 1)):
            bound = schema.get(key)
            if _is_number(bound):
                out.append((math.floor(bound) - 1 if delta < 0 else math.ceil(bound) + 1) if int_only else bound + delta * 0.5)
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = schema.get(key)
            if _is_number(bound) and (not int_only or float(bound).is_integer()):
                out.append(int(bound) if int_only else bound)
        mult = schema.get("multipleOf")
        if _is_number(mult) and mult > 0:
            out.append(mult * 3 + (1 if isinstance(mult, int) and mult > 1 else mult / 2))
        n = schema.get("minLength")
        if isinstance(n, int) and n > 0:
            out.append("a" * (n - 1))
        n = schema.get("maxLength")
        if isinstance(n, int):
            out.append("\U0001F600" * (n + 1))  # one code point each, two UTF-16 units
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                rx = re.compile(pattern)
                out += [c for c in ("", "x", "0", " ", "-", "ZZ", "a b", "é", "_:_", "https") if not rx.search(c)][:3]
            except re.error:
                pass
        items = current if isinstance(current, list) else []
        n = schema.get("minItems")
        if isinstance(n, int) and n > 0:
            out.append(items[: n - 1])
        n = schema.get("maxItems")
        if isinstance(n, int):
            filler = items[0] if items else None
            out.append(items + [copy.deepcopy(filler) for _ in range(n + 1 - len(items))])
        if schema.get("uniqueItems") is True and items:
            out.append(items + [copy.deepcopy(items[0])])
        if isinstance(current, dict):
            required = [r for r in schema.get("required", []) if isinstance(r, str) and r in current] if isinstance(schema.get("required"), list) else []
            for r in required[:3]:
                out.append({k: v for k, v in current.items() if k != r})
            if schema.get("additionalProperties", schema.get("additional_properties")) is False:
                out.append({**current, "zz_unexpected": 1})
        return out

    def violate(self, value: Any, rnd: random.Random) -> Any:
        """Break one assertion at one randomly chosen node of a (likely valid) value."""
        value = copy.deepcopy(value)
        sites: list[tuple[Any, Any, Any]] = []
        self._sites(value, self.root, sites)
        rnd.shuffle(sites)
        for holder, key, schema in sites:
            current = value if holder is None else holder[key]
            choices = self._violations(schema, current)
            if not choices:
                continue
            replacement = copy.deepcopy(rnd.choice(choices))
            if holder is None:
                return replacement
            holder[key] = replacement
            return value
        return value

    # -- deterministic boundary cases ------------------------------------------
    def exemplar(self, schema: Any = None, depth: int = 0, full: bool = True) -> Any:
        """A deterministic, likely-valid value: every property present when ``full``."""
        schema = self._flatten(self.root if schema is None and depth == 0 else schema)
        if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
            return "x"
        if "const" in schema:
            return copy.deepcopy(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return copy.deepcopy(schema["enum"][0])
        for comb in ("oneOf", "anyOf"):
            if isinstance(schema.get(comb), list) and schema[comb]:
                rest = {k: v for k, v in schema.items() if k != comb}
                return self.exemplar(_merge(rest, self._flatten(schema[comb][0])), depth + 1, full)
        types = schema.get("type")
        types = [types] if isinstance(types, str) else types if isinstance(types, list) and types else self._inferred_types(schema)
        t = next((x for x in types if x != "null"), types[0] if types else None)
        if t == "object" or (t is None and depth == 0):
            props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
            required = [r for r in schema.get("required", []) if isinstance(r, str)] if isinstance(schema.get("required"), list) else []
            addl = schema.get("additionalProperties", True)
            out = {name: self.exemplar(sub, depth + 1, full) for name, sub in props.items() if full or name in required}
            for name in required:
                if name not in out:
                    out[name] = self.exemplar(addl, depth + 1, full) if isinstance(addl, Mapping) else "x"
            return out
        if t == "array":
            lo = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
            hi = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
            n = max(lo, 1) if hi is None else min(max(lo, 1), hi)
            items = schema.get("items", True)
            return [self.exemplar(items, depth + 1, full) for _ in range(n)]
        if t == "string":
            lo = schema.get("minLength") if isinstance(schema.get("minLength"), int) else 0
            pattern = schema.get("pattern")
            if isinstance(pattern, str):
                found = _pattern_example(pattern, lo, schema.get("maxLength"))
                if found is not None:
                    return found
            return "a" * max(lo, 1)
        if t in ("integer", "number"):
            lo, hi, lo_ex, hi_ex = self._bounds(schema)
            if lo is not None:
                v = math.floor(lo) + 1 if lo_ex else math.ceil(lo)
            elif hi is not None:
                v = math.ceil(hi) - 1 if hi_ex else math.floor(hi)
            else:
                v = 1
            return v if t == "integer" or lo is None or not lo_ex else lo + 0.5
        if t == "boolean":
            return True
        if t == "null":
            return None
        return "x"

    @staticmethod
    def _edges(schema: Mapping[str, Any], current: Any) -> list[Any]:
        """Values exactly on an inclusive bound (valid as far as that bound goes)."""
        out: list[Any] = []
        for key in ("minimum", "maximum"):
            if _is_number(schema.get(key)):
                out.append(schema[key])
                if isinstance(schema[key], int) and abs(schema[key]) < 2**53:
                    out.append(float(schema[key]))
        n = schema.get("minLength")
        if isinstance(n, int):
            out.append("\U0001F600" * n)
        n = schema.get("maxLength")
        if isinstance(n, int):
            out.append("\U0001F600" * n)
        if isinstance(current, list) and current:
            for key in ("minItems", "maxItems"):
                n = schema.get(key)
                if isinstance(n, int):
                    out.append([copy.deepcopy(current[i % len(current)]) for i in range(n)])
        return out

    def boundary_cases(self, limit: int = 600) -> list[Any]:
        """Deterministic cases: exemplars, then each violation and edge value at every site."""
        cases: list[Any] = []
        for full in (True, False):
            base = self.exemplar(full=full)
            cases.append(copy.deepcopy(base))
            sites: list[tuple[Any, Any, Any]] = []
            self._sites(base, self.root, sites)
            for holder, key, schema in sites:
                current = base if holder is None else holder[key]
                for replacement in [*self._violations(schema, current), *self._edges(schema, current)]:
                    if holder is None:
                        cases.append(copy.deepcopy(replacement))
                    else:
                        saved = holder[key]
                        holder[key] = copy.deepcopy(replacement)
                        cases.append(copy.deepcopy(base))
                        holder[key] = saved
                    if len(cases) >= limit:
                        return cases
        return cases

    # -- helpers --------------------------------------------------------------
    @staticmethod
    def _inferred_types(schema: Mapping[str, Any]) -> list[str]:
        keys = set(schema)
        if keys & {"properties", "required", "additionalProperties", "propertyNames", "minProperties", "maxProperties", "patternProperties"}:
            return ["object"]
        if keys & {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}:
            return ["array"]
        if keys & {"minLength", "maxLength", "pattern", "format"}:
            return ["string"]
        if keys & {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}:
            return ["number"]
        return []

    def _typed(self, t: Any, schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
        if t == "null":
            return st.none()
        if t == "boolean":
            return st.booleans()
        if t == "integer":
            return self._integer(schema)
        if t == "number":
            return self._number(schema)
        if t == "string":
            return self._string(schema)
        if t == "array":
            return self._array(schema, depth)
        if t == "object":
            return self._object(schema, depth)
        return ANY_JSON

    @staticmethod
    def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, float | None, bool, bool]:
        lo = schema.get("minimum") if _is_number(schema.get("minimum")) else None
        hi = schema.get("maximum") if _is_number(schema.get("maximum")) else None
        lo_ex = hi_ex = False
        emin, emax = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if _is_number(emin) and (lo is None or emin >= lo):
            lo, lo_ex = emin, True
        if _is_number(emax) and (hi is None or emax <= hi):
            hi, hi_ex = emax, True
        return lo, hi, lo_ex, hi_ex

    def _integer(self, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
        lo, hi, lo_ex, hi_ex = self._bounds(schema)
        ilo = None if lo is None else (math.floor(lo) + 1 if lo_ex else math.ceil(lo))
        ihi = None if hi is None else (math.ceil(hi) - 1 if hi_ex else math.floor(hi))
        if ilo is not None and ihi is not None and ilo > ihi:
            return st.integers()
        ints = st.integers(min_value=ilo, max_value=ihi)
        mult = schema.get("multipleOf")
        if isinstance(mult, int) and not isinstance(mult, bool) and mult > 0:
            ints = ints.map(lambda v: v - v % mult)
        # An integral float is an integer in JSON Schema 2020-12.
        return ints | ints.filter(lambda v: abs(v) < 2**53).map(float)

    def _number(self, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
        lo, hi, lo_ex, hi_ex = self._bounds(schema)
        if lo is not None and hi is not None and lo > hi:
            return st.floats(allow_nan=False, allow_infinity=False)
        floats = st.floats(
            min_value=lo, max_value=hi, exclude_min=lo_ex and lo is not None, exclude_max=hi_ex and hi is not None,
            allow_nan=False, allow_infinity=False,
        )
        return floats | self._integer(schema)

    def _string(self, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
        min_len = schema.get("minLength") if isinstance(schema.get("minLength"), int) else 0
        max_len = schema.get("maxLength") if isinstance(schema.get("maxLength"), int) else None
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                compiled = re.compile(pattern)
                # Python's `$` also matches before a final "\n", so from_regex may append one;
                # ECMAScript's does not. Drop it: the match at end of input remains.
                base = st.from_regex(compiled, alphabet=_PATTERN_ALPHABET).map(lambda s: s.rstrip("\n"))
            except Exception:  # noqa: BLE001 - not a Python regex: fall back to plain ASCII text
                base = st.text(alphabet=_PATTERN_ALPHABET, max_size=12)
            return base.filter(lambda s: len(s) >= min_len and (max_len is None or len(s) <= max_len)) | st.text(
                alphabet=_PATTERN_ALPHABET, min_size=min_len, max_size=max(min_len, max_len or min_len + 12)
            )
        upper = max_len if max_len is not None else min_len + 12
        return st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=LINE_TERMINATORS),
            min_size=min_len,
            max_size=max(min_len, upper),
        )

    def _array(self, schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
        min_items = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
        max_items = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
        upper = min_items + 3 if max_items is None else min(max_items, min_items + 3)
        items = schema.get("items", True)
        item_strategy = self.valid(items, depth + 1) if isinstance(items, (Mapping, bool)) else ANY_JSON
        prefix = schema.get("prefixItems")
        unique = schema.get("uniqueItems") is True
        lists = st.lists(
            item_strategy, min_size=min_items, max_size=max(min_items, upper),
            unique_by=(lambda v: json.dumps(v, sort_keys=True)) if unique else None,
        )
        if isinstance(prefix, list) and prefix:
            head = st.tuples(*[self.valid(p, depth + 1) for p in prefix]).map(list)
            return st.tuples(head, lists).map(lambda hl: hl[0] + hl[1])
        return lists

    def _object(self, schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
        props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
        required = [r for r in schema.get("required", []) if isinstance(r, str)] if isinstance(schema.get("required"), list) else []
        addl = schema.get("additionalProperties", schema.get("additional_properties", True))
        extra_value = self.valid(addl, depth + 1) if isinstance(addl, Mapping) else ANY_JSON
        req = {name: (self.valid(props[name], depth + 1) if name in props else extra_value) for name in required}
        opt = {name: self.valid(sub, depth + 1) for name, sub in props.items() if name not in req}
        base = st.fixed_dictionaries(req, optional=opt)
        if addl is False:
            return base
        extras = st.dictionaries(
            _TEXT.filter(lambda k: k not in props), extra_value, max_size=2
        )
        return st.tuples(base, extras).map(lambda be: {**be[1], **be[0]})


# --------------------------------------------------------------------------- mutations


def _containers(value: Any, out: list[Any]) -> list[Any]:
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            _containers(v, out)
    elif isinstance(value, list):
        out.append(value)
        for v in value:
            _containers(v, out)
    return out


def _type_shift(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return str(value) if value % 2 else float(value) + 0.5
    if isinstance(value, float):
        return True
    if isinstance(value, str):
        return len(value)
    if value is None:
        return ""
    if isinstance(value, list):
        return {"0": value[0]} if value else {}
    return [value]


def mutate(value: Any, how: int, junk: Any, rnd: random.Random) -> Any:
    """Perturb a (likely valid) value so that it is likely invalid."""
    value = copy.deepcopy(value)
    if how == 0:
        return junk if not isinstance(junk, dict) else [junk]  # not an object at all
    containers = _containers(value, [])
    if not containers:
        return junk
    target = rnd.choice(containers)
    if isinstance(target, dict):
        keys = list(target)
        if how == 6 and keys:
            del target[rnd.choice(keys)]  # drop a (maybe required) property
        elif how in (1, 2) and keys:
            key = rnd.choice(keys)
            target[key] = junk if how == 1 else _type_shift(target[key])
        elif how == 3 and keys:
            key = rnd.choice(keys)
            if isinstance(target[key], (int, float)) and not isinstance(target[key], bool):
                target[key] = target[key] + rnd.choice([-1, 1]) * rnd.choice([1, 10**6, 0.5])
            elif isinstance(target[key], str):
                target[key] = target[key][: len(target[key]) // 2] if target[key] else "x" * 300
            else:
                target[key] = _type_shift(target[key])
        else:
            target[f"unexpected_{how}"] = junk
    else:
        if how == 6 and target:
            target.pop(rnd.randrange(len(target)))
        elif how in (1, 2) and target:
            i = rnd.randrange(len(target))
            target[i] = junk if how == 1 else _type_shift(target[i])
        else:
            target.append(junk)
    return value


def json_roundtrip_ok(value: Any) -> bool:
    """True when ``value`` survives JSON encoding unchanged (no NaN etc.)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False)) == value
    except (TypeError, ValueError):
        return False

