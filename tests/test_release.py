"""The learner release: what it holds follows the rule, no solution code anywhere in it (files,
notebook cells of every kind, outputs, built pages), and, unzipped outside the project and
installed in a fresh virtual environment exactly as its README says, its self-check and
``check()`` work without the solutions."""
import ast
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from autograder import SECRET, within
from autograder.classroom.release import learner_readme, unsolved
from autograder.classroom import release as builder

ROOT = Path(__file__).resolve().parent.parent

WRONG_SOFTMAX = ("\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)  # no max subtraction\n"
                 "    return e / e.sum(axis=axis, keepdims=True)\n")
WHOLE_MATRIX = ("\n\ndef chunked_attention(q, k, v, chunk_size, causal=False):  # the whole score matrix\n"
                "    return attention(q, k, v, causal_allowed(q.shape[-2], k.shape[-2]) if causal else None)\n")
SOLUTION_DIRECTIVE = re.compile(r"\{solution(?:-start|-end)?\}")
MIN_STATEMENT_NODES = 12  # a secret body shorter than this (``return x``) may occur by chance


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist") / "release"
    assert builder.main(["--out", str(out)]) == 0
    return out


# --------------------------------------------------------------------------- contents


def _names(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_the_secret_is_folders_only():
    """The release rule is whole folders: each audience has its own (``autograder/__init__.py``)."""
    assert SECRET and all((ROOT / name.replace(".", "/")).is_dir() for name in SECRET), SECRET


def test_release_contents_follow_the_rule(release):
    names = _names(release)
    with zipfile.ZipFile(release.with_suffix(".zip")) as archive:
        assert {n.removeprefix("release/") for n in archive.namelist() if not n.endswith("/")} == names
    for folder in ("solutions", "tests", "gradescope", "scripts", "bench", "autograder/grading",
                   "autograder/classroom", "dist", ".github"):
        assert not any(n.startswith(folder + "/") for n in names), folder
    modules = {n[:-3].replace("/", ".").removesuffix(".__init__") for n in names if n.endswith(".py")}
    assert not [m for m in modules if within(m, SECRET)]
    # Complete: every tracked file of the book and of the learner's packages, the grader's public side.
    tracked = subprocess.run(["git", "ls-files", "book", "lab", "mha_exercises", "autograder/isolation"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert len(tracked) > 30 and set(tracked) <= names, sorted(set(tracked) - names)
    assert {"README.md", "pyproject.toml", "requirements-learner.txt", "_toc.yml", "autograder/selfcheck.py",
            "autograder/isolation/drivers/harness.py", "autograder/public_cases/softmax.npz"} <= names
    pyproject = tomllib.loads((release / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"] == {"mha-check": "autograder.selfcheck:main"}
    assert sorted(pyproject["tool"]["setuptools"]["packages"]["find"]["include"]) == [
        "autograder*", "lab*", "mha_exercises*"]


# --------------------------------------------------------------------------- no solution code


def _statements(node) -> list[list[ast.stmt]]:
    """Every list of statements in a tree (module, function and class bodies, branches, loops)."""
    blocks = []
    for sub in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                blocks.append(block)
    return blocks


def _body(function) -> list[ast.stmt]:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body


def _parse(source: str):
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _secret_bodies() -> dict[tuple[str, ...], tuple[str, int]]:
    """Every function body of the solutions, the checks (known bugs), the judge and the book's
    shown solutions, as a tuple of normalised statements (``ast.dump``: comments, docstrings and
    layout do not count) -> where it is, and its size in AST nodes."""
    files = [*(ROOT / "solutions").glob("*.py"), *(ROOT / "autograder" / "grading").rglob("*.py")]
    sources = [(f.relative_to(ROOT).as_posix(), f.read_text()) for f in files]
    for f in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(f.read_text())["cells"]:
            for _, block in unsolved.solution_blocks("".join(cell["source"])):
                sources += [(f"{f.relative_to(ROOT)} {{solution}}", code) for code in _fenced(block)]
    secret = {}
    for where, source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body(node):
                size = sum(len(list(ast.walk(s))) for s in _body(node))
                secret[tuple(ast.dump(s) for s in _body(node))] = (f"{where}:{node.name}", size)
    return secret


_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1\s*$", re.M | re.S)
_PRE = re.compile(r"<pre[^>]*>(.*?)</pre>", re.S)


def _fenced(text: str) -> list[str]:
    """The contents of every fenced block of a markdown text, nested ones too (a ```` ```` ````
    directive holding a ```` ```python ```` block)."""
    found = []
    for match in _FENCED.finditer(text):
        found += [match.group(2), *_fenced(match.group(2))]
    return found


def _snippets(release: Path):
    """(where, source) of every piece of text in the release that could hold code."""
    for f in sorted(p for p in release.rglob("*") if p.is_file()):
        where = f.relative_to(release).as_posix()
        if f.suffix == ".ipynb":
            for i, cell in enumerate(json.loads(f.read_text())["cells"]):
                source = "".join(cell["source"])
                yield f"{where}[{i}]", source
                yield from ((f"{where}[{i}] fenced", block) for block in _fenced(source))
                for output in cell.get("outputs", []):
                    texts = [output.get("text", ""), *output.get("data", {}).values()]
                    yield from ((f"{where}[{i}] output", "".join(t) if isinstance(t, list) else str(t))
                                for t in texts)
        elif f.suffix in (".py", ".md", ".txt", ".yml", ".toml", ".js", ".html", ".bib"):
            text = f.read_text(errors="replace")
            yield where, text
            yield from ((f"{where} fenced", block) for block in _fenced(text))
            yield from ((f"{where} <pre>", html.unescape(re.sub(r"<[^>]+>", "", m.group(1))))
                        for m in _PRE.finditer(text))


def solution_leaks(release: Path) -> list[str]:
    """Where a secret function body appears in the release: as a whole function, or as a run of
    consecutive statements anywhere (a body pasted at the top level of a cell; bodies too
    small to tell apart from ordinary code, such as ``return x``, only as whole functions)."""
    secret = _secret_bodies()
    assert len(secret) > 30
    lengths = {len(body) for body, (_, size) in secret.items() if size >= MIN_STATEMENT_NODES}
    leaks = []
    for where, source in _snippets(release):
        tree = _parse(source)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = tuple(ast.dump(s) for s in _body(node))
                if body in secret:
                    leaks.append(f"{where}:{node.name} == {secret[body][0]}")
        for block in _statements(tree):
            dumped = [ast.dump(s) for s in block]
            for n in lengths:
                for i in range(len(dumped) - n + 1):
                    name, size = secret.get(tuple(dumped[i:i + n]), (None, 0))
                    if size >= MIN_STATEMENT_NODES:
                        leaks.append(f"{where}: statements {i}-{i + n - 1} == {name}")
    return sorted(set(leaks))


def test_release_holds_no_solution_judge_or_bug_code(release):
    leaks = solution_leaks(release)
    assert leaks == []


def test_release_holds_no_solution_directive_and_no_output(release):
    texts = [p for p in release.rglob("*") if p.is_file() and p.suffix in (".ipynb", ".md", ".txt", ".html")]
    assert [p.name for p in texts if SOLUTION_DIRECTIVE.search(p.read_text(errors="replace"))] == []
    for f in release.rglob("*.ipynb"):
        assert all(not c.get("outputs") for c in json.loads(f.read_text())["cells"]), f
    # Every exercise of the book had its solution, and each became the note.
    book = "".join(p.read_text() for p in (ROOT / "book").glob("*.ipynb"))
    shipped = "".join(p.read_text() for p in (release / "book").glob("*.ipynb"))
    exercises = len(re.findall(r"\{exercise\}", book))
    assert exercises >= 17 and len(re.findall(r"`{3,}\{solution\}", book)) == exercises
    assert shipped.count(unsolved.SOLUTION_NOTE.strip()) == exercises


def test_the_scan_finds_a_pasted_solution(release, tmp_path):
    """The scan can fail: a reference function under another name in a markdown cell's code
    block, and a body pasted at the top level of a code cell, are both found."""
    copy = tmp_path / "release"
    shutil.copytree(release, copy)
    source = (ROOT / "solutions" / "masking.py").read_text()
    function = next(n for n in ast.parse(source).body
                    if isinstance(n, ast.FunctionDef) and n.name == "causal_mask")
    renamed = ast.unparse(function).replace("def causal_mask(", "def mine(", 1)
    pasted = "num_queries, num_keys = 3, 5\n" + "\n".join(ast.unparse(s) for s in _body(function))
    notebook = copy / "book" / "02_masking.ipynb"
    data = json.loads(notebook.read_text())
    data["cells"] += [
        {"cell_type": "markdown", "metadata": {}, "source": f"Look:\n\n```python\n{renamed}\n```\n"},
        {"cell_type": "code", "metadata": {}, "source": pasted, "outputs": [], "execution_count": None}]
    notebook.write_text(json.dumps(data))
    leaks = solution_leaks(copy)
    assert any("fenced:mine == " in leak and leak.endswith(":causal_mask") for leak in leaks), leaks
    assert any(leak.startswith("book/02_masking.ipynb[") and "statements 1-" in leak for leak in leaks), leaks


def test_strip_markdown_handles_every_form():
    strip = unsolved.strip_markdown
    text = ("A\n````{solution} ex-a\n:class: dropdown\n\n```python\ndef f(): return 1\n```\n````\nB\n"
            ":::{solution} ex-b\nsecret\n:::\nC\n"
            "```{admonition} Hint\n:class: dropdown\nuse `np.max`\n```\n"
            "````{hint}\n```python\nx = 1\n```\n````\n")
    out, removed, gated = strip(text)
    assert removed == 2 and not gated and "def f" not in out and "secret" not in out
    assert out.count(unsolved.SOLUTION_NOTE) == 2 and "use `np.max`" in out
    assert "x = 1" not in out and unsolved.HINT_NOTE in out
    notebook = {"cells": [
        {"cell_type": "markdown", "source": "intro\n```{solution-start} ex-c\n```\n"},
        {"cell_type": "code", "source": "secret()", "outputs": [], "execution_count": None},
        {"cell_type": "markdown", "source": "```{solution-end}\n```\nafter\n"},
        {"cell_type": "code", "source": "shown()", "outputs": [{"text": "out"}], "execution_count": 3}]}
    assert unsolved.strip_notebook(notebook) == 1
    sources = [c["source"] for c in notebook["cells"]]
    assert sources == ["intro\n" + unsolved.SOLUTION_NOTE, "after\n", "shown()"]
    assert notebook["cells"][-1]["outputs"] == []


# --------------------------------------------------------------------------- a fresh install


def _env() -> dict:
    """The environment of a learner's shell: nothing of this project's on the path."""
    drop = ("PYTHONPATH", "MHA_BACKEND", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    path = env.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(p for p in path if not p.startswith(str(ROOT)))  # no project venv
    # No bytecode compiled at install (Python compiles what it imports): a third of the time.
    return dict(env, OMP_NUM_THREADS="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_COMPILE="1")


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory):
    """release.zip unzipped outside the project and installed as its README says: its folder."""
    home = tmp_path_factory.mktemp("learner")
    assert not str(home).startswith(str(ROOT))
    with zipfile.ZipFile(release.with_suffix(".zip")) as archive:
        archive.extractall(home)
    folder = home / "release"
    commands = learner_readme.setup_commands((folder / "README.md").read_text())
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=folder, env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return folder


def _python(folder: Path, code: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(folder / ".venv" / "bin" / "python"), "-c", code], cwd=cwd or folder,
                          env=_env(), capture_output=True, text=True, timeout=600)


def test_installed_release_resolves_nothing_from_the_project(installed):
    code = ("import importlib.util, json, autograder, mha_exercises, lab\n"
            "print(json.dumps({'files': [autograder.__file__, mha_exercises.__file__, lab.__file__],\n"
            "  'secret': [n for n in %r if importlib.util.find_spec(n.split('.')[0]) and "
            "importlib.util.find_spec(n)]}))" % (SECRET,))
    proc = _python(installed, code, cwd=installed / "book")  # where a notebook's kernel starts
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert all(Path(f).is_relative_to(installed) for f in found["files"]), found
    assert found["secret"] == []


def test_the_instructors_command_line_is_absent_and_says_what_to_run(installed):
    """``python -m autograder`` ships (it is public) but its command line does not: it says so."""
    proc = subprocess.run([str(installed / ".venv" / "bin" / "python"), "-m", "autograder", "mha_exercises"],
                          cwd=installed, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "not part of this release" in proc.stderr and "mha-check" in proc.stderr


def _self_check(folder: Path, submission: Path, *exercises: str) -> dict:
    """The release's ``mha-check`` console script on ``submission``: its JSON report."""
    out = submission.parent / f"{submission.name}.json"
    argv = [str(submission), "--json", str(out), "--quiet"]
    argv += [x for e in exercises for x in ("--exercise", e)]
    proc = subprocess.run([str(folder / ".venv" / "bin" / "mha-check"), *argv], cwd=submission.parent,
                          env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1) and out.exists(), proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(out.read_text())


def test_self_check_gives_full_marks_to_the_solutions_and_names_a_mistake(installed, tmp_path):
    correct = tmp_path / "correct"
    shutil.copytree(ROOT / "solutions", correct, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    good = _self_check(installed, correct)  # every exercise: each stored case must round-trip
    stored = sorted(p.stem for p in (installed / "autograder" / "public_cases").glob("*.json"))
    assert sorted(e["id"] for e in good["exercises"]) == stored and len(stored) >= 11
    assert {e["status"] for e in good["exercises"]} == {"passed"}
    assert good["score"] == good["max_score"] > 0
    assert good["seed"] != 0  # public cases: not the seed of a grading run

    wrong = tmp_path / "wrong"
    shutil.copytree(installed / "mha_exercises", wrong, ignore=shutil.ignore_patterns("__pycache__"))
    (wrong / "attention.py").write_text((wrong / "attention.py").read_text() + WRONG_SOFTMAX)
    bad = _self_check(installed, wrong, "softmax", "causal_mask")
    status = {e["id"]: e for e in bad["exercises"]}
    assert status["softmax"]["status"] in ("failed", "partial") and status["softmax"]["score"] < 5
    assert any("without subtracting the max" in (c["diagnosis"] or "") for c in status["softmax"]["cases"])
    assert status["causal_mask"]["status"] == "not attempted"


def test_self_check_measures_the_memory_chunked_attention_holds(installed, tmp_path):
    """The release's drivers measure the call in the learner's process, its scoring words it."""
    learner = tmp_path / "learner"
    shutil.copytree(ROOT / "solutions", learner, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    (learner / "efficient.py").write_text((learner / "efficient.py").read_text() + WHOLE_MATRIX)
    [result] = _self_check(installed, learner, "chunked_attention")["exercises"]
    failing = [c for c in result["cases"] if not c["passed"]]
    assert result["status"] == "partial" and len(failing) == 1, result
    assert re.search(r"at least half the \d+\.\d MiB of the whole \(\.\.\., Lq, Lk\)", failing[0]["feedback"]), failing[0]


def test_self_check_names_a_file_that_does_not_import(installed, tmp_path):
    """masking.py raising at import: its exercises are not graded, and an exercise whose module
    imports it (attention.py) is told which file, the type and the line."""
    broken = tmp_path / "broken"
    shutil.copytree(ROOT / "solutions", broken, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    masking = broken / "masking.py"
    masking.write_text(masking.read_text().replace("import numpy as np\n", "import numpy as np\nraise ValueError('boom')\n", 1))
    line = next(i for i, text in enumerate(masking.read_text().splitlines(), 1) if "raise ValueError" in text)
    status = {e["id"]: e for e in _self_check(installed, broken, "softmax", "causal_mask")["exercises"]}
    assert status["causal_mask"]["status"] == "error"
    assert status["causal_mask"]["cases"][0]["feedback"].startswith("not graded: your file masking.py does not import")
    assert status["softmax"]["not_imported"]["masking"].startswith(f"ValueError at line {line}: boom")
    assert any(n.startswith("your file masking.py does not import") for n in status["softmax"]["notes"])


def test_check_in_a_notebook_grades_the_learners_code(installed):
    """``check("softmax")`` as a chapter calls it (kernel started in book/), on the stub and then
    on the learner's finished ``softmax``."""
    call = "from mha_exercises.check import check; check('softmax')"
    stub = _python(installed, call, cwd=installed / "book")
    assert stub.returncode == 0 and "✘ softmax" in stub.stdout and "not attempted" in stub.stdout, stub
    attention = installed / "mha_exercises" / "attention.py"
    original = attention.read_text()
    right = WRONG_SOFTMAX.replace("np.exp(x)", "np.exp(x - x.max(axis=axis, keepdims=True))")
    attention.write_text(original + right)
    try:
        done = _python(installed, call, cwd=installed / "book")
    finally:
        attention.write_text(original)
    assert done.returncode == 0 and "✔ softmax" in done.stdout and "passed" in done.stdout, done


def _learner_install_bench():
    """bench/learner_install.py as a module: its notebook driver and what a learner should meet."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("learner_install_bench", ROOT / "bench" / "learner_install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_learner_venv_renders_myst_and_stops_each_chapter_at_an_exercise(installed):
    """In the release's own venv (made from its README): jupyterlab-myst is installed and enabled,
    and chapter 8 (lab.page's glue without myst-nb; three earlier chapters' exercises, no published
    references) runs with the stubs up to an exercise's own NotImplementedError saying where to
    implement it: chapter 4's, a prerequisite. Every chapter, twice, is bench/learner_install.py's."""
    bench = _learner_install_bench()
    listing = subprocess.run([str(installed / ".venv" / "bin" / "jupyter"), "labextension", "list"],
                             cwd=installed, env=_env(), capture_output=True, text=True, timeout=300)
    said = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    assert re.search(r"jupyterlab-myst v[\d.]+ enabled", said), said[-2000:]
    rows = bench.run_chapters(installed, "08_language_model.ipynb")
    assert [r["chapter"] for r in rows] == ["08_language_model.ipynb"]
    assert bench.stub_miss(rows[0]) is None, rows
    assert "mha_exercises/layer.py (chapter 4)" in rows[0]["error"]["evalue"], rows[0]  # a prerequisite first


# --------------------------------------------------------------------------- the book without solutions


def test_the_learner_book_config_hides_the_solutions_in_sphinx(tmp_path):
    """``make book-learner``'s configuration reaches Sphinx as ``hide_solutions``, and a page
    built with it (sphinx-exercise, as the book) shows the exercise and not its solution."""
    from jupyter_book.config import get_final_config
    from sphinx.cmd.build import build_main

    config = tmp_path / "_config.yml"
    assert builder.main(["--book-config", str(config)]) == 0
    sphinx_config, _ = get_final_config(user_yaml=config, cli_config={"latex_individualpages": False},
                                        sourcedir=ROOT)
    assert sphinx_config["hide_solutions"] is True
    assert "sphinx_exercise" in sphinx_config["extensions"]

    page = ("# Page\n\n```{exercise} Do it\n:label: ex-it\n\nEXERCISE-TEXT\n```\n\n"
            "````{solution} ex-it\n:class: dropdown\n\n```python\nSOLUTION_CODE = 1\n```\n````\n")
    shown = {}
    for hide in (True, False):
        src, out = tmp_path / f"src{hide}", tmp_path / f"out{hide}"
        src.mkdir()
        (src / "index.md").write_text(page)
        conf = f"extensions = ['myst_parser', 'sphinx_exercise']\nhide_solutions = {hide}\n"
        (src / "conf.py").write_text(conf)
        assert build_main(["-q", "-b", "html", str(src), str(out)]) == 0
        shown[hide] = (out / "index.html").read_text()
    assert "EXERCISE-TEXT" in shown[True] and "SOLUTION_CODE" not in shown[True]
    assert "SOLUTION_CODE" in shown[False]  # the same page with solutions shown: the check can fail


def test_a_built_book_ships_only_without_its_solutions(tmp_path):
    site = tmp_path / "html"
    (site / "_sources" / "book").mkdir(parents=True)
    (site / "index.html").write_text("<html><p>exercise</p></html>")
    (site / "_sources" / "book" / "01.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": "````{solution} ex-a\n```python\nSECRET = 1\n```\n````\n"}]}))
    assert builder.copy_html(site, tmp_path / "release" / "html") == 1
    assert "SECRET" not in (tmp_path / "release" / "html" / "_sources" / "book" / "01.ipynb").read_text()
    (site / "page.html").write_text('<div class="solution admonition dropdown">SECRET</div>')
    with pytest.raises(SystemExit, match="page.html shows a solution"):
        builder.copy_html(site, tmp_path / "again")
