#!/usr/bin/env python3
"""Per-call validation time: our compiled validator against jsonschema, fastjsonschema and jsonschema-rs.

    .venv/bin/python scripts/bench_validator.py            # every fixture in fixtures/coding-tools/
    .venv/bin/python scripts/bench_validator.py --quick    # fewer repeats
    .venv/bin/python scripts/bench_validator.py --profile edit_file   # cProfile our per-call path

The peers come from the `bench` extra (`pip install -e '.[bench]'`); a missing
one is reported and left out. Every validator is built once per fixture
(compile once, validate many) and timed with timeit-style repeats on the
fixture's recorded valid and invalid arguments. Each library is called the way
a gate would call it — the raising form, so an invalid call pays for its error:

    ours            compiled.validate(args)              (InputSchemaError)
    fastjsonschema  compiled(args)                       (JsonSchemaValueException; formats and defaults off)
    jsonschema-rs   Draft202012Validator(s).validate(a)  (ValidationError; formats off)
    jsonschema      Draft202012Validator(s).validate(a)  (ValidationError via best_match; no format checker)

Reported: the median over repeats of ns per call, and each peer's ratio to us
(peer time / our time: above 1 means we are faster). The summary takes, for
each library, the median across fixtures. Before timing, every library's
verdict on every example is compared with the fixture's label.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import timeit
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import validator  # noqa: E402
from validator import InputSchemaError  # noqa: E402

FIXTURES = REPO / "fixtures" / "coding-tools"


# --- the contenders: each returns a raising per-call function for a schema --------------------


def ours(schema: dict, dialect: str) -> Callable[[Any], None]:
    return validator.compile(schema, dialect=dialect).validate


def _fastjsonschema(schema: dict, dialect: str) -> Callable[[Any], None]:
    import fastjsonschema

    return fastjsonschema.compile(schema, use_default=False, use_formats=False)


def _jsonschema_rs(schema: dict, dialect: str) -> Callable[[Any], None]:
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(schema, validate_formats=False).validate


def _jsonschema(schema: dict, dialect: str) -> Callable[[Any], None]:
    import jsonschema

    return jsonschema.Draft202012Validator(schema).validate


PEERS: dict[str, Callable[[dict, str], Callable[[Any], None]]] = {
    "fastjsonschema": _fastjsonschema,
    "jsonschema-rs": _jsonschema_rs,
    "jsonschema": _jsonschema,
}
ERRORS: dict[str, tuple[type[BaseException], ...]] = {}


def _error_types() -> None:
    ERRORS["ours"] = (InputSchemaError,)
    try:
        import fastjsonschema

        ERRORS["fastjsonschema"] = (fastjsonschema.JsonSchemaException,)
    except ImportError:
        pass
    try:
        import jsonschema_rs

        ERRORS["jsonschema-rs"] = (jsonschema_rs.ValidationError,)
    except ImportError:
        pass
    try:
        import jsonschema

        ERRORS["jsonschema"] = (jsonschema.ValidationError,)
    except ImportError:
        pass


# --- fixtures ------------------------------------------------------------------------------


def load_fixtures(folder: Path) -> list[dict]:
    tools = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        invalid = [x["arguments"] if isinstance(x, dict) and "arguments" in x else x for x in data["invalid"]]
        tools.append({"name": data.get("name", path.stem), "schema": data["inputSchema"],
                      "valid": list(data["valid"]), "invalid": invalid})
    return tools


# --- timing ----------------------------------------------------------------------------------


def _runner(check: Callable[[Any], None], errors: tuple, args: list) -> Callable[[], None]:
    def run() -> None:
        for a in args:
            try:
                check(a)
            except errors:
                pass

    return run


def _calibrate(timer: timeit.Timer, target_seconds: float) -> int:
    """How many runs make one timing of about ``target_seconds`` (timeit's autorange, scaled)."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target_seconds / 5 or number >= 1 << 22:
            break
        number *= 2
    return max(1, int(number * target_seconds / max(elapsed, 1e-9)))


def time_per_call(runs: dict[str, Callable[[], None]], calls_per_run: int, repeat: int,
                  target_seconds: float) -> dict[str, float]:
    """Median ns per call for each contender; repeats are interleaved so load changes hit all alike."""
    timers = {name: timeit.Timer(run) for name, run in runs.items()}
    numbers = {name: _calibrate(timer, target_seconds) for name, timer in timers.items()}
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, timer in timers.items():
            samples[name].append(timer.timeit(numbers[name]) / (numbers[name] * calls_per_run) * 1e9)
    return {name: statistics.median(values) for name, values in samples.items()}


def verdicts(check: Callable[[Any], None], errors: tuple, args: list) -> list[bool]:
    out = []
    for a in args:
        try:
            check(a)
            out.append(True)
        except errors:
            out.append(False)
    return out


# --- report --------------------------------------------------------------------------------


def _fmt_ns(ns: float | None) -> str:
    return "—" if ns is None else (f"{ns:,.0f}" if ns >= 100 else f"{ns:.1f}")


def _fmt_ratio(r: float | None) -> str:
    return "—" if r is None else f"{r:.1f}x"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="folder of {name, inputSchema, valid, invalid} files")
    parser.add_argument("--dialect", default=validator.CONTRACT, help="dialect our validator compiles with")
    parser.add_argument("--repeat", type=int, default=7, help="timings per measurement (median is reported)")
    parser.add_argument("--target", type=float, default=0.05, help="seconds per timing")
    parser.add_argument("--quick", action="store_true", help="--repeat 3 --target 0.01")
    parser.add_argument("--profile", metavar="TOOL", help="cProfile our per-call path on one fixture and exit")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.repeat, opts.target = 3, 0.01
    _error_types()

    tools = load_fixtures(opts.fixtures)
    if not tools:
        print(f"no fixtures in {opts.fixtures}", file=sys.stderr)
        return 2
    if opts.profile:
        return profile([t for t in tools if t["name"] == opts.profile], opts.dialect)

    contenders: dict[str, Callable] = {"ours": ours}
    for name, build in PEERS.items():
        if name in ERRORS:
            contenders[name] = build
        else:
            print(f"note: {name} is not installed (pip install -e '.[bench]'); left out", file=sys.stderr)
    names = list(contenders)

    print(f"python {sys.version.split()[0]}; dialect {opts.dialect}; {len(tools)} fixtures from {opts.fixtures}; "
          f"median of {opts.repeat} repeats, ~{opts.target * 1000:.0f} ms each; ns per call")
    rows: list[dict] = []
    for tool in tools:
        built = {name: build(tool["schema"], opts.dialect) for name, build in contenders.items()}
        for label in ("valid", "invalid"):
            args = tool[label]
            if not args:
                continue
            expected = [label == "valid"] * len(args)
            for name, check in built.items():
                got = verdicts(check, ERRORS[name], args)
                if got != expected:
                    wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
                    print(f"warning: {name} disagrees with the fixture label on {tool['name']} {label} #{wrong}",
                          file=sys.stderr)
            runs = {name: _runner(check, ERRORS[name], args) for name, check in built.items()}
            ns = time_per_call(runs, len(args), opts.repeat, opts.target)
            rows.append({"tool": tool["name"], "set": label, "n": len(args), "ns": ns})

    head = f"{'fixture':<16}{'set':<8}" + "".join(f"{n:>16}" for n in names) + "".join(f"{'vs ' + n:>18}" for n in names[1:])
    print(head)
    print("-" * len(head))
    for row in rows:
        ns = row["ns"]
        line = f"{row['tool']:<16}{row['set']:<8}" + "".join(f"{_fmt_ns(ns.get(n)):>16}" for n in names)
        line += "".join(f"{_fmt_ratio(ns[n] / ns['ours']):>18}" for n in names[1:])
        print(line)

    print()
    print("Median across fixtures (ns per call; ratio = peer / ours, above 1 means we are faster):")
    summary: dict[str, dict] = {}
    for label in ("valid", "invalid", "all"):
        chosen = [r for r in rows if label == "all" or r["set"] == label]
        if label == "all":
            # One figure per fixture: the mean of its valid and invalid per-call times.
            by_tool: dict[str, list[dict]] = {}
            for r in chosen:
                by_tool.setdefault(r["tool"], []).append(r)
            chosen = [{"ns": {n: statistics.mean(r["ns"][n] for r in rs) for n in names}} for rs in by_tool.values()]
        med = {n: statistics.median(r["ns"][n] for r in chosen) for n in names}
        ratio = {n: statistics.median(r["ns"][n] / r["ns"]["ours"] for r in chosen) for n in names[1:]}
        summary[label] = {"median_ns": med, "median_ratio": ratio}
        parts = [f"ours {_fmt_ns(med['ours'])}"] + [
            f"{n} {_fmt_ns(med[n])} ({_fmt_ratio(med[n] / med['ours'])}; per-fixture median ratio {_fmt_ratio(ratio[n])})"
            for n in names[1:]
        ]
        print(f"  {label:<8}" + " | ".join(parts))

    print()
    print("Targets (on the median fixture; 'all' = the mean of a fixture's valid and invalid per-call times):")
    for label in ("valid", "invalid", "all"):
        med = summary[label]["median_ns"]
        verdicts_text = []
        if "fastjsonschema" in med:
            ok = med["ours"] < med["fastjsonschema"]
            verdicts_text.append(f"faster than fastjsonschema: {'MET' if ok else 'NOT MET'} "
                                 f"({_fmt_ns(med['ours'])} vs {_fmt_ns(med['fastjsonschema'])} ns)")
        if "jsonschema" in med:
            r = med["jsonschema"] / med["ours"]
            verdicts_text.append(f">= 20x faster than jsonschema: {'MET' if r >= 20 else 'NOT MET'} ({r:.1f}x)")
        print(f"  {label:<8}" + "; ".join(verdicts_text))
    if opts.json:
        opts.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))
    return 0


def profile(tools: list[dict], dialect: str) -> int:
    if not tools:
        print("no such fixture", file=sys.stderr)
        return 2
    tool = tools[0]
    check = validator.compile(tool["schema"], dialect=dialect).validate
    run = _runner(check, (InputSchemaError,), tool["valid"] + tool["invalid"])
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20000):
        run()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
