#!/usr/bin/env python3
"""Per-call validation time: our compiled validator against jsonschema, fastjsonschema and jsonschema-rs.

    .venv/bin/python scripts/bench_validator.py            # every fixture in fixtures/coding-tools/
    .venv/bin/python scripts/bench_validator.py --quick    # fewer repeats
    .venv/bin/python scripts/bench_validator.py --profile edit_file   # cProfile our per-call path
    .venv/bin/python scripts/bench_validator.py --dataset [--dialect extended]   # real catalogs, mixed traffic
    .venv/bin/python scripts/bench_validator.py --dataset --instructions         # the same, counted by valgrind

The peers come from the `bench` extra (`pip install -e '.[bench]'`); a missing
one is reported and left out. Every validator is built once per fixture
(compile once, validate many) and timed with timeit-style repeats on the
fixture's recorded valid and invalid arguments. Each library is called the way
a gate would call it — the raising form, so an invalid call pays for its error:

    ours            compiled.validate(args)              (InputSchemaError)
    fastjsonschema  compiled(args)                       (JsonSchemaValueException; formats and defaults off)
    jsonschema-rs   Draft202012Validator(s).validate(a)  (ValidationError; formats off)
    jsonschema      Draft202012Validator(s).validate(a)  (ValidationError via best_match; no format checker)

Dataset mode (--dataset) builds a traffic mix from the captured tool catalogs in
fixtures/catalogs/: for every tool our validator supports under the dialect (and
every peer compiles), valid and invalid arguments generated deterministically
from the schema (seeded by the tool's name), labelled by our validator, shuffled
into one stream. It reports µs per instance over the mix, over its valid and
over its invalid part, with min/median/max over interleaved repeats (the
order of the timings shuffled anew each repeat, so that no library always
runs right after the same other one). Each repeat times one part at a time,
every library on it back to back, so each peer's ratio is also given as
"paired rounds": the median [min–max] of the ratios of timings taken side by
side, which a burst of load from the machine's neighbours moves far less than
the ratio of the medians (it hits both timings of a pair alike). With
--instructions it counts instead, under valgrind's cachegrind, the instructions
each library executes per instance of each part: exact and unmoved by other
load on the machine (the clock also pays for cache misses, which this leaves
out). Each count runs the part's stream twice in a child process, once with 0
and once with N passes, and takes the difference, so building the dataset and
compiling the schemas cancel out; hash randomisation is fixed (PYTHONHASHSEED=0).
With --after-switch it times, instead, each library's passes over the mixed
stream right after another library has run for 50 ms: the first pass is what a
validator costs when other work has had the machine (as in a gate, between
calls), and a library needs several passes to reach its steady state.

Reported: the median over repeats of ns per call, and each peer's ratio to us
(peer time / our time: above 1 means we are faster). The summary takes, for
each library, the median across fixtures. Before timing, every library's
verdict on every example is compared with the fixture's label.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit
import zlib
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]

import validator  # the project is installed (pip install -e '.[bench]')  # noqa: E402
from validator import InputSchemaError  # noqa: E402

FIXTURES = REPO / "fixtures" / "coding-tools"
CATALOGS = REPO / "fixtures" / "catalogs"


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


def _turns(keys: list, repeat: int) -> list:
    """The order of one repeat's timings: shuffled anew each repeat (seeded by its index).

    A timing right after another library's pays for that library's traces in
    the caches and the heap; jsonschema's, the heaviest, made our timing after
    it about a fifth slower on the mixed stream (docs/validator.md). In a fixed order
    the same contender would always follow it.
    """
    order = list(keys)
    random.Random(repeat).shuffle(order)
    return order


def _paired_turns(parts: list[str], names: list[str], repeat: int) -> list[tuple[str, str]]:
    """One repeat's timings, a part at a time: the contenders on one part run back to back.

    So a pair of timings compared within the round sits a fraction of a second
    apart, inside the same burst of load from the machine's neighbours (which
    comes and goes over seconds and moved single timings by 2x). The parts and,
    within each, the contenders are shuffled anew each repeat, as ``_turns``
    explains.
    """
    order = []
    for part in _turns(parts, repeat):
        # Seeded by the repeat and the part's place in it, so the parts of one repeat differ in order too.
        order += [(part, name) for name in _turns(names, repeat * 31 + len(order))]
    return order


def paired_ratios(peer: list[float], ours: list[float]) -> dict[str, float]:
    """The peer's time over ours, round by round (timings taken back to back): median, min and max."""
    ratios = [p / o for p, o in zip(peer, ours, strict=True)]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def _fmt_paired(r: dict[str, float]) -> str:
    return f"{r['median']:.2f}x [{r['min']:.2f}–{r['max']:.2f}]"


