"""A term of 300 learners and 4 assignments graded by ``mha-grade term``, in one run and in 4
shards (4 separate processes, as 4 machines of a cluster would) merged, with the real isolated
grader; every file of the merge compared byte for byte with the one run's, and every cell of the
term's gradebook (``term.csv``, ``canvas.csv``) checked against what was planted.

The term is tests/termbuild.py's: a Canvas roster; per assignment (one or two chapters each,
its deadline, late penalty, cutoff and Canvas points) Gradescope's export, learners who skip it,
late ones (seconds to days, some past the cutoff), extensions and adjustments by any of a
learner's ids. What each learner hands in is the reference solution or the stub per module, so
every expected cell follows from the plan by the rules the guide states (book/guides/term.md).

    python bench/term_class.py [--n 300] [--jobs 2] [--keep DIR] [--grader real|planted]

Prints the term gradebook's head and the timings: the one run, each shard, the merge (on N
machines the term takes the slowest shard plus the merge). Exits 1 listing what differs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import termbuild  # noqa: E402

SHARDS = 4


def _command(grader: str) -> list[str]:
    if grader == "planted":  # the stand-in: instant, the same points (tests/planted_mha_grade.py)
        return [sys.executable, str(ROOT / "tests" / "planted_mha_grade.py"), "term"]
    return [sys.executable, "-m", "autograder", "term"]


def _run(cmd: list, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run([*map(str, cmd)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
    return time.perf_counter() - start, proc


def _files(out: Path) -> dict[str, bytes]:
    """Every file of a term's folder but the shards' parts and the progress logs; the history
    without its times (two runs at two moments), a report without what measures its own run
    (timings, process ids)."""
    found = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if not p.is_file() or "/parts/" in f"/{rel}" or p.suffix == ".jsonl":
            continue
        data = p.read_bytes()
        if "/reports/" in f"/{rel}":
            data = json.dumps(_without_timings(json.loads(data)), sort_keys=True).encode()
        elif p.name == "history.csv":
            data = b"\n".join(line.split(b",", 1)[1] for line in data.splitlines())
        found[rel] = data
    return found


TIMINGS = {"grader_pid", "graded_at", "wall_time", "cpu_seconds"}  # a run measuring itself: when, how long, which process


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--grader", choices=("real", "planted"), default="real")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="mha-term-")) if args.keep is None else args.keep
    if args.keep is not None:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    try:
        start = time.perf_counter()
        term = termbuild.build(tmp, args.n)
        built = time.perf_counter() - start
        seed = tmp / "seed"
        seed.write_text("20260301\n")
        seed.chmod(0o600)
        common = [term.term_file, "--seed-file", seed, "--jobs", args.jobs, "--quiet"]
        one, proc = _run([*_command(args.grader), *common, "--out", tmp / "one"])
        if proc.returncode:
            print(proc.stderr[-3000:])
            return 1
        wrong = [f"one run: {x}" for x in termbuild.check(term, tmp / "one")]
        shard_walls = []
        for i in range(SHARDS):  # each a process of its own, as on its own machine, its index from the scheduler
            wall, proc = _run([*_command(args.grader), *common, "--out", tmp / "split", "--shard", str(SHARDS)],
                              {"JOB_COMPLETION_INDEX": str(i)} if i % 2 else {"SLURM_ARRAY_TASK_ID": str(i)})
            if proc.returncode:
                print(proc.stderr[-3000:])
                return 1
            shard_walls.append(wall)
        merge, proc = _run([*_command(args.grader), *common, "--out", tmp / "split", "--merge"])
        if proc.returncode:
            print(proc.stderr[-3000:])
            return 1
        mine, theirs = _files(tmp / "split"), _files(tmp / "one")
        if sorted(mine) != sorted(theirs):
            wrong.append(f"the merge's files differ from the one run's: {sorted(set(mine) ^ set(theirs))[:10]}")
        wrong += [f"{name} differs between the merge and the one run" for name in sorted(theirs)
                  if name in mine and mine[name] != theirs[name]]
        submissions = sum(w.handed for w in term.work.values())
        print(f"term: {args.n} learners, {len(termbuild.ASSIGNMENTS)} assignments, {submissions} submissions, "
              f"built in {built:.1f} s; grader: {args.grader}, --jobs {args.jobs}, on {os.cpu_count()} cores")
        print(f"one run: {one:.1f} s wall")
        print(f"{SHARDS} shards, one after another: " + ", ".join(f"{w:.1f}" for w in shard_walls)
              + f" s (sum {sum(shard_walls):.1f} s); merge {merge:.1f} s; on {SHARDS} machines: "
              f"{max(shard_walls) + merge:.1f} s (the slowest shard and the merge)")
        print("term.csv's head:")
        print("\n".join((tmp / "split" / "term.csv").read_text().splitlines()[:6]))
        print("canvas.csv's head:")
        print("\n".join((tmp / "split" / "canvas.csv").read_text().splitlines()[:4]))
        if wrong:
            print(f"{len(wrong)} differences:\n  " + "\n  ".join(wrong[:50]))
            return 1
        print(f"every cell of term.csv and canvas.csv is as planted ({args.n} learners x "
              f"{len(termbuild.ASSIGNMENTS)} assignments), and the {SHARDS} shards merged give the one run's "
              f"{len(theirs)} files byte for byte (each report's own time, duration and pid, and the history's "
              "times, aside)")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
