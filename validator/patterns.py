"""`pattern`: the portable regular-expression subset, checked, translated and bounded.

A schema's pattern is ECMAScript syntax, but we match it with the `regex`
engine. Rather than hoping the two agree, a small scanner accepts only the
constructs whose meaning is the same in both (literals, classes, groups,
alternation, normal quantifiers, ^ and $, escaped punctuation) and re-emits
each of them explicitly for `regex` VERSION0. Anything else is refused:

- ``unsupported_capability``: valid ECMAScript outside the subset — other
  ``(?…)`` groups, PCRE verbs ``(*…)``, possessive quantifiers, POSIX classes,
  backreferences, letter or digit escapes (``\\d``, ``\\w``, ``\\b``, ``\\u``,
  ``\\p``, ``\\1`` …), escapes of non-punctuation, patterns over 1,024 UTF-8
  bytes, repeat counts over 1,000 and patterns whose expanded size would exceed
  the compile budget (a memory guard: ``(?:a{1000}){1000}`` compiles to a
  million nodes).
- ``validation``: malformed patterns — unbalanced parentheses, a quantifier with
  nothing to repeat, lone ``{``, ``}`` or ``]``, an unterminated class, a range
  out of order, ``{3,1}``, a trailing backslash.

Matching is a search (unanchored unless the pattern anchors itself) with a
fixed time budget; exhausting it raises PatternTimeout, which the validator
turns into ``execution_failure``.
"""

from __future__ import annotations

from typing import Callable

import regex

from .ecmascript import ASSERTIONS, CLASS_ESCAPES, CONTROL_ESCAPES, MAX_CODE_POINT, code_point, ranges_text
from .errors import UNSUPPORTED, VALIDATION

MAX_PATTERN_BYTES = 1024
MAX_REPEAT = 1000
MAX_EXPANDED_SIZE = 20_000
# Per-search work limit. `regex` checks it while backtracking, so a hostile
# pattern costs at most this long per string before it is reported.
MATCH_TIMEOUT_SECONDS = 0.1

# ECMAScript's `.` excludes exactly these four line terminators (without the s flag).
_DOT = "[^\\n\\r\\u2028\\u2029]"
# ECMAScript's `$` without the m flag is the absolute end of input; `regex`'s `$`
# would also match before a final "\n".
_END = "\\Z"
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")

_LETTER_ESCAPES = {
    "d": "\\d (use [0-9])",
    "D": "\\D (use [^0-9])",
    "w": "\\w (use [A-Za-z0-9_])",
    "W": "\\W (use [^A-Za-z0-9_])",
    "s": "\\s (spell out the whitespace characters in a class)",
    "S": "\\S",
    "b": "the word boundary \\b",
    "B": "\\B",
    "p": "the Unicode property escape \\p{…}",
    "P": "the Unicode property escape \\P{…}",
    "u": "the Unicode escape \\u (write the character itself)",
    "x": "the hex escape \\x (write the character itself)",
    "k": "the named backreference \\k<…>",
}


