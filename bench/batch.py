"""Benchmark: a class of 100 submissions graded by ``mha-grade batch --jobs 2``.

The class mixes correct submissions, partly wrong ones (classic bugs in one or two exercises,
unfinished chapters) and hostile ones (an infinite loop, ``os._exit`` at import and inside a
function, ``sys.exit``, a syntax error, a monkeypatched numpy, a fake printed report, a
broken notebook). Target: at most 0.3 s of wall time per submission on average, everything
included (the grader's imports, each grader's learner-side zygote, the summary).

    python bench/batch.py [--n 100] [--jobs 2] [--target 0.3]

Prints a table; exits non-zero when the target is missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (file, text to append): later definitions replace the correct ones.
WRONG = {
    "no max subtraction": ("attention.py", "\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)\n"
                                           "    return e / e.sum(axis=axis, keepdims=True)\n"),
    "no 1/sqrt(d_k)": ("attention.py", "\n\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
                                       "    s = q @ np.swapaxes(k, -1, -2)\n"
                                       "    w = softmax(s) if mask is None else masked_softmax(s, mask)\n"
                                       "    return w @ v, w\n"),
    "causal off by one": ("masking.py", "\n\ndef causal_mask(num_queries, num_keys=None):\n"
                                        "    num_keys = num_queries if num_keys is None else num_keys\n"
                                        "    return np.tril(np.ones((num_queries, num_keys), bool), num_keys - num_queries - 1)\n"),
    "reshape without transpose": ("heads.py", "\n\ndef split_heads(x, num_heads):\n"
                                              "    b, l, e = x.shape\n"
                                              "    return x.reshape(b, num_heads, l, e // num_heads)\n"),
    "chapter 4 not done": ("layer.py", None),  # the stubs of chapter 4
    "chapters 3-5 not done": ("heads.py analysis.py layer.py", None),
}
HOSTILE = {
    "infinite loop": ("attention.py", "\n\ndef softmax(x, axis=-1):\n    while True:\n        pass\n"),
    "os._exit at import": ("masking.py", "\nimport os\nos._exit(0)\n"),
    "os._exit in a function": ("heads.py", "\n\ndef merge_heads(x):\n    import os\n    os._exit(1)\n"),
    "sys.exit at import": ("analysis.py", "\nimport sys\nsys.exit(0)\n"),
    "SystemExit in a function": ("attention.py", "\n\ndef softmax(x, axis=-1):\n    raise SystemExit(0)\n"),
    "syntax error": ("layer.py", "\ndef broken(:\n"),
    "monkeypatched numpy": ("attention.py", "\nnp.allclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None\n"),
    "fake report printed": ("attention.py", "\nprint('softmax: 5/5 passed\\nTOTAL 100/100')\n"),
    "broken notebook": (None, None),
    "empty": (None, None),
}


def make_class(root: Path, n: int) -> dict[str, str]:
    """``n`` submissions under ``root``: ~60% correct, ~30% partly wrong, the rest hostile."""
    kinds, wrong, hostile = {}, list(WRONG), list(HOSTILE)
    n_hostile = min(len(hostile), max(1, n // 10))
    n_wrong = max(1, (3 * n) // 10)
    for i in range(n):
        if i < n_hostile:
            kind, group, patch = hostile[i], "hostile", HOSTILE[hostile[i]]
        elif i < n_hostile + n_wrong:
            name = wrong[(i - n_hostile) % len(wrong)]
            kind, group, patch = name, "partly wrong", WRONG[name]
        else:
            kind, group, patch = "correct", "correct", None
        learner = root / f"learner{i:03d}"
        learner.mkdir(parents=True)
        if kind == "empty":
            pass
        elif kind == "broken notebook":
            (learner / "01_attention.ipynb").write_text('{"cells": [ {"cell_type": "code", ')
        else:
            for f in (ROOT / "solutions").glob("*.py"):
                if f.name != "__init__.py":
                    (learner / f.name).write_text(f.read_text())
            files, text = patch if patch else ("", None)
            for name in (files or "").split():
                if text is None:
                    shutil.copy(ROOT / "mha_exercises" / name, learner / name)
                else:
                    (learner / name).write_text((learner / name).read_text() + text)
        kinds[learner.name] = f"{group}: {kind}"
    return kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--target", type=float, default=0.3, help="seconds of wall time per submission")
    args = parser.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    with tempfile.TemporaryDirectory(prefix="mha-bench-batch-") as tmp:
        kinds = make_class(Path(tmp) / "class", args.n)
        import resource

        cpu0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        from autograder.classroom import batch  # the grader's imports are part of the cost

        grade = batch.pipeline_grader()
        imported = time.perf_counter() - start
        result = batch.run_batch(Path(tmp) / "class", Path(tmp) / "out", jobs=args.jobs, grade=grade, progress=False)
        wall = time.perf_counter() - start
        cpu1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        # Graders, their zygotes and every learner-side child (all reaped by now), and this process.
        cpu = {k: (b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime) for k, a, b in
               (("batch parent", cpu0[0], cpu1[0]), ("graders + learner processes", cpu0[1], cpu1[1]))}
        rerun_start = time.perf_counter()
        rerun = batch.run_batch(Path(tmp) / "class", Path(tmp) / "out", jobs=args.jobs, grade=grade, progress=False)
        rerun_wall = time.perf_counter() - rerun_start
        summary = (Path(tmp) / "out" / "summary.md").read_text()

    by_group: dict[str, list] = {}
    for o in result.outcomes:
        by_group.setdefault(kinds[o.learner].split(":")[0], []).append(o)
    per_submission = wall / args.n
    table = Table(title=f"mha-grade batch: {args.n} submissions, --jobs {args.jobs}")
    for col in ("", "submissions", "median s", "max s", "mean score"):
        table.add_column(col, justify="right" if col else "left")
    for group, outs in sorted(by_group.items()):
        secs = [o.seconds for o in outs]
        table.add_row(group, str(len(outs)), f"{statistics.median(secs):.2f}", f"{max(secs):.2f}",
                      f"{statistics.fmean(o.report.get('score', 0) for o in outs):.1f}")
    table.add_section()
    table.add_row("grader imports (once)", "", f"{imported:.2f}", "", "")
    table.add_row("whole batch, wall", str(args.n), f"{wall:.1f}", "", "")
    table.add_row("re-run (all unchanged), wall", str(rerun.graded) + " graded", f"{rerun_wall:.2f}", "", "")
    for name, seconds in cpu.items():
        table.add_row(f"CPU, {name}", "", f"{seconds:.1f}", f"{seconds / args.n:.3f}/sub", "")
    table.add_row("wall per submission", "", f"{per_submission:.3f}", f"target {args.target:g}", "")
    console = Console(width=100)
    console.print(table)
    slow = sorted(result.outcomes, key=lambda o: -o.seconds)[:3]
    console.print("slowest: " + ", ".join(f"{kinds[o.learner]} {o.seconds:.1f} s" for o in slow))
    errors = [o for o in result.outcomes if o.error]
    console.print(f"grader failures: {len(errors)}" + "".join(f"\n  {o.learner}: {o.error}" for o in errors))
    console.print("\n" + summary)
    ok = per_submission <= args.target and not errors and rerun.graded == 0
    console.print(f"{'PASS' if ok else 'MISS'}: {per_submission:.3f} s per submission (target <= {args.target:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
