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
import numpy as np
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
def test_the_book_s_ties_to_its_text_stay_out_of_the_teaching_cells(path):
    """What the book checks of its own text (a "the text says" assert) sits in a cell the book
    removes, under checking_the_text(); and the page never talks about the tool that builds it."""
    for cell in json.loads(path.read_text())["cells"]:
        source, tags = "".join(cell["source"]), cell.get("metadata", {}).get("tags", [])
        if "remove-cell" in tags:
            continue
        assert "myst-nb" not in source and "myst_nb" not in source, (path.name, cell.get("id"))
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse(source)):
            message = getattr(node, "msg", None) if isinstance(node, ast.Assert) else None
            words = " ".join(c.value for c in ast.walk(message) if isinstance(c, ast.Constant)
                             and isinstance(c.value, str)) if message is not None else ""
            assert "the text says" not in words, f"{path.name} cell {cell.get('id')}: {words!r} in a teaching cell"


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


# ------------------------------------------------- what a chapter runs of the earlier chapters


def _setup_calls(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    """The modules a chapter load()s (its own) and, by module, the exercises it names in its
    prerequisite() calls."""
    own, named = set(), {}
    for source in _code(path):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("load", "prerequisite"):
                args = [a.value for a in node.args if isinstance(a, ast.Constant)]
                if node.func.id == "load":
                    own.add(args[0])
                else:
                    named.setdefault(args[0], set()).update(args[1:])
    return own, named


def _reached(module: str, chapter: int, own: set[str]) -> dict[str, set[str]]:
    """The earlier chapters' exercises ``mha_exercises/<module>.py`` imports, transitively: the
    modules of chapters before ``chapter`` (prerequisite()'s rule), never the chapter's own."""
    from autograder.spec import INFO

    found: dict[str, set[str]] = {}
    source = (ROOT / "mha_exercises" / f"{module}.py").read_text()
    for origin, names in backend.imported_names(source, "mha_exercises").items():
        if origin in own or backend.CHAPTER[origin] >= chapter:
            continue
        exercises = {n for n in names if n in INFO}
        if exercises:
            found.setdefault(origin, set()).update(exercises)
            for deeper, more in _reached(origin, chapter, own).items():
                found.setdefault(deeper, set()).update(more)
    return found


def test_the_chapter_of_each_module_is_the_course_list_s():
    from autograder.spec import COURSE

    assert {e.module: e.chapter for e in COURSE} == backend.CHAPTER


@pytest.mark.parametrize("path", CHAPTERS[1:], ids=lambda p: p.name)
def test_the_box_names_every_earlier_exercise_the_chapter_runs(path):
    """What a chapter runs of earlier chapters, derived from its load()/prerequisite() calls and
    the imports of the modules they load: each is named in its "Before this chapter" box, and
    prerequisite() reaches each (named in a call, or imported by a module a call names, which
    prerequisite() follows), so a stub there is said at the top and a published reference used."""
    chapter = int(path.name[:2])
    own, named = _setup_calls(path)
    needed = {(m, n) for m, names in named.items() for n in names}
    reached = set(needed)
    for module in own | set(named):
        for origin, names in _reached(module, chapter, own).items():
            needed |= {(origin, n) for n in names}
            if module in named:  # prerequisite() follows the imports of the module it is given
                reached |= {(origin, n) for n in names}
    assert needed <= reached, f"{path.name}: no prerequisite() call reaches {sorted(needed - reached)}"
    boxes = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
             if c["cell_type"] == "markdown" and "Before this chapter" in "".join(c["source"])]
    assert len(boxes) == 1, f"{path.name}: {len(boxes)} 'Before this chapter' boxes"
    missing = sorted(n for _, n in needed if f"`{n}`" not in boxes[0])
    assert not missing, f"{path.name}: the box leaves out {missing}"


def test_a_published_earlier_chapter_reaches_the_learner_s_own_layer(tmp_path):
    """The newcomer's chapter 4 (issue 47): chapters 1-3 stubs, their references published, the
    learner's layer.py done (it imports .attention and .heads): the layer runs with the references
    and says so; in chapter 5's way (prerequisite("layer")) too."""
    import shutil
    import subprocess

    package = tmp_path / "mha_exercises"
    shutil.copytree(ROOT / "mha_exercises", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "layer.py").write_text((ROOT / "solutions" / "layer.py").read_text())  # done
    for stub in ("attention", "masking", "heads"):
        assert backend.stubs(str(package / f"{stub}.py")), f"{stub}.py of this checkout is no stub"
    script = r"""
import numpy as np
import solutions.layer
import mha_exercises
from mha_exercises import backend
from mha_exercises.backend import load, prerequisite
assert mha_exercises.__file__.startswith(%r), mha_exercises.__file__
attention = prerequisite("attention", "softmax", "scaled_dot_product_attention")
masking = prerequisite("masking", "padding_mask", "causal_mask", "masked_softmax")
heads = prerequisite("heads", "split_heads", "merge_heads")
layer = load("layer")
assert layer.__name__ == "mha_exercises.layer", layer.__name__
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 5, 8))
params = {n: rng.standard_normal((8, 8)) for n in ("W_q", "W_k", "W_v", "W_o")}
mask = masking.causal_mask(5)
out, weights = layer.multi_head_attention(x, x, x, params, 2, mask)
want, want_weights = solutions.layer.multi_head_attention(x, x, x, params, 2, mask)
assert np.array_equal(out, want) and np.array_equal(weights, want_weights)
backend._PUBLISHED.clear()
import importlib, mha_exercises.layer
importlib.reload(mha_exercises.layer)  # binds the stubs again
prerequisite("layer", "MultiHeadAttention")  # chapter 5's call: follows layer.py's imports
assert mha_exercises.layer.split_heads is __import__("solutions.heads").heads.split_heads
assert mha_exercises.layer.scaled_dot_product_attention.__module__ == "solutions.attention"
def mine(x, num_heads): return x  # a name the learner's module defines itself is left alone
mha_exercises.layer.merge_heads = mine
load("layer")
assert mha_exercises.layer.merge_heads is mine
print("RAN")
""" % str(package)
    env = {k: v for k, v in os.environ.items() if k != "MHA_BACKEND"}
    env.update(PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120,
                         cwd=tmp_path)
    assert run.returncode == 0 and "RAN" in run.stdout, run.stdout + run.stderr
    for module in ("attention", "masking", "heads"):
        assert f"runs the published reference solutions of {module}.py" in run.stdout, run.stdout


