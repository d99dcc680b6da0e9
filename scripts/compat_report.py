#!/usr/bin/env python3
"""Compatibility of captured real MCP server catalogs with the validator's InputSchema subset.

Preflights every captured tool (``validator.compile``) of every
``fixtures/catalogs/<server>.json`` and prints one Markdown table: server,
package@version, protocol, tools, supported, supported share, and the top
unsupported reasons (the validator reports the *first* offending keyword of a
tool; reasons are aggregated by keyword, with the schema-path pattern where it
occurs, property names and array indexes folded to ``*``).

    python scripts/compat_report.py                        # table on stdout (every dialect)
    python scripts/compat_report.py --write-docs           # also between the markers in docs/compatibility.md
    python scripts/compat_report.py --update-expectations  # regenerate fixtures/catalogs/expectations.json
    python scripts/compat_report.py --dialect extended     # judge with one dialect only

Without ``--dialect`` the main table is the contract's and every further dialect
the validator has (issue 6: ``extended``) adds a "supported" column.
``--dialect`` passes ``dialect=`` to ``validator.compile``. A validator without
that parameter (before issue 6) is detected (signature check, and a TypeError
from a probe compile is caught): then only the default dialect exists,
``--dialect contract`` falls back to ``validator.compile(schema)`` and any other
dialect exits with status 2 and says why.

A second table covers the tools' ``outputSchema`` (what ``--check-output``
validates results against; captured since the capture records it): per server
that declares any, how many tools declare one and how many of those compile
under each dialect, with the total share.

Importable: ``preflight_outcome(schema, dialect)``, ``load_catalogs()``,
``compute_outcomes(dialect)``, ``compute_output_outcomes(dialect)`` are used by
tests/catalogs.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CATALOG_DIR = REPO / "fixtures" / "catalogs"
EXPECTATIONS = CATALOG_DIR / "expectations.json"
COMPAT_DOC = REPO / "docs" / "compatibility.md"
START_MARKER = "<!-- compat:start -->"
END_MARKER = "<!-- compat:end -->"
DEFAULT_DIALECT = "contract"


class DialectUnavailable(RuntimeError):
    """The installed validator cannot judge the requested dialect."""


def _compile_accepts_dialect(compile_fn: Any) -> bool:
    try:
        params = inspect.signature(compile_fn).parameters
    except (TypeError, ValueError):
        return False
    return "dialect" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def compiler(dialect: str | None = None) -> Any:
    """A one-argument function compiling a schema under ``dialect`` (None = validator default)."""
    import validator

    if dialect is None:
        return validator.compile
    if _compile_accepts_dialect(validator.compile):
        try:
            validator.compile({"type": "object"}, dialect=dialect)
        except TypeError as exc:  # the keyword exists only in a later validator (issue 6)
            if dialect == DEFAULT_DIALECT:
                return validator.compile
            raise DialectUnavailable(f"validator.compile rejected dialect={dialect!r}: {exc}") from exc
        return lambda schema: validator.compile(schema, dialect=dialect)
    if dialect == DEFAULT_DIALECT:
        # Before issue 6 the validator has exactly one dialect, the contract.
        return validator.compile
    raise DialectUnavailable(
        f"validator.compile has no dialect= parameter yet (issue 6); only the default "
        f"{DEFAULT_DIALECT!r} dialect can be judged"
    )


def preflight_outcome(schema: Any, compile_fn: Any) -> tuple[str | dict[str, str], Any]:
    """("supported", compiled) or ({"kind", "keyword", "schemaPath"}, None).

    Any exception other than InputSchemaError propagates: that is a crash.
    """
    import validator

    try:
        compiled = compile_fn(schema)
    except validator.InputSchemaError as err:
        return {"kind": err.kind, "keyword": err.keyword, "schemaPath": err.schema_path}, None
    return "supported", compiled


def load_catalogs(directory: Path = CATALOG_DIR) -> list[dict[str, Any]]:
    """Every captured catalog, sorted by server name."""
    docs = []
    for path in sorted(directory.glob("*.json")):
        if path.name == EXPECTATIONS.name:
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("server") != path.stem:
            raise ValueError(f"{path}: 'server' is {doc.get('server')!r}, expected {path.stem!r}")
        docs.append(doc)
    return docs


def compute_outcomes(dialect: str | None = None, catalogs: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    compile_fn = compiler(dialect)
    result: dict[str, dict[str, Any]] = {}
    for doc in catalogs if catalogs is not None else load_catalogs():
        result[doc["server"]] = {t["name"]: preflight_outcome(t["inputSchema"], compile_fn)[0] for t in doc["tools"]}
    return result


def compute_output_outcomes(dialect: str | None = None,
                            catalogs: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Like ``compute_outcomes``, for the tools that declare an ``outputSchema`` (servers without one: {})."""
    compile_fn = compiler(dialect)
    result: dict[str, dict[str, Any]] = {}
    for doc in catalogs if catalogs is not None else load_catalogs():
        result[doc["server"]] = {t["name"]: preflight_outcome(t["outputSchema"], compile_fn)[0]
                                 for t in doc["tools"] if "outputSchema" in t}
    return result


