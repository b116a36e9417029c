"""Write the hosted-notebook cell at the top of every chapter notebook, from one template.

A chapter opened on a hosted service (Colab, Binder, a JupyterHub) runs in a kernel that does not
have the course's package: its first cell installs it from the published release, whose address
is `sphinx.config.course_hosting.release_url` in _config.yml (the one place it is set; the launch
buttons come from the same setting, see book/_ext/book_site.py). Where the package is installed
(`make install`, `make book`, nbval) the cell finds it and does nothing, without the network.

The cell is the same in every chapter: it is this file's template filled with _config.yml's
setting. Run this script after changing either; it replaces the cell (id `hosted-install`) or
puts it first, and touches nothing else in a notebook. `--check` only reports the notebooks
whose cell is missing or stale (tests/test_hosted_cell.py runs it).

    python scripts/sync_hosted_cell.py [--check]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CELL_ID = "hosted-install"

# Kept short: a learner reads it above the chapter's title. `{url}` is a Python literal.
TEMPLATE = '''\
# Hosted notebooks (Colab, Binder, JupyterHub): install the course's package if this kernel lacks it.
# Where the course is installed (`make install`) this does nothing. From scripts/sync_hosted_cell.py.
import importlib, importlib.util, os, site, subprocess, sys

COURSE_PACKAGE_URL = {url}  # release_url in the course's _config.yml
HOSTED = "google.colab" in sys.modules or any(
    name in os.environ for name in ("COLAB_RELEASE_TAG", "JUPYTERHUB_USER", "BINDER_LAUNCH_HOST"))
if importlib.util.find_spec("mha_exercises") is None:
    if not (HOSTED and COURSE_PACKAGE_URL):
        raise ModuleNotFoundError(
            "this kernel has no mha_exercises: in the course folder run `make install` and choose the "
            "kernel of its .venv" + (f", or run `%pip install {{COURSE_PACKAGE_URL}}`" if COURSE_PACKAGE_URL else ""))
    print(f"Installing the course's package from {{COURSE_PACKAGE_URL}} (once per session) ...")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", COURSE_PACKAGE_URL], check=True)
    site.addsitedir(site.getusersitepackages())  # pip's fallback where site-packages is read-only
    importlib.invalidate_caches()
    import mha_exercises  # fails here, not three cells down, if the install did not take
'''


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks of _toc.yml, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = []

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    walk([{"file": toc["root"]}] + (toc.get("chapters") or []))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    notebooks = []
    for name in files:
        path = root / name
        path = path if path.suffix else path.with_suffix(".ipynb")
        if path.suffix == ".ipynb" and path.exists():
            notebooks.append(path)
    return notebooks


def release_url(root: Path = ROOT) -> str:
    """_config.yml's sphinx.config.course_hosting.release_url ("" when unset)."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    hosting = ((config.get("sphinx") or {}).get("config") or {}).get("course_hosting") or {}
    url = hosting.get("release_url") or ""
    if not isinstance(url, str):
        raise SystemExit(f"_config.yml: course_hosting.release_url must be a string, got {url!r}")
    return url.strip()


def cell_source(url: str) -> str:
    return TEMPLATE.format(url=repr(url) if url else "None")


def cell(url: str) -> dict:
    lines = cell_source(url).splitlines(keepends=True)
    # remove-cell: the published page stays as it was; the .ipynb it offers keeps the cell.
    return {"cell_type": "code", "execution_count": None, "id": CELL_ID,
            "metadata": {"tags": ["remove-cell"]}, "outputs": [], "source": lines}


def synced(notebook: dict, url: str) -> dict:
    """The notebook with the current cell first and no other copy of it."""
    others = [c for c in notebook["cells"] if c.get("id") != CELL_ID]
    return {**notebook, "cells": [cell(url)] + others}


def _dump(notebook: dict, newline_at_end: bool) -> str:
    # The chapters' own layout (one-space indent, UTF-8 kept), so that only the cell changes.
    return json.dumps(notebook, indent=1, ensure_ascii=False) + ("\n" if newline_at_end else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale notebooks, write nothing")
    args = parser.parse_args(argv)

    url = release_url()
    stale = []
    for path in chapter_notebooks():
        text = path.read_text(encoding="utf-8")
        notebook = json.loads(text)
        if notebook["cells"] and notebook["cells"][0] == cell(url):
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(_dump(synced(notebook, url), text.endswith("\n")), encoding="utf-8")
    verb = "stale (run scripts/sync_hosted_cell.py)" if args.check else "updated"
    for path in stale:
        print(f"{path}: {verb}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
