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
import importlib.util
import json
import math
import random
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
CATALOG_DIR = REPO / "fixtures" / "catalogs"
SCRIPTS = REPO / "scripts"

LINE_TERMINATORS = "\n\r\u2028\u2029"


def load_script(name: str) -> Any:
    """Import scripts/<name>.py as a module (scripts/ is not a package)."""
    mod_name = f"_mcp_schema_gate_script_{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module


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
        """Likely-valid arguments, and mutations of them that are likely invalid."""
        valid = self.valid()
        mutated = st.tuples(valid, st.integers(0, 6), ANY_JSON, st.randoms(use_true_random=False)).map(
            lambda t: mutate(*t)
        )
        return st.one_of(valid, mutated)

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

