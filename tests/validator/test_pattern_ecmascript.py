"""ECMAScript differential for `pattern`: our translation on `regex` against node's RegExp.

Every comparison asks the same question of both engines: does ``new RegExp(p,
"u").test(s)`` (node) equal ``validator.patterns.compile_pattern(p)(s)`` (us)?
Each batch of cases is evaluated in ONE node subprocess (JSON on stdin, JSON on
stdout).

In Unicode mode node's search is spelled out as the specification's loop
(RegExpBuiltinExec with AdvanceStringIndex): a sticky copy of the expression
is tried at each code-point boundary in turn. node's own ``test`` also tries
the position inside a surrogate pair, where a zero-width ``\\B`` then
matches (``/\\B/u.test("a😀_")`` is true in node 20, false by the
specification: a V8 bug, fixed upstream); those answers are counted as
evidence, not taken as the reference.

Node is expected on the machine; if it is missing these tests skip with a loud
message (REQUIRE_NODE=1 turns that into a failure).

Escaped punctuation. The contract's subset allows any escaped ASCII punctuation
(``\\:``, ``\\-``, ``\\@`` …), but ECMAScript's Unicode mode only allows identity
escapes of its syntax characters ``^$\\.*+?()[]{}|`` and ``/`` (plus ``\\-``
inside a class); ``new RegExp("\\:", "u")`` is a SyntaxError. What the subset
means by ``\\:`` is the literal ``:`` — what ECMAScript gives it without the u
flag. So node evaluates three forms of each pattern:

- ``u``: the pattern as written, Unicode mode;
- ``portable``: the pattern with each such escape rewritten to the equivalent
  code-point escape (``\\:`` → ``\\u{3a}``), Unicode mode — identical to ``u``
  whenever ``u`` compiles, and the reference we compare with;
- ``legacy``: the pattern as written, without the u flag. Where ``u`` rejects the
  pattern only for such an escape and pattern and strings are BMP-only (so
  UTF-16 code units are code points), ``legacy`` must agree as well.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from validator import UNSUPPORTED, VALIDATION
from validator.patterns import PatternError, compile_pattern

SECTION = "ECMAScript pattern differential (node)"
NODE = shutil.which("node")

NODE_SCRIPT = r"""
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  // The specification's search: start positions advance by code point in Unicode mode.
  const search = (sticky, s) => {
    for (let i = 0; ; ) {
      sticky.lastIndex = i;
      if (sticky.test(s)) return true;
      if (i >= s.length) return false;
      i += s.codePointAt(i) > 0xffff ? 2 : 1;
    }
  };
  const run = (source, flags, strings) => {
    let re;
    try { re = new RegExp(source, flags); } catch (e) { return { error: String(e.message) }; }
    if (!flags.includes('u')) return { results: strings.map((s) => re.test(s)) };
    const sticky = new RegExp(source, flags + 'y');
    return { results: strings.map((s) => search(sticky, s)), own: strings.map((s) => re.test(s)) };
  };
  const out = cases.map((c) => ({
    u: run(c.pattern, 'u', c.strings),
    portable: run(c.portable, 'u', c.strings),
    legacy: run(c.pattern, '', c.strings),
  }));
  process.stdout.write(JSON.stringify(out));
});
"""

# ECMAScript SyntaxCharacter plus "/": the identity escapes Unicode mode allows everywhere.
_U_IDENTITY = frozenset("^$\\.*+?()[]{}|/")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def portable(pattern: str) -> str:
    """``pattern`` with escaped punctuation that u-mode refuses spelled as \\u{…} (same meaning)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            allowed = nxt in _U_IDENTITY or (in_class and nxt == "-")
            out.append(f"\\u{{{ord(nxt):x}}}" if nxt in _PUNCTUATION and not allowed else ch + nxt)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def node_batch(cases: list[tuple[str, list[str]]]) -> list[dict]:
    """Evaluate every (pattern, strings) case in one node process."""
    payload = json.dumps(
        [{"pattern": p, "portable": portable(p), "strings": strings} for p, strings in cases], ensure_ascii=True
    )
    done = subprocess.run(
        [NODE, "-e", NODE_SCRIPT], input=payload.encode("ascii"), capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"node failed: {done.stderr.decode(errors='replace')}"
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def node(evidence):
    if NODE is None:
        reason = "node is not on PATH: the ECMAScript pattern differential DID NOT RUN"
        print("\n" + "!" * 78 + f"\n!!! {reason}\n" + "!" * 78)
        evidence.note(SECTION, "SKIPPED: " + reason)
        if os.environ.get("REQUIRE_NODE") == "1":
            pytest.fail(reason + " and REQUIRE_NODE=1")
        pytest.skip(reason)
    version = subprocess.run([NODE, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    evidence.note(SECTION, f"node {version} at {NODE}")
    return node_batch


def ours(pattern: str, extended: bool = False) -> Any:
    """Our predicate, or the PatternError preflight raises."""
    try:
        return compile_pattern(pattern, extended=extended)
    except PatternError as exc:
        return exc


def _bmp(text: str) -> bool:
    return all(ord(c) < 0x10000 for c in text)


def compare(node_batch, cases: list[tuple[str, list[str]]], evidence, label: str, *, strict: bool = True,
            extended: bool = False) -> list[str]:
    """Compare every pair; return the discrepancies (as readable lines).

    ``strict``: every pattern must be in the subset. Otherwise (generated
    patterns) a pattern that node rejects too is merely counted, since a
    grammar that joins class atoms freely can spell an out-of-order range.
    """
    problems: list[str] = []
    for (pattern, strings), seen in zip(cases, node_batch(cases)):
        matches = ours(pattern, extended)
        if isinstance(matches, PatternError):
            if not strict and matches.kind == VALIDATION and "error" in seen["portable"]:
                evidence.count(SECTION, f"{label} patterns malformed for both")
                continue
            problems.append(f"{pattern!r}: in-subset pattern refused by preflight ({matches.kind}: {matches.message})")
            continue
        reference = seen["portable"]
        if "error" in reference:
            problems.append(f"{pattern!r}: we accept it, node (u-mode) rejects it: {reference['error']}")
            continue
        if "error" in seen["u"]:
            evidence.count(SECTION, f"{label} patterns only valid after \\u{{}} rewrite of escaped punctuation")
            # Without letter escapes (the contract subset), legacy mode must agree on BMP-only text;
            # extended escapes such as \u{…} mean something else there, so it is not consulted.
            if not extended and _bmp(pattern) and all(_bmp(s) for s in strings):
                legacy = seen["legacy"]
                if legacy.get("results") != reference["results"]:
                    problems.append(f"{pattern!r}: non-u mode disagrees with u-mode portable form: {legacy}")
        for s, expected, own in zip(strings, reference["results"], reference["own"]):
            if own != expected:
                evidence.count(SECTION, f"{label} pairs where node's own search differed from the specification's loop")
            got = matches(s)
            evidence.count(SECTION, f"{label} pairs")
            if got != expected:
                problems.append(f"{pattern!r} on {s!r}: node {expected}, ours {got}")
        evidence.count(SECTION, f"{label} patterns")
    return problems


# --- the hand-written corpus -------------------------------------------------------------------

LINE_TERMINATORS = ["\n", "\r", "\u2028", "\u2029"]
CORPUS: list[tuple[str, list[str]]] = [
    # `.` excludes exactly the four line terminators; one astral character is one `.`.
    ("^.$", ["a", *LINE_TERMINATORS, "\u0085", "\t", "😀", "", "ab", "\r\n"]),
    (".", ["\n", "\r\n", "x", "\u2028\u2029", ""]),
    ("^a.c$", ["abc", "a\nc", "a\u2028c", "a😀c", "ac"]),
    ("^.{2}$", ["😀😀", "😀", "ab", "a😀", "a\n"]),
    ("^.*$", ["", "abc", "a\nb", "😀😀"]),
    ("a.+", ["a", "ab", "a\n", "a\u2029b"]),
    # `$` is the absolute end: never before a trailing newline; `^` is the absolute start.
    ("a$", ["a", "a\n", "ba", "a\r", "a\u2028", "a\r\n"]),
    ("^abc$", ["abc", "abc\n", "\nabc", "xabc"]),
    ("^$", ["", "\n", "\r\n"]),
    ("$", ["", "x"]),
    ("^", ["", "x"]),
    ("^b", ["abc", "bc", "a\nb"]),
    ("a$b", ["a", "ab", "a\nb"]),
    ("b^", ["b", "b\n"]),
    ("^a|b$", ["a\n", "\nb", "xb\n", "xa"]),
    ("(?:a|b)$", ["a", "b\n", "ab"]),
    ("a\nb", ["a\nb", "ab", "a\r\nb"]),
    ("^(a$)", ["a", "a\n"]),
    # Astral characters are single code points in u-mode, in literals, classes and ranges.
    ("^😀$", ["😀", "😀😀", "a"]),
    ("^😀+$", ["😀😀😀", "😀a", ""]),
    ("^[😀-😂]$", ["😀", "😁", "😂", "😃", "a"]),
    ("^[a😀]{2}$", ["a😀", "😀😀", "😀", "aa"]),
    ("^[^😀]$", ["😁", "😀", "a", "\n"]),
    ("[𐀀-\U0010ffff]", ["a", "😀", "𐀀", "\uffff"]),
    ("^[a-😀]$", ["b", "😀", "😁", "\uffff"]),
    ("😀|🐲", ["🐲", "x😀", "x"]),
    ("^🐲*$", ["", "🐲", "🐲🐲", "🐉"]),
    # Classes, negated classes and ranges.
    ("^[abc]+$", ["abcabc", "abd", ""]),
    ("^[a-z0-9_]+$", ["snake_case_9", "Camel", ""]),
    ("^[A-Za-z][A-Za-z0-9-]*$", ["a-b-c", "1abc", "Ab-"]),
    ("[-a]", ["-", "a", "b"]),
    ("[a-]", ["-", "a", "b"]),
    ("^[a-c-e]$", ["b", "-", "e", "d"]),
    ("[\\-]", ["-", "\\"]),
    ("[a\\-z]", ["b", "-", "z"]),
    ("[\\]]", ["]", "a"]),
    ("[\\\\]", ["\\", "a"]),
    ("[\\^]", ["^", "a"]),
    ("[a^]", ["^", "a", "b"]),
    ("[.]", [".", "a"]),
    ("[$]", ["$", ""]),
    ("[*+?]", ["*", "+", "?", "a"]),
    ("[(){}|]", ["(", "}", "|", "a"]),
    ("[\\[]", ["[", "a"]),
    ("[[]", ["[", "a"]),
    ("[ ]", [" ", "a"]),
    ("[\\--\\/]", ["-", ".", "/", ","]),
    ("[!-/]", ["!", "/", "0", "'"]),
    ("^[é-ë]$", ["é", "ê", "e", "ë"]),
    ("^[^a-z]+$", ["ABC", "aBC", "😀\n"]),
    ("^[^-]$", ["-", "a"]),
    ("[\n]", ["\n", "n"]),
    ("^[^\n]*$", ["abc", "a\nb", "a\u2028b"]),
    ("[\u2028]", ["\u2028", "\u2029"]),
    ("[0-9]{3}", ["12", "123", "a1234"]),
    ("[[:a][:]", ["a:", "[:", "::", "a", ":a"]),  # two classes, not a POSIX class
    ("[[=a][=]", ["a=", "=", "[="]),
    # Empty classes: [] matches nothing, [^] matches any one character (line terminators too).
    ("[]", ["", "a"]),
    ("[^]", ["", "a", "\n", "😀"]),
    ("^[^]$", ["\n", "😀", "ab", "\u2028"]),
    ("a[]", ["a", "ab"]),
    ("a[]*b", ["ab", "b"]),
    ("^[^]*$", ["anything\n\u2028", ""]),
    ("a|[]", ["a", "b"]),
    ("[]?x", ["x", ""]),
    ("^[^]{2}$", ["😀\n", "ab", "a"]),
    ("^[^]+?$", ["\r\n", ""]),
    # Alternation and groups.
    ("^(cat|dog)$", ["cat", "dog", "catdog", "do"]),
    ("a|b|c", ["c", "d", ""]),
    ("^(?:a|ab)(?:c|bcd)$", ["abcd", "abc", "ac", "abbcd"]),
    ("(|a)b", ["b", "ab", "a"]),
    ("^(a|)$", ["", "a", "aa"]),
    ("^(?:get|set|delete)_[a-z]+$", ["get_user", "put_user", "set_", "delete_x"]),
    ("^()$", ["", "x"]),
    ("^(?:)+$", ["", "x"]),
    ("^((a)|b)+$", ["abab", "abc"]),
    ("|", ["", "a"]),
    # Quantifiers, greedy and lazy.
    ("^a*?$", ["", "aaa", "ab"]),
    ("^a+?b$", ["aab", "b", "ab"]),
    ("^(a|ab)*?c$", ["abac", "c", "abc", "abd"]),
    ("a??b", ["b", "ab", "a"]),
    ("^a{2}$", ["aa", "a", "aaa"]),
    ("^a{2,}$", ["a", "aa", "aaaaaa"]),
    ("^a{2,3}$", ["a", "aa", "aaa", "aaaa"]),
    ("^a{0,1}$", ["", "a", "aa"]),
    ("^(?:ab){1,2}?$", ["ab", "abab", "ababab"]),
    ("^x{0}$", ["", "x"]),
    ("^a{2,3}?$", ["aa", "aaa", "aaaa"]),
    ("(a{2})+", ["a", "aa", "aaa"]),
    ("^a{1,}?$", ["a", "aaa", ""]),
    ("^(?:a?){3}$", ["", "a", "aaa", "aaaa"]),
    ("^a{01}$", ["a", "aa"]),
    ("x*", ["", "y"]),
    ("^[ab]{2,4}?c", ["abc", "ababc", "ababac"]),
    # Escaped punctuation: syntax characters, and the ones only legacy mode accepts.
    ("^\\.$", [".", "a"]),
    ("^a\\+b$", ["a+b", "aab"]),
    ("\\(\\)", ["()", "("]),
    ("^\\$[0-9]+$", ["$10", "10", "$"]),
    ("\\\\", ["\\", "a"]),
    ("^\\/", ["/", "a/"]),
    ("^\\:$", [":", "a"]),
    ("^a\\-b$", ["a-b", "ab"]),
    ("^\\!\\#\\%\\&$", ["!#%&", "!#%"]),
    ("^\\\"\\'$", ["\"'", "'"]),
    ("\\@", ["a@b", "ab"]),
    ("\\~", ["~", "-"]),
    ("^\\,\\;\\<\\=\\>$", [",;<=>", ",;<="]),
    ("\\_", ["_", "-"]),
    ("\\`", ["`", "'"]),
    ("[\\:\\-]", [":", "-", "a"]),
    ("\\{\\}", ["{}", "{"]),
    ("\\[\\]", ["[]", "[", "]"]),
    ("\\|", ["|", "a"]),
    ("\\^", ["^", "a"]),
    ("\\?", ["?", "a"]),
    ("\\*", ["*", "a"]),
    ("[\\!-\\/]", ["!", "/", "0"]),
    ("^[\\@\\~]+$", ["@~@", "@a"]),
    # Realistic tool-schema patterns.
    ("^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$", ["a.b@c.io", "a@b", "a@b.c", "@b.io"]),
    ("^https?://", ["http://x", "https://x", "ftp://x", "xhttp://"]),
    ("^(?:[0-9]{1,3}\\.){3}[0-9]{1,3}$", ["10.0.0.1", "1.2.3", "1.2.3.4\n", "1234.1.1.1"]),
    ("^[0-9]{4}-[0-9]{2}-[0-9]{2}$", ["2026-12-02", "2026-1-02", "2026-12-02\n"]),
    ("^v?[0-9]+(\\.[0-9]+)*$", ["v1.2.3", "1", "1.", "v"]),
    ("^(/[^/]+)+/?$", ["/a/b", "/a/b/", "a/b", "//"]),
    ("^[^\\\\/:*?\"<>|]+$", ["file.txt", "a/b", "a:b", "名前"]),
    ("^#[0-9a-fA-F]{6}$", ["#a0B1c2", "#a0B1c", "a0B1c2"]),
    ("^[A-Z]{2,3}-[0-9]+$", ["AB-12", "ABCD-1", "ab-1"]),
    ("^(?:\\+|-)?[0-9]+$", ["+1", "-1", "1", "--1"]),
    ("^\\*\\.[a-z]+$", ["*.py", "a.py", "*."]),
    ("^[^ ]+( [^ ]+)*$", ["a b c", "a  b", " a"]),
    ("^(?:[a-z0-9]+(?:-[a-z0-9]+)*\\.)+[a-z]{2,}$", ["ex-ample.com", "ex--a.com", "a.b"]),
]


def test_corpus_size() -> None:
    pairs = sum(len(strings) for _, strings in CORPUS)
    assert pairs >= 150, pairs


def test_corpus_agrees_with_node(node, evidence) -> None:
    problems = compare(node, CORPUS, evidence, "corpus")
    for line in problems:
        evidence.note(SECTION, "DISCREPANCY " + line)
    assert not problems, "\n".join(problems)


# --- patterns from a small grammar of the subset (hypothesis) --------------------------------------

_LITERALS = ["a", "b", "😀", "\n", "-", "é", " ", ","]
_ESCAPES = ["\\.", "\\-", "\\:", "\\*", "\\/", "\\\\", "\\$", "\\[", "\\]", "\\(", "\\{", "\\@"]
_CLASS_CHARS = ["a", "b", "c", "😀", "\n", "\u2028", "é", "^", "$", ".", "*", "(", "["]


@st.composite
def classes(draw) -> str:
    atoms = []
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            lo, hi = sorted(draw(st.lists(st.sampled_from(["a", "c", "z", "😀", "😂", "é", "0", "9"]), min_size=2, max_size=2)))
            atoms.append(f"{lo}-{hi}")
        elif draw(st.integers(0, 4)) == 0:
            atoms.append(draw(st.sampled_from(["\\!-\\/", "\\--\\:", "!-\\-", "\\[-\\]", " -\\@"])))
        else:
            atoms.append(draw(st.sampled_from(_CLASS_CHARS + ["\\-", "\\]", "\\\\", "\\:", "-"])))
    return "[" + ("^" if draw(st.booleans()) else "") + "".join(atoms) + "]"


_QUANTIFIERS = st.sampled_from(["*", "+", "?", "{2}", "{0,1}", "{1,}", "{1,3}", "{0}", "{0,}", "{3,5}"]).flatmap(
    lambda q: st.sampled_from([q, q + "?"])
)


def _quantified(atom):
    return st.tuples(atom, st.one_of(st.just(""), _QUANTIFIERS)).map("".join)


_ATOMS = st.one_of(st.sampled_from(_LITERALS), st.sampled_from(_ESCAPES), st.just("."), classes())


def _alternation(depth: int, atoms=_ATOMS, anchors=("^", "$")):
    """``a|b…`` of sequences of anchors and quantified atoms; atoms include groups while depth lasts."""
    atom = atoms if depth == 0 else st.one_of(atoms, atoms, _group(depth - 1, atoms, anchors))
    item = st.one_of(_quantified(atom), st.sampled_from(anchors))
    sequence = st.lists(item, max_size=4).map("".join)
    return st.lists(sequence, min_size=1, max_size=3).map("|".join)


def _group(depth: int, atoms=_ATOMS, anchors=("^", "$")):
    return st.tuples(st.sampled_from(["(", "(?:"]), _alternation(depth, atoms, anchors)).map(
        lambda t: t[0] + t[1] + ")")


patterns_in_subset = _alternation(2)
subject_strings = st.text(alphabet=["a", "b", "c", "😀", "\n", "\r", "\u2028", "-", "é", ".", ":", " ", ","], max_size=6)

GENERATED = int(os.environ.get("PATTERN_EXAMPLES", "400"))
EXPLORE = os.environ.get("PATTERN_RANDOM") == "1"  # fresh randomness instead of CI's fixed examples
_PROFILE = settings(
    max_examples=GENERATED, deadline=None, derandomize=not EXPLORE, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def _collect(strategy) -> list:
    """Draw examples with hypothesis, to be judged afterwards in one node batch."""
    collected: list = []

    @_PROFILE
    @given(strategy)
    def draw(example) -> None:
        collected.append(example)

    draw()
    return collected


def test_generated_patterns_agree_with_node(node, evidence) -> None:
    cases = _collect(st.tuples(patterns_in_subset, st.lists(subject_strings, min_size=3, max_size=5)))
    cases = list({p: (p, s) for p, s in cases}.values())
    problems = compare(node, cases, evidence, "generated", strict=False)
    for line in problems[:20]:
        evidence.note(SECTION, "DISCREPANCY " + line)
    assert not problems, f"{len(problems)} discrepancies:\n" + "\n".join(problems[:40])


# --- what we call malformed, node must reject too ------------------------------------------------

MALFORMED = [
    "(", ")", "a)", "(a", "((a)", "(?:a", "a**", "*a", "+", "?", "a|*", "^*", "$+", "a{2}{3}", "a{2,1}",
    "a{,3}", "{", "}", "a{", "a{1", "a{1,", "a{x}", "]", "a]", "[", "[a", "[^", "[b-a]", "[😂-😀]", "[z-a0-9]",
    "\\", "a\\", "[\\", "(|*)", "(*)", "a|?", "(?:*)", "a{1}{2}", "a+*", "()+*",
]
_SOUP_TOKENS = ["a", "b", "(", ")", "(?:", "[", "]", "[^", "{", "}", "{2}", "{2,1}", "{,1}", "*", "+", "?", "|",
                "^", "$", "\\", "\\.", "\\-", "\\:", "-", "😀", ",", "c-a", "a-c"]
token_soup = st.lists(st.sampled_from(_SOUP_TOKENS), min_size=1, max_size=7).map("".join)


def _judge_rejections(node, sources: list[str], evidence, label: str, extended: bool = False) -> list[str]:
    """Each pattern we call malformed must be a SyntaxError in node u-mode; each we accept must compile."""
    problems: list[str] = []
    conservative: list[str] = []
    seen = node([(p, ["", "a"]) for p in sources])
    for p, result in zip(sources, seen):
        mine = ours(p, extended)
        theirs = result["portable"]
        if isinstance(mine, PatternError) and mine.kind == VALIDATION:
            evidence.count(SECTION, f"{label} malformed (validation)")
            if "error" not in theirs:
                problems.append(f"{p!r}: we call it malformed ({mine.message}); node u-mode accepts it")
        elif isinstance(mine, PatternError):
            assert mine.kind == UNSUPPORTED
            evidence.count(SECTION, f"{label} unsupported_capability")
            if "error" not in theirs:
                evidence.count(SECTION, f"{label} unsupported_capability but valid ECMAScript")
                conservative.append(p)
        else:
            evidence.count(SECTION, f"{label} accepted")
            if "error" in theirs:
                problems.append(f"{p!r}: we accept it; node u-mode rejects it: {theirs['error']}")
    if conservative:
        shown = ", ".join(repr(p) for p in conservative[:12]) + (", …" if len(conservative) > 12 else "")
        evidence.note(SECTION, f"{label} valid ECMAScript refused as unsupported_capability (by design): {shown}")
    return problems


def test_malformed_patterns_are_rejected_by_node(node, evidence) -> None:
    for p in MALFORMED:
        mine = ours(p)
        assert isinstance(mine, PatternError) and mine.kind in (VALIDATION, UNSUPPORTED), (p, mine)
    problems = _judge_rejections(node, MALFORMED, evidence, "malformed list:")
    for line in problems:
        evidence.note(SECTION, "DISCREPANCY " + line)
    assert not problems, "\n".join(problems)


# Valid ECMAScript that the subset refuses on purpose: unsupported_capability, never "malformed".
CONSERVATIVE = ["a{1001}", "(?:a{1000}){1000}", "\\0", "(?=a)", "(?<n>a)", "[[:alpha:]]", "[x[=a=]]"]


def test_conservative_refusals_are_unsupported_never_malformed(node, evidence) -> None:
    problems = _judge_rejections(node, CONSERVATIVE, evidence, "conservative list:")
    for p in CONSERVATIVE:
        mine = ours(p)
        assert isinstance(mine, PatternError) and mine.kind == UNSUPPORTED, (p, mine)
    assert not problems, "\n".join(problems)


def test_token_soup_rejections_agree_with_node(node, evidence) -> None:
    sources = sorted(set(_collect(token_soup)))
    problems = _judge_rejections(node, sources, evidence, "token soup:")
    for line in problems[:20]:
        evidence.note(SECTION, "DISCREPANCY " + line)
    assert not problems, f"{len(problems)} discrepancies:\n" + "\n".join(problems[:40])


# --- the extended dialect: ECMAScript escapes with their ECMAScript meaning (issue 6) ---------------

# ECMAScript's \s: WhiteSpace and LineTerminator (note U+0085 and U+180E and U+200B are NOT in it).
WHITESPACE = ["\t", "\n", "\v", "\f", "\r", " ", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029",
              "\u202f", "\u205f", "\u3000", "\ufeff", "\u0085", "\u180e", "\u200b"]
ESCAPE_SUBJECTS = ["a", "Z", "_", "0", "9", "\u0663", "\uff10", "é", "😀", "-", "ab", "a b", "", "K", "\u212a",
                   "\u017f", "\x00", "\x01", "\x0a", "A", "\U0001F601", "\u00b2"] + WHITESPACE
EXTENDED_CORPUS: list[tuple[str, list[str]]] = [(p, ESCAPE_SUBJECTS) for p in [
    "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "^\\d+$", "^\\w+$", "^\\s*$", "^\\S+$", "\\W+",
    "\\b", "\\B", "\\bab\\b", "a\\B", "\\B$", "^\\B", "\\b$", "^\\b", "\\b\\w", "\\w\\b",
    "[\\d]", "[^\\d]", "[\\w-]", "[\\s\\S]", "[^\\s]", "[\\D]", "[^\\W]", "[^\\S]", "[\\w\\d]+", "[\\d-]",
    "[-\\d]", "[\\s-]",
    "\\t", "\\n", "\\r", "\\v", "\\f", "\\0", "[\\0]", "\\cA", "\\cj", "\\cJ", "[\\cJ]", "[\\b]",
    "\\x41", "\\x0a", "[\\x41-\\x5a]", "\\u0041", "\\u{41}", "\\u{1F600}", "\\u{01F600}", "[\\u0041-\\u{5a}]",
    "\\ud83d\\ude00", "[\\ud83d\\ude00]", "[\\u{1F600}-\\u{1F64F}]", "\\u{10FFFF}", "^\\u00e9$",
    "^[\\t\\n\\r ]+$", "^\\d{3}-\\d{4}$", "^\\w+@\\w+\\.\\w+$", "^[\\w.-]+$", "\\s\\S",
]]
# A zero-width assertion between astral characters and word characters: no search position lies inside a pair.
EXTENDED_CORPUS += [("\\B", ["a😀_", "a😀", "😀_", "_😀_", "😀😀", "a😀😀b"]),
                    ("\\b\\{.^|\\B\\D?", ["a😀_", "😀"]), ("\\b", ["😀", "😀a", "a😀"])]
EXTENDED_MALFORMED = ["\\b*", "\\B+", "\\x4", "\\u12", "\\u{110000}", "\\u{}", "\\c1", "[\\c]", "\\c",
                      "[\\d-z]", "[a-\\d]", "\\00", "\\01", "[\\B]"]
_EXTENDED_ATOMS = st.one_of(
    _ATOMS,
    st.sampled_from(["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\t", "\\n", "\\r", "\\v", "\\f", "\\x41",
                     "\\u00e9", "\\u{1F600}", "\\cJ", "[\\d\\s]", "[^\\w]", "[\\x41-\\x5a]", "[\\u{1F600}-\\u{1F602}]",
                     "[a\\S]", "[\\b]"]),
)
extended_patterns = _alternation(2, _EXTENDED_ATOMS, ("^", "$", "\\b", "\\B"))
extended_subjects = st.text(alphabet=["a", "A", "1", "_", "😀", "\n", "\t", " ", "\u00a0", "\u2028", "é", "-"],
                            max_size=6)


def test_extended_corpus_agrees_with_node(node, evidence) -> None:
    cases = EXTENDED_CORPUS + CORPUS  # the contract's corpus must mean the same in extended
    problems = compare(node, cases, evidence, "extended corpus", extended=True)
    for line in problems:
        evidence.note(SECTION, "DISCREPANCY (extended) " + line)
    assert not problems, "\n".join(problems)


def test_extended_generated_patterns_agree_with_node(node, evidence) -> None:
    cases = _collect(st.tuples(extended_patterns, st.lists(extended_subjects, min_size=3, max_size=5)))
    cases = list({p: (p, s) for p, s in cases}.values())
    problems = compare(node, cases, evidence, "extended generated", strict=False, extended=True)
    for line in problems[:20]:
        evidence.note(SECTION, "DISCREPANCY (extended) " + line)
    assert not problems, f"{len(problems)} discrepancies:\n" + "\n".join(problems[:40])


def test_extended_malformed_patterns_are_rejected_by_node(node, evidence) -> None:
    problems = _judge_rejections(node, EXTENDED_MALFORMED, evidence, "extended malformed list:", extended=True)
    for p in EXTENDED_MALFORMED:
        assert isinstance(ours(p, True), PatternError), p
    for line in problems:
        evidence.note(SECTION, "DISCREPANCY (extended) " + line)
    assert not problems, "\n".join(problems)
