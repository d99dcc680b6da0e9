"""Assembling one closure per schema object from its keywords' checks.

Speed matters here: this closure runs for every value of every tools/call.
So the assembly is specialised: a value whose exact type the `type` keyword
accepts outright skips the call to the type check, only the checks that apply
to the value's type are called, and each node is responsible for its own
value being a JSON value — which a `type` check and a closed object or typed
array establish for free, so well-typed tool schemas never walk the arguments
twice.
"""

from __future__ import annotations

from typing import Any

from .failures import Failure, Invalid
from .json_values import MAX_DEPTH, NotJson, check_json
from .site import Check

JSON_SCALARS = frozenset({str, int, bool, type(None)})
JSON_TYPES = frozenset({str, int, bool, type(None), float, dict, list})


def accept(value: Any) -> None:
    return None


def domain_failure(exc: NotJson) -> Invalid:
    failure = Invalid("", "", exc.reason)
    failure.tokens.extend(reversed(exc.tokens))
    return failure


def check_domain(v: Any) -> Invalid | None:
    """Refuse a value outside the JSON domain (NaN, tuples, non-str keys, too deep…)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return None
    try:
        check_json(v)
    except NotJson as exc:
        return domain_failure(exc)
    return None


check_domain.exact = JSON_SCALARS  # type: ignore[attr-defined]  # these pass without a call
# `passes`: value types a check accepts without looking further, so a parent
# walking properties can skip the call (see keywords.compile_properties).
check_domain.passes = JSON_SCALARS  # type: ignore[attr-defined]


def check_member_domain(v: Any) -> Invalid | None:
    """check_domain for a member of an object or array: one container level is already spent."""
    try:
        check_json(v, MAX_DEPTH - 1)
    except NotJson as exc:
        return domain_failure(exc)
    return None


def check_scalar_domain(v: Any) -> Invalid | None:
    """The leading check of an untyped node whose containers are held to the domain elsewhere.

    Dicts and lists pass it without a call (the node adds a walk only where no
    subschema reaches every part); floats must be finite; any other type is no JSON value.
    """
    t = type(v)
    if t is float:
        if v - v != 0:
            return Invalid("", "", f"{v!r} is not a JSON number (JSON has no NaN or Infinity)")
        return None
    if t in JSON_TYPES:
        return None
    return Invalid("", "", f"a Python {t.__name__} is not a JSON value")


check_scalar_domain.exact = JSON_SCALARS | {dict, list}  # type: ignore[attr-defined]


def trusted(v: Any) -> None:
    """The leading check of an in-place subschema: its parent holds the value to the JSON domain."""
    return None


trusted.exact = trusted.passes = JSON_TYPES  # type: ignore[attr-defined]


def sequence(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks

        def check_both(v: Any) -> Failure | None:
            return first(v) or second(v)

        return check_both
    checks_t = tuple(checks)

    def check_all(v: Any) -> Failure | None:
        for check in checks_t:
            failure = check(v)
            if failure is not None:
                return failure
        return None

    return check_all


def combine(leading: Check, by_type: dict[type, list[Check]], trailing: list[Check]) -> Check:
    """One closure: ``leading`` (type or domain check), then type-specific checks, then the rest.

    ``leading.exact`` names the types that pass it without a call.
    """
    exact: frozenset = leading.exact  # type: ignore[attr-defined]
    specific = {t: sequence(cs) for t, cs in by_type.items()}
    after = sequence(trailing) if trailing else None
    if not specific and after is None:
        if leading is check_domain or leading is trusted:
            return leading

        def check_leading(v: Any) -> Failure | None:
            if type(v) not in exact:
                return leading(v)
            return None

        check_leading.passes = exact  # type: ignore[attr-defined]  # a bare type check
        check_leading.otherwise = leading  # type: ignore[attr-defined]  # what it does for any other type
        return check_leading
    if len(specific) == 1 and after is None:
        (only_type, only), = specific.items()
        if only_type in exact:

            def check_one_type(v: Any) -> Failure | None:
                if type(v) is only_type:
                    return only(v)
                return leading(v)

            return check_one_type
    if after is None and set(specific) == {int, float} and by_type[int] == by_type[float] and int in exact:
        number = specific[int]  # numeric keywords apply to ints and floats alike

        def check_number(v: Any) -> Failure | None:
            if type(v) is int:
                return number(v)
            failure = leading(v)
            if failure is not None or type(v) is not float:
                return failure
            return number(v)

        return check_number
    lookup = specific.get
    if after is None:

        def check_node(v: Any) -> Failure | None:
            t = type(v)
            if t not in exact:
                failure = leading(v)
                if failure is not None:
                    return failure
            check = lookup(t)
            if check is not None:
                return check(v)
            return None

        return check_node

    def check_node_then(v: Any) -> Failure | None:
        t = type(v)
        if t not in exact:
            failure = leading(v)
            if failure is not None:
                return failure
        check = lookup(t)
        if check is not None:
            failure = check(v)
            if failure is not None:
                return failure
        return after(v)

    return check_node_then
