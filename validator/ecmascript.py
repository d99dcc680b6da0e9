"""ECMAScript's escapes, spelled out as explicit code-point sets (extended dialect).

`regex`'s own \\d, \\w and \\s are Unicode-aware (\\d matches Arabic-Indic
digits), while ECMAScript's are not, even with the u flag. So every class
escape is translated to the exact code points ECMAScript means.
"""

from __future__ import annotations

MAX_CODE_POINT = 0x10FFFF

Ranges = tuple[tuple[int, int], ...]

DIGIT: Ranges = ((0x30, 0x39),)
WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
# WhiteSpace and LineTerminator (ECMA-262 §12.2, §12.3): TAB VT FF SP NBSP ZWNBSP and Zs, plus LF CR LS PS.
SPACE: Ranges = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)


def complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in sorted(ranges):
        if lo > start:
            out.append((start, lo - 1))
        start = max(start, hi + 1)
    if start <= MAX_CODE_POINT:
        out.append((start, MAX_CODE_POINT))
    return tuple(out)


CLASS_ESCAPES: dict[str, Ranges] = {
    "d": DIGIT,
    "D": complement(DIGIT),
    "w": WORD,
    "W": complement(WORD),
    "s": SPACE,
    "S": complement(SPACE),
}

CONTROL_ESCAPES = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}

_WORD_CLASS = "[0-9A-Z_a-z]"
# \b and \B by ECMAScript's definition of a word character (not Unicode's).
ASSERTIONS = {
    "b": f"(?:(?<={_WORD_CLASS})(?!{_WORD_CLASS})|(?<!{_WORD_CLASS})(?={_WORD_CLASS}))",
    "B": f"(?:(?<={_WORD_CLASS})(?={_WORD_CLASS})|(?<!{_WORD_CLASS})(?!{_WORD_CLASS}))",
}


def code_point(cp: int) -> str:
    """A code point as `regex` escape text (safe anywhere, including lone surrogates)."""
    return f"\\U{cp:08x}"


def ranges_text(ranges: Ranges) -> str:
    """Class members (without brackets) for the given ranges."""
    return "".join(code_point(lo) if lo == hi else f"{code_point(lo)}-{code_point(hi)}" for lo, hi in ranges)
