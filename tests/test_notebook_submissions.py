"""Notebook submissions: exercise definitions taken out of chapter notebooks, nothing else run."""
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from autograder import submission
from autograder.submission import notebooks

SOFTMAX = ("def softmax(x, axis=-1):\n"
           "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
           "    return e / e.sum(axis=axis, keepdims=True)\n")
SDPA = ("def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])\n"
        "    w = softmax(scores) if mask is None else masking.masked_softmax(scores, mask)\n"
        "    return w @ v, w\n")


def notebook(*cells) -> str:
    """A notebook of code cells, each ``source`` or ``(tags, source)``."""
    cells = [c if isinstance(c, tuple) else ([], c) for c in cells]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {"tags": tags}, "source": src.splitlines(True),
         "outputs": [], "execution_count": None} for tags, src in cells]})


CHAPTER_1 = notebook(
    "import math\nimport os\nimport numpy as np\nfrom lab import plots\n"
    "from mha_exercises.backend import load\nfrom mha_exercises.check import check\n"
    "attention = load('attention')\nmasking = load('masking')\n",
    "%matplotlib inline\n" + SOFTMAX + "print(softmax(np.ones(3)))\n",
    "check('softmax')\n",
    "open(os.path.join(os.sep, 'tmp', 'notebook-was-run'), 'w').write('x')\nos._exit(1)\n",
    SDPA,
    "plots.heatmap(attention.softmax(np.ones((2, 2))))\n",
)


def test_only_definitions_and_what_they_use_are_kept():
    modules = notebooks.modules_from_notebooks({"01_attention.ipynb": CHAPTER_1.encode()})
    assert list(modules) == ["attention"]
    source = modules["attention"]
    compile(source, "attention.py", "exec")
    assert "def softmax" in source and "def scaled_dot_product_attention" in source
    assert "import math" in source and "import numpy as np" in source
    assert "from . import masking" in source  # load("masking") -> the submission's own module
    for left_out in ("_exit", "print(", "check(", "plots", "%matplotlib", "notebook-was-run"):
        assert left_out not in source


def test_tagged_cells_bring_their_helpers_and_later_definitions_win():
    nb = notebook(
        "import numpy as np\n",
        "def causal_mask(n, m=None):\n    return None\n",
        (["exercise:causal_mask"], "def _grid(n, m):\n    return np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)\n\n"
                                  "def causal_mask(num_queries, num_keys=None):\n"
                                  "    return _grid(num_queries, num_keys or num_queries)\ncausal_mask(3)\n"),
    )
    source = notebooks.modules_from_notebooks({"02_masking.ipynb": nb.encode()})["masking"]
    namespace = {}
    exec(compile(source, "masking.py", "exec"), namespace)
    assert namespace["causal_mask"](2, 3).tolist() == [[True, True, False], [True, True, True]]
    assert "return None" not in source


def test_invalid_json_is_an_import_error_for_that_chapter_only():
    modules = notebooks.modules_from_notebooks({
        "01_attention.ipynb": CHAPTER_1.encode(), "02_masking.ipynb": b'{"cells": [',
    })
    assert "def softmax" in modules["attention"]
    with pytest.raises(ImportError, match="'02_masking.ipynb' could not be read .*not valid JSON"):
        exec(modules["masking"], {})
    assert set(modules) == {"attention", "masking"}


def test_submission_reader_takes_notebooks_from_directories_and_zips(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "01_attention.ipynb").write_text(CHAPTER_1)
    (tmp_path / "dir" / "masking.py").write_text("def masked_softmax(s, m):\n    return s\n")
    loaded = submission.load(tmp_path / "dir").sources
    assert set(loaded) == {"attention", "masking"} and "def softmax" in loaded["attention"]
    with zipfile.ZipFile(tmp_path / "sub.zip", "w") as z:
        z.writestr("work/01_attention.ipynb", CHAPTER_1)
    assert submission.load(tmp_path / "sub.zip").sources == {"attention": loaded["attention"]}
    (tmp_path / "one.ipynb").write_text(CHAPTER_1)
    assert submission.load(tmp_path / "one.ipynb").sources == {"attention": loaded["attention"]}


def test_notebook_submission_is_graded_like_modules(tmp_path):
    """The real pipeline: chapter 1 graded from its notebook, a broken chapter 2 reported."""
    from autograder.grading.runner import grade_submission

    (tmp_path / "01_attention.ipynb").write_text(CHAPTER_1)
    (tmp_path / "02_masking.ipynb").write_text('{"cells": [')
    report = grade_submission(tmp_path, exercises=["softmax", "scaled_dot_product_attention", "causal_mask"])
    by_id = {r.id: r for r in report.exercises}
    assert by_id["softmax"].status == "passed"
    assert by_id["scaled_dot_product_attention"].status == "passed"
    assert by_id["causal_mask"].status == "error"
    text = by_id["causal_mask"].feedback + " ".join(c.feedback for c in by_id["causal_mask"].cases)
    assert "02_masking.ipynb" in text and "not valid JSON" in text
    assert not os.path.exists(os.path.join(os.sep, "tmp", "notebook-was-run"))  # that cell never ran


# ------------------------------------------------------------- the book's notebooks, completed

ROOT = Path(__file__).resolve().parent.parent


def _solution_cell(exercise: str) -> str:
    """What a learner pastes before ``check(exercise)``: the reference's imports, helpers and
    definition, written as notebook code (package imports, not relative ones)."""
    import ast

    from autograder.spec import MODULE_OF

    text = (ROOT / "solutions" / f"{MODULE_OF[exercise]}.py").read_text()
    lines = text.splitlines()
    kept = []
    for node in ast.parse(text).body:
        segment = "\n".join(lines[node.lineno - 1: node.end_lineno])
        if isinstance(node, ast.ImportFrom) and node.level:
            segment = f"from mha_exercises.{node.module} import " + ", ".join(a.name for a in node.names)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            kept.append(segment)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (node.name == exercise or node.name not in MODULE_OF):
            kept.append(segment)
    return "\n\n".join(kept) + "\n"


def completed_book(directory: Path) -> Path:
    """The book's chapter notebooks as a learner hands them in: each exercise's definition
    pasted in a cell before its ``check`` cell, reusing the chapter's own names (``scores``,
    ``weights``, ``q``, ``mask`` are locals of the solutions and globals of the chapters)."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        cells = []
        for cell in nb["cells"]:
            source = "".join(cell.get("source", ""))
            found = re.search(r"""check\(["'](\w+)["']\)""", source) if cell["cell_type"] == "code" else None
            if found:
                cells.append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                              "source": _solution_cell(found.group(1))})
            cells.append(cell)
        nb["cells"] = cells
        (directory / path.name).write_text(json.dumps(nb))
    return directory


def test_book_notebooks_completed_reusing_chapter_names_extract_cleanly(tmp_path):
    book = completed_book(tmp_path / "book")
    loaded = submission.load(book)
    assert set(loaded.sources) == set(notebooks.MODULES)
    attention = loaded.sources["attention"]
    # The chapter's demonstrations are left out even though the functions use their names.
    for demo in ("scores = keys @ query", "plots.", "check(", "print("):
        assert demo not in attention
    for module, source in loaded.sources.items():
        compile(source, f"{module}.py", "exec")
    assert any("01_attention.ipynb" in line for line in loaded.taken)


def test_book_notebooks_completed_grade_full_marks(tmp_path):
    from autograder.grading.runner import grade_submission

    report = grade_submission(completed_book(tmp_path / "book"))
    failed = {r.id: (r.status, r.feedback) for r in report.exercises if r.status != "passed"}
    assert not failed and report.score == report.max_score == 100