def time_per_call(runs: dict[str, Callable[[], None]], calls_per_run: int, repeat: int,
                  target_seconds: float) -> dict[str, float]:
    """Median ns per call for each contender; repeats are interleaved so load changes hit all alike."""
    timers = {name: timeit.Timer(run) for name, run in runs.items()}
    numbers = {name: _calibrate(timer, target_seconds) for name, timer in timers.items()}
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(repeat):
        for name in _turns(list(timers), r):
            samples[name].append(timers[name].timeit(numbers[name]) / (numbers[name] * calls_per_run) * 1e9)
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
    parser.add_argument("--dataset", action="store_true",
                        help="time a mixed stream of generated arguments for the tools in fixtures/catalogs/")
    parser.add_argument("--catalogs", type=Path, default=CATALOGS, help="folder of captured catalogs (--dataset)")
    parser.add_argument("--valid-per-tool", type=int, default=3, help="valid instances per tool (--dataset)")
    parser.add_argument("--invalid-per-tool", type=int, default=1, help="invalid instances per tool (--dataset)")
    parser.add_argument("--instructions", action="store_true",
                        help="with --dataset: count instructions per instance under valgrind instead of timing")
    parser.add_argument("--after-switch", action="store_true",
                        help="with --dataset: time each library's first passes over the mixed stream right after "
                             "another library ran (cold), against its steady state")
    parser.add_argument("--passes", type=int, default=5, help="passes over each stream per count (--instructions)")
    parser.add_argument("--peers", nargs="+", choices=list(PEERS), metavar="PEER",
                        help="with --dataset: build and time only these peers beside ours "
                             f"({', '.join(PEERS)}; default every installed one). What runs between our "
                             "timings moves our mixed-stream figure (docs/validator.md)")
    parser.add_argument("--count-one", nargs=3, metavar=("CONTENDER", "PART", "PASSES"), help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.repeat, opts.target = 3, 0.01
    _error_types()
    if opts.count_one:
        return count_one(opts, *opts.count_one)
    if opts.dataset and opts.instructions:
        return instructions_main(opts)
    if opts.dataset and opts.after_switch:
        return after_switch_main(opts)
    if opts.dataset:
        return dataset_main(opts)

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


# --- dataset mode: generated arguments for the captured catalogs ------------------------------


class Generator:
    """Arguments drawn from a schema with a seeded Random: likely valid, or one mutation away from it.

    Small on purpose: it reads the keywords real tool schemas use, and the labels
    come from validating, never from the generator's intent.
    """

    WORDS = ["main", "src/app.py", "hello world", "42", "2024-01-01T00:00:00Z", "https://example.com", "a", ""]

    def __init__(self, root: dict, rnd: random.Random) -> None:
        self.root = root
        self.rnd = rnd

    def resolve(self, ref: str) -> Any:
        target: Any = self.root
        for raw in ref.lstrip("#").split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            target = target[int(token)] if type(target) is list else target.get(token, {})
        return target

    def value(self, schema: Any, depth: int = 0) -> Any:
        rnd = self.rnd
        if not isinstance(schema, dict) or depth > 8:
            return rnd.choice([None, True, 1, "x"])
        if "$ref" in schema:
            merged = {k: v for k, v in schema.items() if k != "$ref"}
            return self.value({**self.resolve(schema["$ref"]), **merged}, depth + 1)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return rnd.choice(schema["enum"])
        for key in ("oneOf", "anyOf"):
            if schema.get(key):
                rest = {k: v for k, v in schema.items() if k != key}
                return self.value({**rest, **rnd.choice(schema[key])}, depth + 1)
        if schema.get("allOf"):
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part["$ref"]) if isinstance(part, dict) and "$ref" in part else part
                if isinstance(part, dict):
                    props = {**merged.get("properties", {}), **part.get("properties", {})}
                    required = list(merged.get("required", [])) + list(part.get("required", []))
                    merged = {**merged, **part, "properties": props, "required": required}
            return self.value(merged, depth + 1)
        declared = schema.get("type")
        if isinstance(declared, list):
            declared = rnd.choice([t for t in declared if t != "null"] or declared)
        if declared is None:
            declared = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if declared == "object":
            props = schema.get("properties") or {}
            required = [n for n in schema.get("required", []) if isinstance(n, str)]
            out = {n: self.value(props.get(n, {}), depth + 1) for n in required}
            for name, sub in props.items():
                if name not in out and rnd.random() < 0.5:
                    out[name] = self.value(sub, depth + 1)
            return out
        if declared == "array":
            low = int(schema.get("minItems", 0))
            high = int(schema.get("maxItems", low + 3))
            return [self.value(schema.get("items", {}), depth + 1) for _ in range(rnd.randint(low, max(low, min(high, low + 3))))]
        if declared in ("integer", "number"):
            low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
            high = schema.get("maximum", schema.get("exclusiveMaximum", low + 100))
            if declared == "number" and rnd.random() < 0.5:
                return rnd.uniform(low, high)
            return rnd.randint(int(low) + 1, max(int(low) + 1, int(high) - 1)) if high > low + 1 else int(low)
        if declared == "boolean":
            return rnd.random() < 0.5
        if declared == "null":
            return None
        low = int(schema.get("minLength", 0))
        text = rnd.choice(self.WORDS)
        return (text + "x" * low)[: schema.get("maxLength", len(text) + low)]

    def mutate(self, schema: dict, args: Any) -> Any:
        """One likely violation: a required property dropped, a wrong type, an unknown or bad member."""
        rnd = self.rnd
        if not isinstance(args, dict):
            return [args]
        out = dict(args)
        props = schema.get("properties") or {}
        how = rnd.randrange(4)
        if how == 0 and schema.get("required"):
            out.pop(rnd.choice(schema["required"]), None)
        elif how == 1 and out:
            name = rnd.choice(sorted(out))
            out[name] = {"unexpected": [1, 2]} if not isinstance(out[name], dict) else "not an object"
        elif how == 2 and props:
            name = rnd.choice(sorted(props))
            out[name] = rnd.choice([-(10**9), 10**9, "", [], 1.5, None])
        else:
            out["no_such_parameter"] = "x"
        return out