_PROP = re.compile(r"/(properties|patternProperties|\$defs|definitions|dependentSchemas)/[^/]+")
_INDEX = re.compile(r"/(\d+)(?=/|$)")


def path_pattern(schema_path: str) -> str:
    """Fold property names and array indexes so paths of one kind aggregate."""
    folded = _PROP.sub(lambda m: f"/{m.group(1)}/*", schema_path)
    return _INDEX.sub("/*", folded) or "/"


def reasons(outcomes: Mapping[str, Any]) -> Counter[tuple[str, str]]:
    """Counter of (keyword, path pattern) over unsupported tools."""
    counter: Counter[tuple[str, str]] = Counter()
    for outcome in outcomes.values():
        if outcome != "supported":
            counter[(outcome["keyword"], path_pattern(outcome["schemaPath"]))] += 1
    return counter


def format_reasons(counter: Counter[tuple[str, str]], top: int = 3) -> str:
    by_keyword: dict[str, Counter[str]] = defaultdict(Counter)
    for (keyword, pattern), n in counter.items():
        by_keyword[keyword][pattern] += n
    ranked = sorted(by_keyword.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    parts = []
    for keyword, patterns in ranked[:top]:
        pattern, _ = sorted(patterns.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        more = f" +{len(patterns) - 1} paths" if len(patterns) > 1 else ""
        parts.append(f"`{keyword}` ×{sum(patterns.values())} (at `{pattern}`{more})")
    if len(ranked) > top:
        parts.append(f"+{len(ranked) - top} more")
    return "; ".join(parts) if parts else "—"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_table(
    catalogs: list[dict[str, Any]],
    outcomes: Mapping[str, Mapping[str, Any]],
    dialect: str,
    others: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> str:
    """The Markdown report: the table for ``dialect`` plus a share column per dialect in ``others``."""
    others = dict(others or {})
    extra_head = "".join(f" {d} supported |" for d in others)
    extra_rule = " ---: |" * len(others)
    lines = [
        f"Dialect: `{dialect}`"
        + "".join(f"; the `{d} supported` column judges the same tools with dialect `{d}`" for d in others)
        + ". Generated by `scripts/compat_report.py` from `fixtures/catalogs/` "
        "(re-captured with `scripts/capture_catalog.py --all`). A tool's reason is the first keyword "
        "the preflight rejects; reasons are aggregated by keyword (property names and indexes folded to `*`).",
        "",
        "| server | package@version | registry | protocol | tools | supported | share | top unsupported reasons |" + extra_head,
        "| --- | --- | --- | --- | ---: | ---: | ---: | --- |" + extra_rule,
    ]

    def count(server_outcomes: Mapping[str, Any]) -> int:
        return sum(1 for o in server_outcomes.values() if o == "supported")

    def share_of(ok: int, n: int, digits: int = 0) -> str:
        return f"{100 * ok / n:.{digits}f}%" if n else "—"

    total_tools = total_supported = 0
    other_totals = dict.fromkeys(others, 0)
    all_reasons: Counter[tuple[str, str]] = Counter()
    for doc in catalogs:
        server_outcomes = outcomes[doc["server"]]
        n = len(doc["tools"])
        ok = count(server_outcomes)
        total_tools += n
        total_supported += ok
        rs = reasons(server_outcomes)
        all_reasons.update(rs)
        extra = ""
        for d, d_outcomes in others.items():
            d_ok = count(d_outcomes[doc["server"]])
            other_totals[d] += d_ok
            extra += f" {d_ok} ({share_of(d_ok, n)}) |"
        lines.append(
            f"| {doc['server']} | `{_md_escape(doc['package'])}@{doc['version']}` | {doc['registry']} | "
            f"{doc['protocolVersion']} | {n} | {ok} | {share_of(ok, n)} | {_md_escape(format_reasons(rs))} |" + extra
        )
    extra = "".join(f" **{t} ({share_of(t, total_tools, 1)})** |" for t in other_totals.values())
    lines.append(
        f"| **all {len(catalogs)} servers** | | | | **{total_tools}** | **{total_supported}** | "
        f"**{share_of(total_supported, total_tools, 1)}** | {_md_escape(format_reasons(all_reasons, top=5))} |" + extra
    )
    lines += ["", f"Unsupported tools by first rejected keyword (all servers, `{dialect}`):", ""]
    lines += ["| keyword | tools | most common schema path | kind |", "| --- | ---: | --- | --- |"]
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    for server_outcomes in outcomes.values():
        for o in server_outcomes.values():
            if o != "supported":
                kinds[o["keyword"]][o["kind"]] += 1
    by_keyword: dict[str, Counter[str]] = defaultdict(Counter)
    for (keyword, pattern), n in all_reasons.items():
        by_keyword[keyword][pattern] += n
    for keyword, patterns in sorted(by_keyword.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        pattern, _ = sorted(patterns.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        kind = ", ".join(k for k, _ in kinds[keyword].most_common())
        lines.append(f"| `{_md_escape(keyword)}` | {sum(patterns.values())} | `{_md_escape(pattern)}` | {kind} |")
    if not by_keyword:
        lines.append("| — | 0 | | |")
    return "\n".join(lines) + "\n"


def render_output_table(catalogs: list[dict[str, Any]], by_dialect: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The Markdown table of the captured outputSchemas: per server, declared and compiling per dialect."""
    dialects = list(by_dialect)
    first, last = dialects[0], dialects[-1]
    lines = [
        "### outputSchemas",
        "",
        "The `outputSchema` of every captured tool that declares one (what `--check-output` validates "
        "`structuredContent` against), preflighted like the input schemas. An outputSchema that does not "
        "compile cannot be checked: its results are forwarded unchanged in every mode (docs/observability.md). "
        f"Reasons are the `{first}` dialect's (first rejected keyword).",
        "",
        "| server | tools | with outputSchema |" + "".join(f" {d} compiles |" for d in dialects) + f" {first} unsupported reasons |",
        "| --- | ---: | ---: |" + " ---: |" * len(dialects) + " --- |",
    ]

    def share_of(ok: int, n: int, digits: int = 0) -> str:
        return f"{100 * ok / n:.{digits}f}%" if n else "—"

    total_tools = total_declared = 0
    totals = dict.fromkeys(dialects, 0)
    without: list[str] = []
    all_reasons: Counter[tuple[str, str]] = Counter()
    for doc in catalogs:
        server = doc["server"]
        declared = len(by_dialect[last][server])
        total_tools += len(doc["tools"])
        if not declared:
            without.append(server)
            continue
        total_declared += declared
        cells = ""
        for d in dialects:
            ok = sum(1 for o in by_dialect[d][server].values() if o == "supported")
            totals[d] += ok
            cells += f" {ok} ({share_of(ok, declared)}) |"
        rs = reasons(by_dialect[first][server])
        all_reasons.update(rs)
        lines.append(f"| {server} | {len(doc['tools'])} | {declared} |{cells} {_md_escape(format_reasons(rs))} |")
    cells = "".join(f" **{t} ({share_of(t, total_declared, 1)})** |" for t in totals.values())
    lines.append(f"| **all {len(catalogs)} servers** | **{total_tools}** | **{total_declared}** |{cells} "
                 f"{_md_escape(format_reasons(all_reasons, top=5))} |")
    if without:
        lines += ["", f"No tool declares an outputSchema in the other {len(without)} catalogs: "
                  + ", ".join(without) + "."]
    return "\n".join(lines) + "\n"


KNOWN_DIALECTS = ("contract", "extended")


def available_dialects() -> list[str]:
    """The dialects the installed validator can judge (always includes the contract)."""
    found = []
    for d in KNOWN_DIALECTS:
        try:
            compiler(d)
        except DialectUnavailable:
            continue
        found.append(d)
    return found


def default_report(catalogs: list[dict[str, Any]] | None = None, dialect: str | None = None) -> str:
    """What ``compat_report.py`` prints (and writes into docs/compatibility.md) for ``--dialect`` (None = all)."""
    catalogs = load_catalogs() if catalogs is None else catalogs
    dialects = [dialect] if dialect is not None else available_dialects()
    outputs = render_output_table(catalogs, {d: compute_output_outcomes(d, catalogs) for d in dialects})
    if dialect is not None:
        return render_table(catalogs, compute_outcomes(dialect, catalogs), dialect) + "\n" + outputs
    primary, rest = dialects[0], dialects[1:]
    return render_table(
        catalogs,
        compute_outcomes(primary, catalogs),
        primary,
        {d: compute_outcomes(d, catalogs) for d in rest},
    ) + "\n" + outputs


def write_doc(table: str, doc: Path = COMPAT_DOC) -> None:
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Compatibility with real servers\n"
    block = f"{START_MARKER}\n{table}{END_MARKER}"
    if START_MARKER in text and END_MARKER in text:
        head, rest = text.split(START_MARKER, 1)
        _, tail = rest.split(END_MARKER, 1)
        text = head + block + tail
    else:
        section = (
            "\n## The catalog table\n\n"
            "Tool catalogs of published MCP servers are captured into `fixtures/catalogs/` "
            "and preflighted against the subset.\n\n" + block + "\n"
        )
        text = text.rstrip("\n") + "\n" + section
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")


def load_expectations(path: Path = EXPECTATIONS) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def write_expectations(dialect: str, outcomes: Mapping[str, Any], path: Path = EXPECTATIONS) -> None:
    data: dict[str, Any] = load_expectations(path) if path.exists() else {}
    data.setdefault(
        "_comment",
        "Preflight outcome of every captured tool, per dialect: 'supported' or the InputSchemaError "
        "(kind, keyword, schemaPath). Checked by tests/catalogs; regenerate deliberately with "
        "scripts/compat_report.py --update-expectations [--dialect D].",
    )
    data.setdefault("dialects", {})[dialect] = {s: dict(sorted(o.items())) for s, o in sorted(outcomes.items())}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialect", choices=list(KNOWN_DIALECTS), default=None,
                        help="judge with this dialect only (passes dialect= to validator.compile); "
                             "default: every dialect the validator has, the contract as the main table")
    parser.add_argument("--write-docs", "--write-readme", dest="write_docs", action="store_true",
                        help=f"write the table between {START_MARKER} and {END_MARKER} in docs/compatibility.md")
    parser.add_argument("--update-expectations", action="store_true", help="rewrite fixtures/catalogs/expectations.json for this dialect")
    args = parser.parse_args(argv)
    try:
        catalogs = load_catalogs()
        table = default_report(catalogs, args.dialect)
        dialects = [args.dialect] if args.dialect else available_dialects()
    except DialectUnavailable as exc:
        print(f"compat_report: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(table)
    if args.write_docs:
        write_doc(table)
        print(f"compat_report: wrote {COMPAT_DOC.relative_to(REPO)}", file=sys.stderr)
    if args.update_expectations:
        for dialect in dialects:
            write_expectations(dialect, compute_outcomes(dialect, catalogs))
            print(f"compat_report: wrote {EXPECTATIONS.relative_to(REPO)} [{dialect}]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
