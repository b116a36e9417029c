"""A chapter's set-up cell starts the grader (``warm_up()``), and the first ``check()`` uses it.

How fast that first check answers is measured by ``bench/check.py`` (its target is a fraction
of a torch import); here: that the service is started by the set-up cell and not again by the
check, and that every chapter calls ``warm_up()`` first in its set-up cell, before its imports.
"""
import json
import threading
import time
from pathlib import Path

import pytest

from autograder import service
from mha_exercises.check import check, warm_up

BOOK = Path(__file__).resolve().parents[1] / "book"
NOTEBOOKS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(autouse=True)
def fresh_service():
    service.stop()
    yield
    service.stop()


def _started():
    for thread in threading.enumerate():
        if thread.name == "mha-grader-start":
            thread.join(60)
    return service._SERVICE


def test_warm_up_starts_the_service_the_first_check_then_uses(monkeypatch, capsys):
    monkeypatch.setenv("MHA_BACKEND", "solutions")
    started = time.monotonic()
    warm_up()
    assert time.monotonic() - started < 1.0, "warm_up() must return at once, the start runs in the background"
    handle = _started()
    assert handle is not None and handle.alive(), "warm_up() started no grader"
    check("softmax")
    assert capsys.readouterr().out.startswith("✔ softmax: 5/5 points, passed")
    assert service._SERVICE is handle, "the first check started a second grader instead of using the warm one"
    warm_up()  # again, in a re-run set-up cell: the running service stays
    assert _started() is handle and handle.alive()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_set_up_cell_starts_the_grader_before_its_imports(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    setup = next(c for c in cells if "remove-cell" not in c.get("metadata", {}).get("tags", []))
    lines = "".join(setup["source"]).splitlines()
    assert "warm_up()" in [line.split("#")[0].strip() for line in lines], f"{path.name}: no warm_up() in the set-up cell"
    call = next(i for i, line in enumerate(lines) if line.startswith("warm_up()"))
    heavy = [i for i, line in enumerate(lines) if line.startswith(("import numpy", "import torch", "from lab"))]
    assert heavy and call < min(heavy), f"{path.name}: warm_up() should come before the cell's heavy imports"