def test_the_intro_sends_a_learner_to_the_quick_start_before_the_developer_commands():
    """The book's first page: a learner's setup is the learner guide's quick start (the learner
    set, JupyterLab); `make book`/`make test` install the full set and are for instructors and
    contributors, said so where they appear."""
    intro = (BOOK / "intro.md").read_text()
    setup = intro.split("## Setting up", 1)[1].split("\n## ", 1)[0]
    assert "(quick-start)" in setup, "the intro's setup does not link the learner quick start"
    assert "(quick-start)=" in (BOOK / "guides" / "learner.md").read_text()
    first_make = setup.index("make book")
    assert setup.index("(quick-start)") < first_make
    assert re.search(r"instructors and contributors", setup[:first_make], re.I), setup[:first_make]


def test_chapter_4_runs_a_finished_layer_over_published_chapters_1_to_3(tmp_path, monkeypatch):
    """The newcomer's run, as a notebook (about 10 s): chapter 4 in a learner's kernel whose
    mha_exercises has stubs for chapters 1-3 and a finished layer.py; the references published.
    Every cell runs, and the first cell says which references it runs instead."""
    import shutil

    package = tmp_path / "mha_exercises"
    shutil.copytree(ROOT / "mha_exercises", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "layer.py").write_text((ROOT / "solutions" / "layer.py").read_text())
    for key, value in _learner_kernel_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MHA_BACKEND", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ["PYTHONPATH"]]))
    notebook = nbformat.read(BOOK / "04_layer.ipynb", as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(BOOK)}}).execute()  # raises at a failing cell
    said = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "running mha_exercises.layer (backend: learner)" in said, said[:2000]
    for module in ("attention", "masking", "heads"):
        assert f"runs the published reference solutions of {module}.py" in said, said[:2000]


# ------------------------------------------------------------------------------ one notation


def test_every_glossary_symbol_a_page_names_is_defined_and_heads_count_from_0():
    """Every {term}`X` of the chapters and the intro is a glossary entry (chapter 3's `L` and `d`
    among them), the intro's notation table has every symbol its conventions' shapes use, and
    the maths numbers heads as the code does, from 0 to H-1."""
    terms = set(re.findall(r"^(\S[^\n]*)\n  ", (BOOK / "glossary.md").read_text().split("```{glossary}")[1], re.M))
    pages = {p.name: "\n".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"]
                               if c["cell_type"] == "markdown") for p in CHAPTERS}
    pages["intro.md"] = (BOOK / "intro.md").read_text()
    used = {(name, t) for name, text in pages.items() for t in re.findall(r"\{term\}`([^`<]+)`", text)}
    assert {"L", "d"} <= {t for _, t in used}, "chapter 3's L and d are not linked to the glossary"
    assert not {(n, t) for n, t in used if t not in terms}, sorted((n, t) for n, t in used if t not in terms)
    intro = pages["intro.md"]
    table = intro.split("## Notation", 1)[1]
    shape = re.search(r"per-head arrays are `\(([^)]*)\)`", intro).group(1)
    for symbol in (s.strip() for s in shape.split(",")):
        assert f"| ${symbol}$ |" in table, f"the intro's shapes use {symbol}, its notation table lacks it"
    for name, text in pages.items():
        for one_based in (r"\\{1,\s*\\dots,\s*H\\}", r"\\operatorname\{head\}_1\b", r"\^\{\(1\)\}"):
            assert not re.search(one_based, text), f"{name}: heads counted from 1 ({one_based})"


def test_concatenated_heads_times_W_o_is_the_sum_of_each_head_times_its_rows():
    """Chapter 4: [head_0 | ... | head_{H-1}] W_o = sum_h head_h W_o^(h), W_o^(h) the rows of head h."""
    rng = np.random.default_rng(0)
    H, d_v, E_out = 3, 4, 5
    heads = [rng.standard_normal((2, 6, d_v)) for _ in range(H)]
    W_o = rng.standard_normal((H * d_v, E_out))
    whole = np.concatenate(heads, axis=-1) @ W_o
    assert np.allclose(whole, sum(heads[h] @ W_o[h * d_v:(h + 1) * d_v] for h in range(H)))
    assert not np.allclose(whole, sum(heads[h] @ W_o[(h + 1) % H * d_v:((h + 1) % H + 1) * d_v] for h in range(H)))


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
