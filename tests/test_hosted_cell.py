"""The hosted-notebook cell that opens every chapter (scripts/sync_hosted_cell.py), and the launch
buttons that come from the same setting (book/_ext/book_site.py).

The install is tested offline: the course is built into a wheel, and the cell, with that wheel's
path as its release URL, runs in a fresh venv that has the course's dependencies (the dev venv's,
through a .pth file) but not its package, in an environment that looks like a JupyterHub's.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import book_site  # noqa: E402
import sync_hosted_cell as sync  # noqa: E402

# No variable of a hosted service, no pip configuration that could reach the network.
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("COLAB_", "JUPYTERHUB_", "BINDER_", "PIP_", "MHA_"))}
HUB = {**CLEAN_ENV, "JUPYTERHUB_USER": "learner", "PIP_NO_INDEX": "1"}


def run_cell(python: Path | str, url: str | None, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-c", sync.cell_source(url or "")], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------- every chapter has the cell


def test_every_chapter_starts_with_the_current_cell():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_hosted_cell.py"), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"chapters without the current hosted cell:\n{result.stdout}"


def test_the_chapters_are_the_notebooks_of_the_toc():
    names = [p.name for p in sync.chapter_notebooks()]
    assert names[0] == "01_attention.ipynb" and len(names) >= 7, names


def test_sync_prepends_once_and_replaces_in_place(tmp_path):
    notebook = {"cells": [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# Title"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    once = sync.synced(notebook, "https://example.org/course.whl")
    twice = sync.synced(once, "https://example.org/other.whl")
    assert [c.get("id") for c in twice["cells"]] == [sync.CELL_ID, "t"]
    assert "'https://example.org/other.whl'" in "".join(twice["cells"][0]["source"])
    assert twice["cells"][1] == notebook["cells"][0]


def test_release_url_is_read_from_config_yml(tmp_path):
    (tmp_path / "_config.yml").write_text(
        "sphinx:\n  config:\n    course_hosting:\n      release_url: ' https://x.org/c.whl '\n")
    assert sync.release_url(tmp_path) == "https://x.org/c.whl"
    (tmp_path / "_config.yml").write_text("title: no hosting\n")
    assert sync.release_url(tmp_path) == ""


# ---------------------------------------------------------------- what the cell does


def test_cell_is_a_fast_no_op_where_the_course_is_installed(tmp_path):
    # A release URL that does not exist, on a "hub": any install attempt would fail loudly.
    t0 = time.perf_counter()
    result = run_cell(sys.executable, str(tmp_path / "missing.whl"), HUB, tmp_path)
    elapsed = time.perf_counter() - t0
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and "Installing" not in result.stderr
    assert elapsed < 10, f"the no-op cell took {elapsed:.1f} s"


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """A venv with the course's dependencies (the running one's site-packages, through a .pth
    file: neither its .pth files nor the editable install of the course are seen) and no course."""
    venv = tmp_path_factory.mktemp("hosted") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "course-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def test_fresh_kernel_without_a_release_url_says_what_to_do(bare_venv, tmp_path):
    assert run_cell(bare_venv, "", CLEAN_ENV | {"PIP_NO_INDEX": "1"},
                    tmp_path).returncode != 0  # not installed, nowhere to install from
    result = run_cell(bare_venv, "https://example.org/course.whl", CLEAN_ENV | {"PIP_NO_INDEX": "1"}, tmp_path)
    assert result.returncode != 0
    assert "ModuleNotFoundError" in result.stderr and "make install" in result.stderr
    assert "%pip install https://example.org/course.whl" in result.stderr  # not hosted: it only says


def test_fresh_hosted_kernel_installs_the_release(bare_venv, tmp_path):
    # Built from a copy: setuptools writes build/ next to the sources it is given.
    source = tmp_path / "source"
    for name in ("pyproject.toml", "README.md"):
        (source / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for package in ("mha_exercises", "lab", "autograder", "solutions"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            str(source), "-w", str(wheels)], capture_output=True, text=True, timeout=120,
                           env=CLEAN_ENV | {"PIP_NO_INDEX": "1"}, cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("mha_course-*.whl")

    before = run_cell(bare_venv, "", CLEAN_ENV, tmp_path)
    assert before.returncode != 0, "the venv should not have the course before the cell runs"
    result = run_cell(bare_venv, str(wheel), HUB, tmp_path)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert f"Installing the course's package from {wheel}" in result.stdout

    # A new kernel of the same venv finds the installed package, and the cell is then a no-op.
    probe = subprocess.run([str(bare_venv), "-c", "import mha_exercises, lab; print(mha_exercises.__file__)"],
                           capture_output=True, text=True, env=CLEAN_ENV, cwd=tmp_path, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()).is_relative_to(bare_venv.parent.parent), probe.stdout
    again = run_cell(bare_venv, str(wheel), HUB, tmp_path)
    assert again.returncode == 0 and again.stdout == "", again.stdout + again.stderr


# ---------------------------------------------------------------- launch buttons


def test_no_release_url_means_no_launch_buttons():
    assert book_site.launch_options({}) == {}
    assert book_site.launch_options({"release_url": "", "repository_url": "https://github.com/o/r"}) == {}


def test_launch_buttons_come_from_a_github_release_url():
    options = book_site.launch_options({
        "release_url": "https://github.com/course-org/mha-course/releases/download/v1/mha_course-1-py3-none-any.whl",
        "binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com",
        "jupyterhub_url": ""})
    assert options["repository_url"] == "https://github.com/course-org/mha-course"
    assert options["repository_branch"] == "main"
    assert options["launch_buttons"] == {"binderhub_url": "https://mybinder.org",
                                         "colab_url": "https://colab.research.google.com",
                                         "notebook_interface": "jupyterlab"}
    assert "thebe" not in options["launch_buttons"]


def test_launch_buttons_need_a_repository():
    with pytest.raises(ValueError, match="repository_url"):
        book_site.launch_options({"release_url": "https://files.example.org/course.whl"})
    with pytest.raises(ValueError, match="unknown keys"):
        book_site.launch_options({"release_ulr": "https://github.com/o/r/releases/download/v1/c.whl"})


def _build_one_chapter(tmp_path: Path, hosting: dict) -> str:
    """A one-notebook Sphinx site with the course's theme and extension; the chapter's HTML."""
    source = tmp_path / "src"
    source.mkdir(parents=True)
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['myst_nb', 'book_site']\nhtml_theme = 'sphinx_book_theme'\n"
        "nb_execution_mode = 'off'\nhtml_theme_options = {'launch_buttons': {}}\n"
        f"course_hosting = {hosting!r}\n")
    (source / "index.md").write_text("# Course\n\n```{toctree}\nchapter\n```\n")
    notebook = {"cells": [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# A chapter"]}],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    (source / "chapter.ipynb").write_text(json.dumps(notebook))
    build = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(source),
                            str(tmp_path / "html")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    return (tmp_path / "html" / "chapter.html").read_text()


def test_launch_buttons_appear_in_a_built_page_only_with_a_release_url(tmp_path):
    release = "https://github.com/course-org/mha-course/releases/download/v1/mha_course-1-py3-none-any.whl"
    page = _build_one_chapter(tmp_path / "set", {
        "release_url": release, "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com", "jupyterhub_url": "https://hub.example.edu"})
    assert 'href="https://colab.research.google.com/github/course-org/mha-course/blob/main/chapter.ipynb"' in page
    assert 'href="https://mybinder.org/v2/gh/course-org/mha-course/main?urlpath=lab/tree/chapter.ipynb"' in page
    assert 'href="https://hub.example.edu/hub/user-redirect/git-pull?' in page
    unset = _build_one_chapter(tmp_path / "unset", {"release_url": "", "binderhub_url": "https://mybinder.org",
                                                    "colab_url": "https://colab.research.google.com"})
    assert "colab.research.google.com" not in unset and "mybinder.org" not in unset


def test_the_configured_hosting_settings_are_valid():
    import yaml
    hosting = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["course_hosting"]
    book_site.launch_options(hosting)  # raises on an unknown key or a release without a repository
