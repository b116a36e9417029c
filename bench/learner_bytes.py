"""What one hostile learner's files cost the grader: a class of honest learners plus one
hostile submission, graded by ``mha-grade batch`` as an instructor runs it.

    python bench/learner_bytes.py [--honest 3] [--attack NAME ...] [--checkout DIR] [--timeout 30]
                                  [--kill-after 300] [--bound-mb 500] [--single]

Attacks (``tests/hostile_files.py``): ``deep-notebook`` (a notebook cell ``x = a+a+...`` of
200k terms), ``deep-module`` (the same in ``attention.py``, read by ``--similarity``),
``newlines-notebook`` (a cell of 400k empty lines and ``(``), ``notebooks-zip`` (a zip of 100
notebooks of 20 MB each), ``frame-bomb`` (the learner's process sends a 60 MB frame whose
header is 20M empty objects); ``honest`` puts an honest learner in the hostile one's place,
the baseline. Every run is ``python -m autograder batch CLASS --out OUT -e softmax --jobs 2
--similarity --timeout T`` in a fresh process from ``--checkout`` (default: this one; give
an older checkout to measure before a change), killed after ``--kill-after`` seconds.

``--single`` grades the hostile submission alone instead (``python -m autograder SUB -e softmax
--json``), as on Gradescope: the same measures, and its report.

For each run: exit status, wall seconds, the grader tree's peak memory (the sum of its
processes' proportional set sizes, sampled every 0.1 s; and the largest single process's
peak RSS, from the kernel's count at exit), how many honest learners got full marks, and
the hostile learner's row in ``grades.csv``. Exits 1 when an honest learner lacks full
marks, a run did not end by itself, or a hostile run's peak is more than ``--bound-mb`` MB
above the honest baseline's.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import hostile_files  # noqa: E402

ATTACKS = hostile_files.attacks("mallory")


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(attack: str, honest: int, checkout: Path, timeout: float, kill_after: float, single: bool = False) -> dict:
    with tempfile.TemporaryDirectory(prefix="learner-bytes-") as tmp:
        klass, out = Path(tmp) / "class", Path(tmp) / "out"
        klass.mkdir()
        for i in range(0 if single else honest):
            hostile_files.honest(klass / f"honest{i}")
        mallory = ATTACKS[attack](klass)
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(checkout))
        if single:
            (out / "reports").mkdir(parents=True)
            cmd = [sys.executable, "-m", "autograder", str(mallory), "-e", "softmax", "--json",
                   str(out / "reports" / "mallory.json"), "--quiet"]
        else:
            cmd = [sys.executable, "-m", "autograder", "batch", str(klass), "--out", str(out), "-e", "softmax",
                   "--jobs", "2", "--similarity", "--timeout", str(timeout), "--quiet"]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], sum(_pss_kb(p) for p in _tree(proc.pid)))
                done.wait(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        killed = False
        rusage = None
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > kill_after:
                proc.kill()  # its graders and the process ahead die with it (PR_SET_PDEATHSIG)
                killed = True
                pid, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.monotonic() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        stderr = proc.stderr.read().decode(errors="replace")
        rows = {}
        if (out / "grades.csv").exists():
            with open(out / "grades.csv") as f:
                rows = {r["learner"]: r for r in csv.DictReader(f)}
        full = sum(1 for i in range(honest) if rows.get(f"honest{i}", {}).get("total") == "5")
        row = rows.get("mallory")
        said = ""
        report = out / "reports" / "mallory.json"
        if report.exists():
            r = json.loads(report.read_text())
            said = r.get("error") or "; ".join(
                f"{e['id']} {e['status']} {e['score']:g}: {(e.get('feedback') or '')[:160]}" for e in r["exercises"])
        similarity = (out / "similarity.md").read_text() if (out / "similarity.md").exists() else ""
        return {"attack": attack, "exit": "killed" if killed else proc.returncode, "wall": wall,
                "tree_peak_mb": peak[0] / 1024, "max_rss_mb": rusage.ru_maxrss / 1024 if rusage else 0,
                "honest_full": "-" if single else f"{full}/{honest}",
                "row": ("" if single else f"{row['total']} {row['status']}" if row else "no row")
                + (f" | {said}" if said else ""),
                "similarity_note": next((ln for ln in similarity.splitlines() if ln.startswith("- mallory")), ""),
                "stderr_tail": stderr.strip().splitlines()[-1:] if stderr.strip() else []}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--honest", type=int, default=3)
    p.add_argument("--attack", action="append", choices=list(ATTACKS))
    p.add_argument("--checkout", type=Path, default=ROOT)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--kill-after", type=float, default=300.0)
    p.add_argument("--bound-mb", type=float, default=500.0)
    p.add_argument("--single", action="store_true", help="grade the hostile submission alone (mha-grade SUB)")
    args = p.parse_args(argv)
    attacks = args.attack or list(ATTACKS)
    if "honest" not in attacks:
        attacks.insert(0, "honest")
    results = []
    for attack in attacks:
        r = run(attack, args.honest, args.checkout.resolve(), args.timeout, args.kill_after, args.single)
        results.append(r)
        print(f"{r['attack']:18} exit {r['exit']!s:6} {r['wall']:6.1f} s  tree peak {r['tree_peak_mb']:7.0f} MB  "
              f"largest process {r['max_rss_mb']:6.0f} MB  honest full marks {r['honest_full']}", flush=True)
        print(f"{'':18} mallory: {r['row'][:300]}", flush=True)
        if r["similarity_note"]:
            print(f"{'':18} similarity.md: {r['similarity_note'][:200]}", flush=True)
        if r["stderr_tail"]:
            print(f"{'':18} stderr: {r['stderr_tail'][0][:200]}", flush=True)
    base = next(r for r in results if r["attack"] == "honest")
    failed = [r["attack"] for r in results
              if r["exit"] not in ((0, 2) if args.single else (0,))  # 2: a submission refused whole
              or not args.single and r["honest_full"] != f"{args.honest}/{args.honest}"
              or r["tree_peak_mb"] > base["tree_peak_mb"] + args.bound_mb]
    if failed:
        print(f"FAILED: {', '.join(failed)} (not ended by itself, an honest learner without full marks, "
              f"or more than {args.bound_mb:g} MB above the honest class)")
        return 1
    print(f"every run ended by itself, every honest learner got full marks, every peak within "
          f"{args.bound_mb:g} MB of the honest class's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
