"""The long fuzz run of issue 21 (part 1): every target of tests/fuzz_targets.py with N
examples (default 10^5), each target in its own subprocess, `--jobs` of them at a time.

    python benchmarks/reports/fuzz_long.py                      # all targets, 10^5 examples each
    python benchmarks/reports/fuzz_long.py -n 2000 --jobs 2     # a shorter run
    python benchmarks/reports/fuzz_long.py -n 500 sketch transform   # a selection
    python benchmarks/reports/fuzz_long.py --list
    python benchmarks/reports/fuzz_long.py --jobs 2 --results run.jsonl   # resumable

Targets run in the order given (all: alphabetical); their rows are printed as they finish.
With --results, each finished target's figures are appended to the file as one JSON line,
and targets already there with the same number of examples are not run again (their rows
are reprinted), so that a long run can be stopped and resumed.

Prints, per target: examples run (with hypothesis' reason when it stopped before N: "nothing
left to do" means every distinct input of the target's strategy was tried), seconds, the
slowest example, failures, and the calls refused by error type (ValueError / TypeError: the expected refusals of bad input, with a
message naming the argument), then a total; the falsifying example of a failure (hypothesis'
report, with its reproduce blob) follows the table. Exits 1 when any target failed. Examples
are fresh random ones (derandomize off); the hypothesis database is not used.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def _child(name, examples, derandomize):
    """Run one target in this process; print one JSON line of its figures."""
    os.environ["PYSKETCH_FUZZ_EXAMPLES"] = str(examples)
    sys.path.insert(0, str(TESTS))
    import traceback

    import fuzz_targets
    from hypothesis.statistics import collector

    start = time.perf_counter()
    failure = None
    stats = []
    try:
        with collector.with_value(stats.append):  # hypothesis' statistics: why it stopped
            fuzz_targets.make_test(name, examples, derandomize=derandomize)()
    except BaseException as exc:  # noqa: BLE001 - every failure is reported
        failure = "".join(traceback.format_exception(exc))
    seconds = time.perf_counter() - start
    runs, slowest = fuzz_targets.TIMING[name]
    stopped = stats[-1].get("stopped-because") if stats else None
    print("FUZZ-RESULT " + json.dumps({"target": name, "examples": runs, "seconds": seconds, "slowest": slowest,
                                       "outcomes": dict(fuzz_targets.OUTCOMES[name]), "failure": failure,
                                       "stopped": stopped}))


def _run(name, examples, derandomize, timeout):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYSKETCH_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--child", name, "-n", str(examples)]
    if derandomize:
        cmd.append("--derandomize")
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"target": name, "examples": None, "seconds": time.perf_counter() - start, "slowest": None,
                "outcomes": {}, "failure": f"timeout after {timeout} s (a hang?)"}
    for line in proc.stdout.splitlines():
        if line.startswith("FUZZ-RESULT "):
            return json.loads(line[len("FUZZ-RESULT "):])
    return {"target": name, "examples": None, "seconds": time.perf_counter() - start, "slowest": None,
            "outcomes": {}, "failure": f"the process died (exit code {proc.returncode}: a crash?)\n"
                                       f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="target names (default: all)")
    parser.add_argument("-n", "--examples", type=int, default=100_000, help="examples per target (default 1e5)")
    parser.add_argument("--jobs", type=int, default=1, help="targets run at the same time (default 1)")
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds per target before it counts "
                        "as a hang (default 6 h)")
    parser.add_argument("--derandomize", action="store_true", help="hypothesis' fixed examples (as in CI)")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--results", help="JSON-lines file: finished targets are appended, and skipped on a rerun")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.examples, args.derandomize)
        return 0
    sys.path.insert(0, str(TESTS))
    import fuzz_targets

    names = sorted(fuzz_targets.TARGETS)
    if args.list:
        print("\n".join(names))
        return 0
    unknown = [t for t in args.targets if t not in fuzz_targets.TARGETS]
    if unknown:
        parser.error(f"unknown targets {unknown}; --list lists them")
    selected = args.targets or names
    print(f"{len(selected)} targets, {args.examples} examples each, {args.jobs} at a time")
    header = f"{'target':32s} {'examples':>9s} {'seconds':>9s} {'ms/ex':>7s} {'slowest':>8s} {'fail':>5s}  refusals"
    print(header)
    print("-" * len(header))
    def row(r):
        ex = r["examples"]
        per = f"{1000 * r['seconds'] / ex:7.2f}" if ex else "      -"
        slow = f"{r['slowest']:8.3f}" if r["slowest"] is not None else "       -"
        refusals = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()) if k != "ok")
        stopped = (f"  [stopped: {r['stopped']}]" if r.get("stopped") and ex != args.examples and not r["failure"]
                   else "")
        print(f"{r['target']:32s} {ex if ex is not None else '-':>9} {r['seconds']:9.1f} {per} {slow} "
              f"{1 if r['failure'] else 0:5d}  ok {r['outcomes'].get('ok', 0)}; {refusals}{stopped}", flush=True)

    results = []
    done = {}
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            for line in f:
                r = json.loads(line)
                if r.get("requested") == args.examples and not r["failure"]:
                    done[r["target"]] = r
    for name in selected:
        if name in done:
            results.append(done[name])
            row(done[name])
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(_run, name, args.examples, args.derandomize, args.timeout)
                   for name in selected if name not in done]
        for fut in as_completed(futures):
            r = fut.result()
            r["requested"] = args.examples
            results.append(r)
            row(r)
            if args.results:
                with open(args.results, "a") as f:
                    f.write(json.dumps(r) + "\n")
    failed = [r for r in results if r["failure"]]
    total_ex = sum(r["examples"] or 0 for r in results)
    print("-" * len(header))
    print(f"{'total':32s} {total_ex:9d} {sum(r['seconds'] for r in results):9.1f}  (wall {time.perf_counter() - start:.1f} s)"
          f"  failures: {len(failed)}")
    for r in failed:
        print(f"\n===== {r['target']}: FAILED\n{r['failure']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
