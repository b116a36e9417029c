"""The chapters as a learner runs them: every notebook of the learner release, executed in a
fresh environment made from the release's README alone, twice.

Builds the release (``scripts/build_release.py``), unzips it in a temporary folder outside the
project, runs the set-up commands of its README (a fresh venv; pip's cache makes it the install of
a machine that fetched the wheels before), checks that what renders the chapters' MyST in
JupyterLab is installed and enabled (jupyterlab-myst), then executes every chapter in that
environment's kernel (nbclient, as JupyterLab's "Run All": it stops at the first error):

* with the stubs, as shipped: each chapter's first error must be an exercise's own
  ``NotImplementedError`` saying where to implement it (``mha_exercises/<module>.py``), never an
  import error, a ``NameError`` or anything else;
* with the reference solutions copied over the stubs: no error at all.

    .venv/bin/python bench/run.py learner_install [--keep]

Prints a table per run and PASS/MISS lines; exits non-zero on a miss.
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
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.classroom import release as builder  # noqa: E402
from autograder.classroom.release import learner_readme  # noqa: E402

# Run inside the learner's venv: executes each chapter like "Run All" and reports the first error.
DRIVER = r"""
import json, sys, time
from pathlib import Path
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

book = Path(sys.argv[1])
out = []
for path in sorted(book.glob("[0-9][0-9]_*.ipynb")):
    if sys.argv[2:] and path.name not in sys.argv[2:]:  # only the chapters named, if any
        continue
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(book)}})
    started, error = time.perf_counter(), None
    try:
        client.execute()
    except CellExecutionError as err:
        error = {"ename": err.ename, "evalue": str(err.evalue)[:300]}
    ran = [c for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]
    failing = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
               and any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    out.append({"chapter": path.name, "seconds": round(time.perf_counter() - started, 1), "ran": len(ran),
                "code_cells": sum(c.cell_type == "code" for c in nb.cells), "error": error,
                "error_cell": failing[0] if failing else None})
    print(json.dumps(out[-1]), flush=True)
"""

WHERE = re.compile(r"implement .*\bin mha_exercises/\w+\.py")


def _env() -> dict:
    """A learner's shell: nothing of this project's on the path, no backend chosen."""
    drop = ("PYTHONPATH", "MHA_BACKEND", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return dict(env, OMP_NUM_THREADS="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_COMPILE="1")


def run_chapters(folder: Path, *names: str) -> list[dict]:
    """Each chapter (or those named) run in the release's venv, as "Run All": what it met."""
    python = folder / ".venv" / "bin" / "python"
    proc = subprocess.run([str(python), "-c", DRIVER, str(folder / "book"), *names], cwd=folder / "book", env=_env(),
                          capture_output=True, text=True, timeout=3600)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not rows:
        raise SystemExit(f"the driver failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return rows


def stub_miss(row: dict) -> str | None:
    """Why a chapter's run with the stubs is not what a learner should meet, or None."""
    error = row["error"]
    if error is None:
        return "no error: an exercise ran without being written?"
    if error["ename"] != "NotImplementedError":
        return f"first error is {error['ename']}: {error['evalue'][:120]}"
    if not WHERE.search(error["evalue"]):
        return f"the NotImplementedError does not say where to implement it: {error['evalue'][:120]}"
    return None


def _table(title: str, rows: list[dict], stubs: bool) -> None:
    print(f"\n{title}")
    print(f"| chapter | code cells | ran | seconds | {'first error' if stubs else 'errors'} |")
    print("|---|---|---|---|---|")
    for r in rows:
        e = r["error"]
        said = (f"cell {r['error_cell']}: {e['ename']}: {e['evalue'].splitlines()[0][:90]}" if e else "none")
        print(f"| {r['chapter']} | {r['code_cells']} | {r['ran']} | {r['seconds']} | {said} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="mha-learner-bench-"))
    misses = []
    try:
        builder.build(home / "dist" / "release")
        with zipfile.ZipFile(home / "dist" / "release.zip") as z:
            z.extractall(home)
        folder = home / "release"
        commands = learner_readme.setup_commands((folder / "README.md").read_text())
        started = time.perf_counter()
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=folder, env=_env(),
                              capture_output=True, text=True, timeout=1800)
        install = time.perf_counter() - started
        if proc.returncode != 0:
            print(proc.stdout[-2000:], proc.stderr[-4000:], sep="\n", file=sys.stderr)
            return 1
        system = re.search(r"include-system-site-packages = (\w+)", (folder / ".venv" / "pyvenv.cfg").read_text())
        print(f"install (the README's commands, warm pip cache): {install:.0f} s; "
              f"system site-packages: {system.group(1)}")
        if system.group(1) != "false":
            misses.append("the learner's venv sees the system's site-packages")
        lab = subprocess.run([str(folder / ".venv" / "bin" / "jupyter"), "labextension", "list"], cwd=folder,
                             env=_env(), capture_output=True, text=True, timeout=300)
        listing = re.sub(r"\x1b\[[0-9;]*m", "", lab.stdout + lab.stderr)
        myst = next((line.strip() for line in listing.splitlines() if "jupyterlab-myst" in line and " v" in line), "")
        print(f"jupyterlab-myst: {myst or 'NOT INSTALLED'}")
        if "enabled" not in myst:
            misses.append("jupyterlab-myst is not installed and enabled in the learner's JupyterLab")
        if list((folder / "book").glob("*.ipynb")) and any(
                "{glue" in p.read_text() for p in (folder / "book").glob("[0-9][0-9]_*.ipynb")):
            misses.append("a release chapter still has a {glue} role, which JupyterLab shows raw")

        rows = run_chapters(folder)
        _table("With the stubs (as shipped):", rows, True)
        for r in rows:
            why = stub_miss(r)
            if why:
                misses.append(f"{r['chapter']} with the stubs: {why}")

        for reference in sorted((ROOT / "solutions").glob("*.py")):
            if reference.name != "__init__.py":
                shutil.copy2(reference, folder / "mha_exercises" / reference.name)
        rows = run_chapters(folder)
        _table("With the reference solutions copied into mha_exercises/:", rows, False)
        for r in rows:
            if r["error"] is not None or r["ran"] != r["code_cells"]:
                misses.append(f"{r['chapter']} with the references: {r['error']}")
        print(f"\nchapters with the references: {sum(r['seconds'] for r in rows):.0f} s in all")
    finally:
        if args.keep:
            print(f"kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    for miss in misses:
        print(f"MISS {miss}")
    print("PASS every chapter: the stubs stop at an exercise's own NotImplementedError, the references run "
          "without an error" if not misses else f"{len(misses)} misses")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