class PatternError(Exception):
    """The pattern is outside the subset or malformed; ``kind`` says which."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class PatternTimeout(Exception):
    """A search exhausted its work limit: not a mismatch, an execution failure."""


def _unsupported(message: str) -> PatternError:
    return PatternError(UNSUPPORTED, message)


def _malformed(message: str) -> PatternError:
    return PatternError(VALIDATION, message)


def _literal(ch: str) -> str:
    return "\\" + ch if ch in _PUNCTUATION or ch == " " else ch


_HEX = frozenset("0123456789abcdefABCDEF")


def _hex_digits(source: str, i: int, count: int, at: int) -> int:
    digits = source[i:i + count]
    if len(digits) != count or not all(d in _HEX for d in digits):
        raise _malformed(f"the escape at offset {at} needs {count} hex digits")
    return int(digits, 16)


def _escape(source: str, i: int, *, in_class: bool, extended: bool) -> tuple[str, object, int]:
    """Read the escape at source[i] == '\\'.

    Returns (form, payload, next index): ("char", code point, j), ("set", ranges, j)
    or ("assert", regex text, j). The contract dialect admits only escaped ASCII
    punctuation; the extended dialect adds ECMAScript's common escapes with their
    exact ECMAScript meaning.
    """
    n = len(source)
    if i + 1 >= n:
        raise _malformed("the pattern ends with a lone backslash")
    ch = source[i + 1]
    if ch in _PUNCTUATION:
        return "char", ord(ch), i + 2
    if extended:
        if ch in CLASS_ESCAPES:
            return "set", CLASS_ESCAPES[ch], i + 2
        if ch in CONTROL_ESCAPES:
            return "char", CONTROL_ESCAPES[ch], i + 2
        if ch == "b":
            return ("char", 0x08, i + 2) if in_class else ("assert", ASSERTIONS["b"], i + 2)
        if ch == "B":
            if in_class:
                raise _malformed(f"\\B at offset {i} is not allowed inside a class")
            return "assert", ASSERTIONS["B"], i + 2
        if ch == "c" and i + 2 < n and source[i + 2].isascii() and source[i + 2].isalpha():
            return "char", ord(source[i + 2]) % 32, i + 3
        if ch == "0" and not (i + 2 < n and source[i + 2].isdigit()):
            return "char", 0, i + 2
        if ch == "x":
            return "char", _hex_digits(source, i + 2, 2, i), i + 4
        if ch == "u":
            if source.startswith("{", i + 2):
                close = source.find("}", i + 3)
                digits = source[i + 3:close] if close != -1 else ""
                if not digits or not all(d in _HEX for d in digits) or int(digits, 16) > MAX_CODE_POINT:
                    raise _malformed(f"the escape at offset {i} is not a valid \\u{{…}} code point")
                return "char", int(digits, 16), close + 1
            cp = _hex_digits(source, i + 2, 4, i)
            # In Unicode mode an escaped surrogate pair is one code point.
            if 0xD800 <= cp <= 0xDBFF and source.startswith("\\u", i + 6):
                try:
                    low = _hex_digits(source, i + 8, 4, i + 6)
                except PatternError:
                    low = -1
                if 0xDC00 <= low <= 0xDFFF:
                    return "char", 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00), i + 12
            return "char", cp, i + 6
    if ch.isascii() and ch.isdigit():
        what = "the null escape \\0" if ch == "0" else f"the backreference \\{ch}"
        raise _unsupported(f"{what} at offset {i} is outside the portable subset")
    if ch.isascii() and ch.isalpha():
        what = _LETTER_ESCAPES.get(ch, f"the escape \\{ch}")
        hint = "" if extended or ch not in _EXTENDED_ESCAPES else " (the extended dialect supports it)"
        raise _unsupported(f"{what} at offset {i} is outside the portable subset{hint}")
    raise _unsupported(
        f"escaping {ch!r} at offset {i} is outside the portable subset (only ASCII punctuation may be escaped)"
    )


_EXTENDED_ESCAPES = frozenset("dDwWsSbBtnvfrxuc")


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in _PUNCTUATION or ch == " " else ch


def _escaped_char(cp: int) -> str:
    ch = chr(cp)
    return "\\" + ch if ch in _PUNCTUATION else code_point(cp)


def _scan_class(source: str, i: int, extended: bool) -> tuple[str, int]:
    """Translate the class opening at source[i] == '['; return (regex text, index after its ']')."""
    start, n = i, len(source)
    i += 1
    negated = i < n and source[i] == "^"
    if negated:
        i += 1
    # ("c", text, code point, escaped) for one character, ("s", ranges) for a class escape.
    atoms: list[tuple] = []
    while True:
        if i >= n:
            raise _malformed(f"the character class opened at offset {start} is never closed")
        ch = source[i]
        if ch == "]":
            i += 1
            break
        if ch == "[" and i + 1 < n and source[i + 1] in ":=.":
            # [:name:] only counts if this class's own closing ']' follows its delimiter:
            # "[[:a][:]" is two ordinary classes, "[[:a]" and "[:]".
            close = source.find("]", i + 2)
            if close > i + 2 and source[close - 1] == source[i + 1]:
                raise _unsupported(
                    f"the POSIX class {source[i:close + 1]} at offset {i} is outside the portable subset"
                )
        if ch == "\\":
            form, payload, i = _escape(source, i, in_class=True, extended=extended)
            atoms.append(("s", payload) if form == "set" else ("c", _escaped_char(payload), payload, True))
        else:
            atoms.append(("c", _class_char(ch), ord(ch), False))
            i += 1
    if not atoms:
        # ECMAScript: [] matches nothing, [^] matches any character.
        return ("(?s:.)" if negated else "(?!)"), i
    parts = ["[^" if negated else "["]
    k = 0
    # An unescaped '-' between two atoms forms a range; at either end, or right
    # after a range, it is a literal (ECMAScript's ClassRanges grammar).
    while k < len(atoms):
        atom = atoms[k]
        if k + 2 < len(atoms) and atoms[k + 1] == ("c", "\\-", 0x2D, False):
            other = atoms[k + 2]
            if atom[0] == "s" or other[0] == "s":
                raise _malformed(f"a class escape cannot be a range endpoint (class at offset {start})")
            if atom[2] > other[2]:
                raise _malformed(f"the range {chr(atom[2])}-{chr(other[2])} in the class at offset {start} is out of order")
            parts.append(atom[1] + "-" + other[1])
            k += 3
        else:
            parts.append(ranges_text(atom[1]) if atom[0] == "s" else atom[1])
            k += 1
    parts.append("]")
    return "".join(parts), i


_QUANTIFIER_BRACES = regex.compile(r"\{([0-9]+)(?:(,)([0-9]*))?\}")


def translate(source: str, *, extended: bool = False) -> str:
    """Check ``source`` against the portable subset and return the `regex` VERSION0 text.

    Raises PatternError.
    """
    return _translate(source, extended)[0]


def _translate(source: str, extended: bool) -> tuple[str, int, bool]:
    """(regex text, quantifiers + alternatives, whether a quantifier applies to a group).

    Raises PatternError. One left-to-right pass with an explicit group stack, so
    hostile nesting cannot exhaust the interpreter's recursion limit. Alongside,
    it tracks the expanded size (what `regex` will allocate) to refuse patterns
    like ``(?:a{1000}){1000}`` before they are compiled.
    """
    if len(source.encode("utf-8", "surrogatepass")) > MAX_PATTERN_BYTES:
        raise _unsupported(f"the pattern is longer than {MAX_PATTERN_BYTES} UTF-8 bytes")
    out: list[str] = []
    stack: list[tuple[int, int]] = []  # (offset of '(', enclosing level's size)
    size = 0  # expanded size of the current group level so far
    last: int | None = None  # size of the atom a quantifier would repeat, if any
    last_is_group = False
    choices, nested = 0, False  # for the backtracking bound in compile_pattern
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\":
            form, payload, i = _escape(source, i, in_class=False, extended=extended)
            if form == "assert":
                out.append(payload)
                last = None
                continue
            out.append(_escaped_char(payload) if form == "char" else f"[{ranges_text(payload)}]")
            size, last = size + 1, 1
        elif ch == "[":
            text, i = _scan_class(source, i, extended)
            out.append(text)
            size, last = size + 1, 1
        elif ch == ".":
            out.append(_DOT)
            i += 1
            size, last = size + 1, 1
        elif ch == "^" or ch == "$":
            out.append("^" if ch == "^" else _END)
            i += 1
            last = None
        elif ch == "(":
            if source.startswith("(?:", i):
                out.append("(?:")
                i += 3
            elif source.startswith("(?", i):
                raise _unsupported(
                    f"the group {source[i:i + 3]}… at offset {i} is outside the portable subset "
                    "(only (…) and (?:…) groups; no lookaround, named groups or inline flags)"
                )
            elif source.startswith("(*", i):
                raise _unsupported(f"the PCRE verb at offset {i} is outside the portable subset")
            else:
                out.append("(")
                i += 1
            stack.append((i, size))
            size, last = 0, None
        elif ch == ")":
            if not stack:
                raise _malformed(f"the ')' at offset {i} has no matching '('")
            _, outer = stack.pop()
            out.append(")")
            i += 1
            size, last = outer + size, size
            last_is_group = True
            continue
        elif ch == "|":
            out.append("|")
            i += 1
            last = None
            choices += 1
        elif ch in "*+?{":
            if ch == "{":
                m = _QUANTIFIER_BRACES.match(source, i)
                if m is None:
                    raise _malformed(f"the '{{' at offset {i} is not a quantifier; escape a literal brace as \\{{")
                low = int(m.group(1))
                high = low if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                if low > MAX_REPEAT or (high is not None and high > MAX_REPEAT):
                    raise _unsupported(f"the repeat count at offset {i} exceeds {MAX_REPEAT}")
                if high is not None and high < low:
                    raise _malformed(f"the quantifier {m.group(0)} at offset {i} has its numbers out of order")
                token, times = m.group(0), max(low, high or 0, 1)
            else:
                token, times = ch, 1
            if last is None:
                raise _malformed(f"the quantifier {token} at offset {i} has nothing to repeat")
            i += len(token)
            if i < n and source[i] == "+":
                raise _unsupported(f"the possessive quantifier {token}+ at offset {i - len(token)} is outside the portable subset")
            if i < n and source[i] == "?":
                token += "?"
                i += 1
            out.append(token)
            size += last * (times - 1)
            last = None
            choices += 1
            nested = nested or last_is_group
            if size > MAX_EXPANDED_SIZE:
                raise _unsupported(f"the pattern expands beyond {MAX_EXPANDED_SIZE} nodes; simplify its repeat counts")
        elif ch == "}" or ch == "]":
            raise _malformed(f"the lone '{ch}' at offset {i} must be escaped as \\{ch}")
        else:
            out.append(_literal(ch))
            i += 1
            size, last = size + 1, 1
        last_is_group = False
    if stack:
        raise _malformed(f"the '(' at offset {stack[-1][0] - 1} is never closed")
    if size > MAX_EXPANDED_SIZE:
        raise _unsupported(f"the pattern expands beyond {MAX_EXPANDED_SIZE} nodes; simplify its repeat counts")
    return "".join(out), choices, nested


# Backtracking work a search may do without the time limit. With no quantifier
# applied to a group, each quantifier or alternative is one choice of at most
# n + 1 ways, so a search over n characters of a pattern with k choices and m
# characters explores at most about m * (n + 1) ** (k + 1) states.
UNTIMED_WORK_BUDGET = 2_000_000


def compile_pattern(source: str, *, extended: bool = False) -> Callable[[str], bool]:
    """A search predicate for ``source``; raises PatternError, and the predicate PatternTimeout."""
    text, choices, nested = _translate(source, extended)
    try:
        compiled = regex.compile(text, regex.VERSION0)
    except (regex.error, OverflowError, MemoryError) as exc:  # the scanner should make this unreachable
        raise _malformed(f"the pattern does not compile: {exc}") from None
    search = compiled.search
    # Arming the time limit costs about as much as a short search, so a string
    # short enough that the bound above proves the search cheap goes without it.
    untimed = -1 if nested else int((UNTIMED_WORK_BUDGET / max(len(text), 1)) ** (1 / (choices + 1))) - 1

    def matches(value: str) -> bool:
        if len(value) <= untimed:
            return search(value) is not None
        try:
            return search(value, timeout=MATCH_TIMEOUT_SECONDS) is not None
        except TimeoutError:
            raise PatternTimeout() from None

    # For generated code (fastpath.py), which searches short strings without this call.
    matches.search = search  # type: ignore[attr-defined]
    matches.untimed = untimed  # type: ignore[attr-defined]
    return matches
