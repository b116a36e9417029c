"""How long the book takes to build, clean and after editing one chapter.

Works on a temporary copy of the working tree (never on the repository's own _build), with the
command `make book` runs: `jupyter-book build . -W -n --keep-going`, every chapter executed
against the reference solutions, one thread.

Steps, each a row of the table:
1. clean build (no _build): every notebook executed. Target: at most 240 s.
2. rebuild with nothing changed: no notebook executed (the execution cache holds them all).
3. rebuild after editing one chapter's prose (a markdown cell): no notebook executed, because
   the cache keys on code cells only.
4. rebuild after editing one chapter's code (a comment appended to its last code cell): exactly
   that notebook executed.

Exits non-zero when a build fails or a target is missed.

    .venv/bin/python bench/book.py [--chapter book/02_masking] [--clean-target 240] [--keep]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
# What a copy of the working tree leaves out: the environment, builds, history, caches.
SKIP = shutil.ignore_patterns(".venv", "_build", ".git", "__pycache__", ".ipynb_checkpoints",
                              ".pytest_cache", ".hypothesis", "grades", "*.egg-info")
# myst-nb logs one line per notebook: "<path>.ipynb: Executed notebook in 3.21 seconds [mystnb]"
# when it ran it, "<path>.ipynb: Using cached notebook: ID=4 [mystnb]" when the cache had it.
EXECUTED = re.compile(r"^(\S+\.ipynb): Executed notebook in ([\d.]+) seconds", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Step:
    name: str
    seconds: float
    ok: bool
    executed: dict[str, float] = field(default_factory=dict)  # notebook -> execution seconds
    expect: str = ""
    met: bool = True


def toc_notebooks(tree: Path) -> list[str]:
    """The toc's pages that are notebooks, as paths relative to the tree (book/01_attention.ipynb)."""
    toc = yaml.safe_load((tree / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            files.append(entry.get("file", ""))
            walk(entry.get("sections"))

    walk(toc.get("chapters"))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    stems = [re.sub(r"\.(md|ipynb)$", "", f) for f in files if f]
    return [f"{stem}.ipynb" for stem in stems if (tree / f"{stem}.ipynb").exists()]


def build(tree: Path, name: str) -> Step:
    env = dict(os.environ, MHA_BACKEND="solutions", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=str(tree))  # the copy's own packages, not the repository's
    start = time.perf_counter()
    proc = subprocess.run([str(JUPYTER_BOOK), "build", ".", "-W", "-n", "--keep-going"],
                          cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    log = ANSI.sub("", proc.stdout + proc.stderr)
    (tree / "_build").mkdir(exist_ok=True)
    (tree / "_build" / f"bench-{len(list((tree / '_build').glob('bench-*.log')))}.log").write_text(log)
    executed = {str(Path(path).resolve().relative_to(tree.resolve())): float(sec)
                for path, sec in EXECUTED.findall(log)}
    ok = proc.returncode == 0
    if not ok:
        print(f"--- {name}: jupyter-book build failed (exit {proc.returncode}); last lines:")
        print("\n".join(log.splitlines()[-30:]))
    return Step(name, seconds, ok, executed)


def edit_notebook(path: Path, cell_type: str, text: str) -> None:
    """Append a line to the last cell of a type (nbformat JSON, kept as it was otherwise)."""
    nb = json.loads(path.read_text())
    cell = [c for c in nb["cells"] if c["cell_type"] == cell_type][-1]
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    cell["source"] = source + "\n" + text
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", help="notebook to edit, e.g. book/02_masking (default: the first in the toc)")
    parser.add_argument("--clean-target", type=float, default=240.0, help="seconds (default 240)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args()

    tree = Path(tempfile.mkdtemp(prefix="mha-book-bench-")) / "repo"
    shutil.copytree(ROOT, tree, ignore=SKIP)
    notebooks = toc_notebooks(tree)
    if not notebooks:
        print("no notebook in _toc.yml: nothing to execute")
        return 1
    chapter = f"{args.chapter.removesuffix('.ipynb')}.ipynb" if args.chapter else notebooks[0]
    if chapter not in notebooks:
        print(f"{chapter} is not a notebook of the toc: {notebooks}")
        return 1
    print(f"copy: {tree}; {len(notebooks)} notebooks in the toc; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)

    steps = []
    try:
        clean = build(tree, "clean build (rm -rf _build)")
        clean.expect = f"<= {args.clean_target:.0f} s, all {len(notebooks)} executed"
        clean.met = clean.seconds <= args.clean_target and set(clean.executed) == set(notebooks)
        steps.append(clean)

        same = build(tree, "rebuild, nothing changed")
        same.expect, same.met = "0 executed", not same.executed
        steps.append(same)

        edit_notebook(tree / chapter, "markdown", "Edited by bench/book.py.")
        prose = build(tree, f"rebuild, prose of {chapter} edited")
        prose.expect, prose.met = "0 executed", not prose.executed
        steps.append(prose)

        edit_notebook(tree / chapter, "code", "# edited by bench/book.py")
        code = build(tree, f"rebuild, code of {chapter} edited")
        code.expect, code.met = f"only {chapter} executed", set(code.executed) == {chapter}
        steps.append(code)
    finally:
        if args.keep:
            print(f"kept {tree.parent}")
        else:
            shutil.rmtree(tree.parent, ignore_errors=True)

    width = max(len(s.name) for s in steps)
    print(f"\n{'step':<{width}}  {'seconds':>8}  {'executed':>8}  {'target':<28}  result")
    for s in steps:
        result = "ok" if s.ok and s.met else ("BUILD FAILED" if not s.ok else "MISSED")
        print(f"{s.name:<{width}}  {s.seconds:8.1f}  {len(s.executed):8d}  {s.expect:<28}  {result}")
    print("\nexecution time per notebook in the clean build:")
    for path, sec in sorted(steps[0].executed.items()):
        print(f"  {path:<40} {sec:7.1f} s")
    return 0 if all(s.ok and s.met for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
