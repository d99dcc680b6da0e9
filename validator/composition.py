"""Compile functions for the composition keywords: oneOf, anyOf, not.

A branch that fails with an execution failure (a pattern out of its work limit)
is not a mismatch: the answer is unknown, so it propagates instead of counting
as "this branch did not match".
"""

from __future__ import annotations

from typing import Any

from .errors import EXECUTION_FAILURE
from .fastpath import Unknown
from .failures import Failure, Invalid
from .json_values import describe
from .keywords import CONTRACT
from .patterns import PatternTimeout
from .site import Check, Site


def _branches(value: Any, site: Site) -> tuple[Check, ...]:
    return tuple(site.sub(branch, i) for i, branch in enumerate(site.array(value, non_empty=True)))


def _predicates(value: list, site: Site) -> list:
    """Filled after compilation with one yes/no predicate per branch (see fastpath.generate).

    A composition that passes then builds no failure for its losing branches: their
    messages are formatted only when the whole composition fails and must explain itself.
    """
    holder: list = []
    site.compiler.compositions.append((holder, site.tokens, value))
    return holder


# A predicate that cannot give a plain yes or no raises one of these; the branch
# closures are then asked, and they report the execution failure.
_UNKNOWN = (PatternTimeout, Unknown, RecursionError)


def compile_one_of(value: Any, site: Site) -> Check:
    branches, path = _branches(value, site), site.path
    n = len(branches)
    predicates = _predicates(value, site)

    def check_one_of(v: Any) -> Failure | None:
        if predicates:
            try:
                hits = [i for i, matches in enumerate(predicates) if matches(v)]
            except _UNKNOWN:
                pass
            else:
                if len(hits) == 1:
                    return None
                if hits:
                    return Invalid(
                        "oneOf", path,
                        f"{describe(v)} matches more than one of the {n} alternatives (at least {hits[0]} and {hits[1]}); "
                        "it must match exactly one",
                    )
        matched: list[int] = []
        failures: list[Failure] = []
        for i, branch in enumerate(branches):
            failure = branch(v)
            if failure is not None:
                if failure.kind is EXECUTION_FAILURE:
                    return failure  # not a mismatch: the answer is unknown
                failures.append(failure)
                continue
            matched.append(i)
            if len(matched) > 1:
                return Invalid(
                    "oneOf", path,
                    f"{describe(v)} matches more than one of the {n} alternatives (at least {matched[0]} and {matched[1]}); "
                    "it must match exactly one",
                )
        if not matched:
            return Invalid("oneOf", path, f"{describe(v)} matches none of the {n} alternatives (exactly one must match):",
                           failures)
        return None

    return check_one_of


def compile_any_of(value: Any, site: Site) -> Check:
    if "oneOf" in site.schema and site.dialect == CONTRACT:
        raise site.unsupported("oneOf and anyOf in the same schema object are outside the subset")
    branches, path = _branches(value, site), site.path
    n = len(branches)
    predicates = _predicates(value, site)

    def check_any_of(v: Any) -> Failure | None:
        if predicates:
            try:
                for matches in predicates:
                    if matches(v):
                        return None
            except _UNKNOWN:
                pass
        failures: list[Failure] = []
        for branch in branches:
            failure = branch(v)
            if failure is None:
                return None
            if failure.kind is EXECUTION_FAILURE:
                return failure
            failures.append(failure)
        return Invalid("anyOf", path, f"{describe(v)} matches none of the {n} alternatives (at least one must match):",
                       failures)

    return check_any_of


def compile_not(value: Any, site: Site) -> Check:
    check, path = site.sub(value), site.path

    def check_not(v: Any) -> Failure | None:
        failure = check(v)
        if failure is None:
            return Invalid("not", path, f"{describe(v)} must not match the schema at {path}")
        return failure if failure.kind is EXECUTION_FAILURE else None

    return check_not
