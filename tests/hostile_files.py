"""Submissions built to cost the grader, not to score: files the grader itself reads (the
notebooks' JSON and cells, zips, Python source for ``--similarity``) and frames a learner's
process sends back. Shared by ``tests/test_learner_bytes.py`` and ``bench/learner_bytes.py``.
"""
from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ("import numpy as np\n\ndef softmax(x, axis=-1):\n"
           "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
           "    return e / np.sum(e, axis=axis, keepdims=True)\n")


def honest(folder: Path) -> Path:
    """A copy of the reference solutions."""
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    return folder


def notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": []} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def long_expression(terms: int = 200_000) -> str:
    """``x = a+a+...``: one statement whose tree is ``terms`` deep (Python's own parser and
    ``ast`` conversion recurse on it)."""
    return "x = " + "+".join(["a"] * terms) + "\n"


def deep_notebook(path: Path, terms: int = 200_000) -> Path:
    """Chapter 1's notebook: a correct softmax, then a cell of one very long expression."""
    path.write_text(notebook([SOFTMAX, long_expression(terms)]))
    return path


def deep_module(folder: Path, terms: int = 200_000) -> Path:
    """The solutions, with the long expression added to ``attention.py`` (read by ``--similarity``)."""
    honest(folder)
    with open(folder / "attention.py", "a") as f:
        f.write("\n" + long_expression(terms))
    return folder


def newlines_notebook(path: Path, lines: int = 400_000) -> Path:
    """A correct softmax, then a cell of ``lines`` empty lines and an unclosed ``(``: not Python,
    so the grader looks for definitions in it with a pattern (once quadratic in ``lines``)."""
    path.write_text(notebook([SOFTMAX, "\n" * lines + "("]))
    return path


def notebooks_zip(path: Path, count: int = 100, megabytes: int = 20) -> Path:
    """A small zip of ``count`` notebooks of almost ``megabytes`` MB each (one output string of
    spaces: each under the per-notebook cap, all together far over any honest submission)."""
    filler = " " * (megabytes * 2**20 - 4096)
    nb = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": SOFTMAX,
                                "outputs": [{"output_type": "stream", "name": "stdout", "text": filler}]}],
                     "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for i in range(count):
            z.writestr(f"hw/notebook_{i:03d}.ipynb", nb)
    return path


# A softmax that writes one frame of its own to its line to the grader: a JSON header of
# ``COUNT`` empty objects (3 bytes each), then returns normally.
FRAME_BOMB = '''
import os as _os
import socket as _socket
import stat as _stat
import struct as _struct


def softmax(x, axis=-1):
    head = b"[" + b"{}," * (COUNT - 1) + b"{}]"
    frame = _struct.pack("<QI", 4 + len(head), len(head)) + head
    for fd in range(3, 65):
        try:
            if _stat.S_ISSOCK(_os.fstat(fd).st_mode):
                _socket.socket(fileno=_os.dup(fd)).sendall(frame)
        except OSError:
            pass
    return np.zeros_like(x)
'''


def frame_bomb(folder: Path, count: int = 20_000_000) -> Path:
    """The solutions, with a softmax that sends a frame whose header is ``count`` empty objects
    (20 M: a 60 MB frame, under the 64 MB a frame may have)."""
    honest(folder)
    with open(folder / "attention.py", "a") as f:
        f.write("\n" + FRAME_BOMB.replace("COUNT", str(count)))
    return folder


def adversarial(folder: Path, name: str, module: str = "attention") -> Path:
    """The solutions, with ``tests/adversarial/<name>.py`` appended to ``<module>.py`` (its
    later definition wins), as ``tests/test_grader_adversarial.py`` builds them."""
    honest(folder)
    with open(folder / f"{module}.py", "a") as f:
        f.write("\n\n" + (ROOT / "tests" / "adversarial" / f"{name}.py").read_text())
    return folder


def attacks(name: str) -> dict:
    """Each attack above (and the honest submission it stands beside), as a builder of the
    submission called ``name`` in a given folder: ``attacks("mallory")["frame-bomb"](folder)``."""
    return {
        "honest": lambda d: honest(d / name),
        "deep-notebook": lambda d: deep_notebook(d / f"{name}.ipynb"),
        "deep-module": lambda d: deep_module(d / name),
        "newlines-notebook": lambda d: newlines_notebook(d / f"{name}.ipynb"),
        "notebooks-zip": lambda d: notebooks_zip(d / f"{name}.zip"),
        "frame-bomb": lambda d: frame_bomb(d / name),
    }