def build_dataset(folder: Path, dialect: str, contenders: dict[str, Callable], valid_n: int, invalid_n: int) -> dict:
    tools, skipped, peer_failed = [], 0, 0
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "tools" not in data:
            continue
        for tool in data["tools"]:
            schema = tool.get("inputSchema")
            try:
                compiled = validator.compile(schema, dialect=dialect)
            except InputSchemaError:
                skipped += 1
                continue
            try:
                built = {name: build(schema, dialect) for name, build in contenders.items()}
            except Exception:  # a peer that cannot compile this schema: the tool is left out for all
                peer_failed += 1
                continue
            name = f"{data.get('server', path.stem)}/{tool.get('name')}"
            gen = Generator(schema, random.Random(zlib.crc32(name.encode())))
            valid, invalid = [], []
            for _ in range(40):
                if len(valid) >= valid_n and len(invalid) >= invalid_n:
                    break
                args = gen.value(schema)
                if compiled.is_valid(args):
                    if len(valid) < valid_n:
                        valid.append(args)
                    bad = gen.mutate(schema, args)
                    if len(invalid) < invalid_n and not compiled.is_valid(bad):
                        invalid.append(bad)
            tools.append({"name": name, "built": built, "valid": valid, "invalid": invalid})
    return {"tools": tools, "skipped": skipped, "peer_failed": peer_failed}


def _stream_runner(pairs: list[tuple[Callable, Any]], errors: tuple) -> Callable[[], None]:
    def run() -> None:
        for check, a in pairs:
            try:
                check(a)
            except errors:
                pass

    return run


def _contenders(peers: list[str] | None = None) -> dict[str, Callable]:
    contenders: dict[str, Callable] = {"ours": ours}
    for name, build in PEERS.items():
        if peers is not None and name not in peers:
            continue
        if name in ERRORS:
            contenders[name] = build
        else:
            print(f"note: {name} is not installed (pip install -e '.[bench]'); left out", file=sys.stderr)
    return contenders


def _parts(data: dict) -> dict[str, list[tuple]]:
    rnd = random.Random(0)
    stream = [(t, a, True) for t in data["tools"] for a in t["valid"]] + \
             [(t, a, False) for t in data["tools"] for a in t["invalid"]]
    rnd.shuffle(stream)
    return {"mixed": stream, "valid": [x for x in stream if x[2]], "invalid": [x for x in stream if not x[2]]}


