"""The chapters as a learner runs them (issue 47): without myst-nb, with the stubs, in JupyterLab.

The whole of it, where it ships (the release installed in a fresh venv from its README, every
chapter run with the stubs and with the references) is ``bench/learner_install.py``: minutes, so
a bench, whose record must be of the current script and a pass. Here, in seconds: the learner's
case emulated in the development venv (myst-nb made unimportable, ``MHA_BACKEND`` unset, the
stubs of this checkout), the helpers alone, and the release's rewriting of glued numbers.
"""
from __future__ import annotations

import ast
import copy
import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from autograder.classroom.release.unsolved import strip_notebook
from lab import page
from mha_exercises import backend

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
WHERE = re.compile(r"implement .*\bin mha_exercises/\w+\.py")


def _code(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_chapter_imports_the_book_builder(path):
    """myst-nb is the book's build, not the learner set: the chapters glue through lab.page."""
    found = [s for s in _code(path) if re.search(r"^\s*(from|import)\s+myst_nb\b", s, re.M)]
    assert not found, f"{path.name} imports myst_nb, which a learner's install lacks"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_release_shows_every_glued_number_through_eval(path):
    """In the release each {glue:text} role becomes jupyterlab-myst's {eval} of glued(key), for a
    key the chapter's code glues, and the chapter imports glued."""
    notebook = json.loads(path.read_text())
    strip_notebook(notebook)
    text = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    assert "{glue" not in text, f"{path.name}: a glue role the release leaves raw"
    keys = {m.split(":")[0] for m in re.findall(r'\{eval\}`glued\("([^"]+)"\)`', text)}
    glued = {node.args[0].value for s in _code(path) for node in ast.walk(ast.parse(s))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "glue"}
    assert keys <= glued, f"{path.name}: pastes {sorted(keys - glued)}, which no cell glues"
    if keys:
        assert any(re.search(r"from lab\.page import .*\bglued\b", s) for s in _code(path)), path.name


def test_glue_keeps_the_value_and_formats_it_like_the_book(monkeypatch):
    monkeypatch.setattr(page, "_myst_glue", None)  # as in the learner set
    page.glue("test_value", 0.123456, display=False)
    assert repr(page.glued("test_value:.2f")) == "0.12" and page.glued("test_value") == "0.123456"
    assert "run the cell above" in page.glued("never_glued:.2f")


def test_claims_stop_only_the_reference_run(monkeypatch, capsys):
    monkeypatch.setenv("MHA_BACKEND", "learner")
    page.claim(False, "x is small")
    assert "your run contradicts" in capsys.readouterr().out
    monkeypatch.setenv("MHA_BACKEND", "solutions")
    with pytest.raises(AssertionError, match="the text says: x is small"):
        page.claim(False, "x is small")


def test_stubs_are_found_by_reading_the_file():
    import mha_exercises.efficient as learner_efficient
    import solutions.efficient as reference_efficient

    found = backend.stubs(learner_efficient.__file__, ("KVCache", "GroupedQueryAttention"))
    assert set(found) == {"KVCache", "GroupedQueryAttention"}
    assert all(WHERE.search(message) for message in found.values()), found
    assert backend.stubs(reference_efficient.__file__) == {}


def test_a_missing_prerequisite_runs_the_published_reference_or_says_what_to_do(monkeypatch, capsys):
    monkeypatch.setenv("MHA_BACKEND", "learner")
    monkeypatch.setattr(backend, "_PUBLISHED", set())
    module = backend.prerequisite("layer", "MultiHeadAttention")  # the stub of this checkout
    assert module.__name__ == "solutions.layer" and backend.load("layer").__name__ == "solutions.layer"
    assert "runs the published reference solutions of layer.py" in capsys.readouterr().out

    monkeypatch.setattr(backend, "_PUBLISHED", set())
    real = backend.importlib.import_module

    def unpublished(name, *args):
        if name.startswith("solutions"):
            raise ModuleNotFoundError(name)
        return real(name, *args)

    monkeypatch.setattr(backend.importlib, "import_module", unpublished)
    module = backend.prerequisite("layer", "MultiHeadAttention")
    said = capsys.readouterr().out
    assert module.__name__ == "mha_exercises.layer"
    assert said.count("Not done yet") == 1 and "mha_exercises/layer.py (chapter 4)" in said, said


# ------------------------------------------------------------ chapters run as a learner would


def _learner_kernel_env(tmp_path: Path) -> dict:
    """MHA_BACKEND unset and myst_nb unimportable: the kernel of the learner set, emulated."""
    blocked = tmp_path / "no_myst_nb"
    blocked.mkdir(exist_ok=True)
    (blocked / "myst_nb.py").write_text("raise ImportError('myst-nb is not in the learner set')\n")
    env = {k: v for k, v in os.environ.items() if k != "MHA_BACKEND"}
    env["PYTHONPATH"] = os.pathsep.join([str(blocked), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return dict(env, OMP_NUM_THREADS="1")


@pytest.mark.parametrize("name", ["08_language_model.ipynb"])
def test_with_the_stubs_a_chapter_stops_at_an_exercise_of_its_own(name, tmp_path, monkeypatch):
    """Chapter 8 (glue without myst-nb; three earlier chapters' exercises, published here as the
    references) with the stubs: the first error is an exercise's NotImplementedError that says
    where to implement it, never an import error or a NameError. Without published references, in
    the release's own venv: tests/test_release.py (chapter 8) and bench/learner_install.py."""
    for key, value in _learner_kernel_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MHA_BACKEND", raising=False)
    notebook = nbformat.read(BOOK / name, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}})
    with pytest.raises(CellExecutionError) as caught:
        client.execute()
    assert caught.value.ename == "NotImplementedError", (caught.value.ename, str(caught.value.evalue)[:300])
    message = str(caught.value.evalue)
    assert WHERE.search(message), message
    if name.startswith("08"):
        assert "language_model.py" in message, message  # its own, after the published references ran
        said = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
        assert "runs the published reference solutions" in said


# ------------------------------------------------------------------------- the heavy bench


def test_the_learner_install_bench_passed_with_its_current_script():
    """bench/learner_install.py's record: a pass, of the script as it is now (rerun it after a
    change: ``python bench/run.py learner_install``)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import run as bench_run

    record = json.loads((ROOT / "bench" / "results" / "learner_install.json").read_text())
    assert record["source_sha256"] == bench_run.source_sha(ROOT / "bench" / "learner_install.py"), (
        "bench/learner_install.py changed since its record: python bench/run.py learner_install")
    assert record["exit_status"] == 0 and "PASS every chapter" in record["output"], record["output"][-2000:]