def count_one(opts: argparse.Namespace, name: str, part: str, passes: str) -> int:
    """Child of --instructions: build one contender's stream for one part, run it PASSES times."""
    # Every contender is built, so that the tools a peer cannot compile are left out here as well.
    data = build_dataset(opts.catalogs, opts.dialect, _contenders(opts.peers), opts.valid_per_tool, opts.invalid_per_tool)
    items = _parts(data)[part]
    run = _stream_runner([(t["built"][name], a) for t, a, _ in items], ERRORS[name])
    for _ in range(int(passes)):
        run()
    print(len(items))
    return 0


def _instructions(opts: argparse.Namespace, name: str, part: str, passes: int) -> tuple[int, int]:
    """(instructions, instances) of one child run under cachegrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                   sys.executable, str(Path(__file__).resolve()), "--dialect", opts.dialect,
                   "--catalogs", str(opts.catalogs), "--valid-per-tool", str(opts.valid_per_tool),
                   "--invalid-per-tool", str(opts.invalid_per_tool), "--count-one", name, part, str(passes),
                   *(["--peers", *opts.peers] if opts.peers else [])]
        done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"))
        if done.returncode != 0:
            raise RuntimeError(f"{name} {part}: the counting child failed: {done.stderr.strip()[-500:]}")
        summary = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
        return int(summary.split()[1]), int(done.stdout.split()[-1])


def instructions_main(opts: argparse.Namespace) -> int:
    if shutil.which("valgrind") is None:
        print("--instructions counts with valgrind, which is not on PATH; install it (apt-get install valgrind) "
              "or time with --dataset alone", file=sys.stderr)
        return 2
    names = list(_contenders(opts.peers))
    print(f"python {sys.version.split()[0]}; dialect {opts.dialect}; instructions per instance under cachegrind, "
          f"{opts.passes} passes less 0 passes over each stream")
    counts: dict[tuple[str, str], float] = {}
    sizes: dict[str, int] = {}
    for part in ("mixed", "valid", "invalid"):
        for name in names:
            base, n = _instructions(opts, name, part, 0)
            total, _ = _instructions(opts, name, part, opts.passes)
            counts[(part, name)] = (total - base) / (opts.passes * n)
            sizes[part] = n
    head = f"{'':<22}" + "".join(f"{n:>16}" for n in names)
    print(head)
    print("-" * len(head))
    for part in ("mixed", "valid", "invalid"):
        print(f"{f'{part} ({sizes[part]})':<22}" + "".join(f"{counts[(part, n)]:>16,.0f}" for n in names))
    print()
    for part in ("mixed", "valid", "invalid"):
        ratios = ", ".join(f"{n} {counts[(part, n)] / counts[(part, 'ours')]:.2f}x" for n in names[1:])
        print(f"{part:<10}instructions vs ours (above 1 means we execute fewer): {ratios}")
    if opts.json:
        opts.json.write_text(json.dumps({f"{p} {n}": v for (p, n), v in counts.items()}, indent=2))
    return 0


def after_switch_main(opts: argparse.Namespace, passes: int = 8, busy: float = 0.05) -> int:
    """Each library's passes over the mixed stream after each other library has run for ``busy`` seconds."""
    contenders = _contenders(opts.peers)
    names = list(contenders)
    data = build_dataset(opts.catalogs, opts.dialect, contenders, opts.valid_per_tool, opts.invalid_per_tool)
    stream = _parts(data)["mixed"]
    runs = {n: _stream_runner([(t["built"][n], a) for t, a, _ in stream], ERRORS[n]) for n in names}
    print(f"python {sys.version.split()[0]}; dialect {opts.dialect}; {len(stream)} instances in the mixed stream; "
          f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    print(f"µs per instance of passes 1..{passes} over the mixed stream right after another library ran for "
          f"{busy * 1000:.0f} ms; median of {opts.repeat} repeats per pair")
    first: dict[str, list[float]] = {n: [] for n in names}
    steady: dict[str, list[float]] = {n: [] for n in names}
    for who in names:
        for other in names:
            if other == who:
                continue
            rows = []
            for _ in range(opts.repeat):
                start = timeit.default_timer()
                while timeit.default_timer() - start < busy:
                    runs[other]()
                row = []
                for _ in range(passes):
                    start = timeit.default_timer()
                    runs[who]()
                    row.append((timeit.default_timer() - start) / len(stream) * 1e6)
                rows.append(row)
            med = [statistics.median(r[i] for r in rows) for i in range(passes)]
            first[who].append(med[0])
            steady[who].append(statistics.median(med[passes // 2:]))
            print(f"  {who:<15} after {other:<15}" + " ".join(f"{x:6.2f}" for x in med))
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")
    print(f"{'':<16}{'first pass':>12}{'steady':>10}   (medians over the libraries run before it)")
    for n in names:
        print(f"{n:<16}{statistics.median(first[n]):>12.2f}{statistics.median(steady[n]):>10.2f}")
    for n in names[1:]:
        print(f"{n} / ours: first pass {statistics.median(first[n]) / statistics.median(first['ours']):.2f}x, "
              f"steady {statistics.median(steady[n]) / statistics.median(steady['ours']):.2f}x")
    return 0


def dataset_main(opts: argparse.Namespace) -> int:
    contenders = _contenders(opts.peers)
    names = list(contenders)
    data = build_dataset(opts.catalogs, opts.dialect, contenders, opts.valid_per_tool, opts.invalid_per_tool)
    parts = _parts(data)
    stream = parts["mixed"]
    disagree = {n: 0 for n in names}
    for name in names:
        for tool, args, label in stream:
            if verdicts(tool["built"][name], ERRORS[name], [args]) != [label]:
                disagree[name] += 1
    print(f"python {sys.version.split()[0]}; dialect {opts.dialect}; {len(data['tools'])} tools from {opts.catalogs} "
          f"({data['skipped']} unsupported in this dialect, {data['peer_failed']} a peer cannot compile); "
          f"{len(parts['valid'])} valid + {len(parts['invalid'])} invalid instances, shuffled into one stream")
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    print("verdicts differing from our label: " + ", ".join(f"{n} {disagree[n]}" for n in names))
    timers: dict[tuple[str, str], timeit.Timer] = {}
    numbers: dict[tuple[str, str], int] = {}
    for part, items in parts.items():
        for name in names:
            run = _stream_runner([(t["built"][name], a) for t, a, _ in items], ERRORS[name])
            timers[(part, name)] = timer = timeit.Timer(run)
            numbers[(part, name)] = _calibrate(timer, opts.target)
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in timers}
    for r in range(opts.repeat):  # interleaved: a load change hits every contender alike
        for key in _paired_turns(list(parts), names, r):
            n = numbers[key]
            samples[key].append(timers[key].timeit(n) / (n * len(parts[key[0]])) * 1e6)
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")
    print(f"µs per instance, median [min–max] of {opts.repeat} interleaved repeats; ratio = peer / ours on the medians")
    head = f"{'':<10}" + "".join(f"{n:>26}" for n in names)
    print(head)
    print("-" * len(head))
    summary: dict[str, dict] = {}
    for part in parts:
        line = f"{part:<10}"
        med = {}
        for name in names:
            values = samples[(part, name)]
            med[name] = statistics.median(values)
            line += f"{f'{med[name]:.2f} [{min(values):.2f}–{max(values):.2f}]':>26}"
        print(line)
        summary[part] = {n: {"median": med[n], "min": min(samples[(part, n)]), "max": max(samples[(part, n)])} for n in names}
    for part in parts:
        summary[part]["paired"] = {n: paired_ratios(samples[(part, n)], samples[(part, "ours")]) for n in names[1:]}
    print()
    for part in parts:
        ours_med = summary[part]["ours"]["median"]
        ours_min = summary[part]["ours"]["min"]
        ratios = ", ".join(f"{n} {summary[part][n]['median'] / ours_med:.2f}x (on mins {summary[part][n]['min'] / ours_min:.2f}x; "
                           f"paired rounds {_fmt_paired(summary[part]['paired'][n])})"
                           for n in names[1:])
        print(f"{part:<10}speed vs ours (above 1 means we are faster): {ratios}")
    if "fastjsonschema" in names:
        print()
        for part in parts:
            r = summary[part]["fastjsonschema"]["median"] / summary[part]["ours"]["median"]
            worst = summary[part]["fastjsonschema"]["min"] / summary[part]["ours"]["max"]
            best = summary[part]["fastjsonschema"]["min"] / summary[part]["ours"]["min"]
            print(f"target >= 1.5x fastjsonschema ({part}): {'MET' if r >= 1.5 else 'NOT MET'} "
                  f"({r:.2f}x on medians; {best:.2f}x on mins, the least load-bound; "
                  f"{worst:.2f}x fastest peer run vs slowest of ours; "
                  f"paired rounds {_fmt_paired(summary[part]['paired']['fastjsonschema'])})")
    if opts.json:
        opts.json.write_text(json.dumps({"summary": summary, "disagree": disagree}, indent=2))
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
