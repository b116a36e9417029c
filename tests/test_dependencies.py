"""The two dependency sets: what a learner installs, and everything (book and tests).

- requirements-learner.txt is a subset of requirements.txt, pin for pin, and both hold exact pins only;
- pyproject.toml's `dependencies` are met by the learner pins, its extras by requirements.txt;
- both files resolve, with pip, on the oldest Python that `requires-python` allows (Debian 12's
  python3): a pin that needs a newer Python (soupsieve 4.1.2 needs 3.11.5) fails here, not on a
  learner's machine; and each resolves to exactly its own pins (nothing unpinned sneaks in);
- the README states the same Python floor.

torch is left out of the resolution: the Makefile installs torch==2.13.0 first and alone, from the
CPU wheel; the registry's torch==2.13.0 for Linux is the CUDA build, whose nvidia-* dependencies
are (rightly) pinned nowhere here, so resolving it would only test a build we never install.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
FULL = ROOT / "requirements.txt"
LEARNER = ROOT / "requirements-learner.txt"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LEFT_OUT_OF_RESOLUTION = {"torch"}


def pins(path: Path) -> dict[str, tuple[str, str]]:
    """canonical name -> (name as written, version), for every `name==version` line."""
    found = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)", line)
        assert match, f"{path.name}:{number}: {line!r} is not an exact pin (name==version)"
        name = canonicalize_name(match[1])
        assert name not in found, f"{path.name}:{number}: {match[1]} is pinned twice"
        found[name] = (match[1], match[2])
    return found


def python_floor() -> str:
    """The version of requires-python's `>=` clause, e.g. "3.11.2"."""
    clauses = [s for s in SpecifierSet(PYPROJECT["project"]["requires-python"]) if s.operator == ">="]
    assert len(clauses) == 1, "requires-python should state one floor, as >=X.Y.Z"
    floor = clauses[0].version
    assert floor.count(".") == 2, f"state the floor with its patch release (3.11.2, not {floor})"
    return floor


def test_learner_pins_are_a_subset_of_requirements_txt():
    full, learner = pins(FULL), pins(LEARNER)
    missing = sorted(learner[n][0] for n in learner if n not in full)
    assert not missing, f"requirements-learner.txt pins packages absent from requirements.txt: {missing}"
    differ = [f"{learner[n][0]}: {learner[n][1]} vs {full[n][1]}"
              for n in learner if learner[n][1] != full[n][1]]
    assert not differ, f"requirements-learner.txt and requirements.txt pin different versions: {differ}"
    assert len(learner) < len(full), "the learner set should leave out the book's and the tests' tools"


def _unmet(requirements: list[str], pinned: dict[str, tuple[str, str]]) -> list[str]:
    unmet = []
    for text in requirements:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name == canonicalize_name(PYPROJECT["project"]["name"]):
            continue  # an extra that includes another extra
        if name not in pinned:
            unmet.append(f"{text}: not pinned")
        elif not requirement.specifier.contains(pinned[name][1], prereleases=True):
            unmet.append(f"{text}: pinned {pinned[name][1]}")
    return unmet


def test_pyproject_dependencies_are_met_by_the_learner_pins():
    unmet = _unmet(PYPROJECT["project"]["dependencies"], pins(LEARNER))
    assert not unmet, f"pyproject.toml's dependencies not met by requirements-learner.txt: {unmet}"


def test_pyproject_extras_are_met_by_requirements_txt():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"book", "dev"} <= set(extras)
    unmet = {extra: _unmet(reqs, pins(FULL)) for extra, reqs in extras.items()}
    assert not any(unmet.values()), f"pyproject.toml's extras not met by requirements.txt: {unmet}"


def test_readme_states_the_same_python_floor():
    readme = (ROOT / "README.md").read_text()
    stated = set(re.findall(r"Python (\d+(?:\.\d+)*) or newer", readme))
    assert stated == {python_floor()}, (
        f"the README asks for Python {sorted(stated)} or newer; "
        f"pyproject.toml's requires-python says {python_floor()}")


def resolve(path: Path, floor: str, tmp: Path) -> subprocess.CompletedProcess:
    """pip's resolution of a requirements file (less torch) for Python `floor`, as a JSON report."""
    kept = [line for line in path.read_text().splitlines()
            if canonicalize_name(re.split(r"[=<>!~;\s\[]", line.strip())[0] or "-")
            not in LEFT_OUT_OF_RESOLUTION]
    requirements = tmp / path.name
    requirements.write_text("\n".join(kept) + "\n")
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--python-version", floor, "--only-binary=:all:", "--target", str(tmp / "target"),
         "--report", str(tmp / f"{path.stem}.json"), "-r", str(requirements)],
        capture_output=True, text=True, timeout=300)


def test_both_sets_resolve_on_the_oldest_python_supported(tmp_path):
    floor = python_floor()
    files = [FULL, LEARNER]
    for path in files:
        (tmp_path / path.stem).mkdir()
    with ThreadPoolExecutor(len(files)) as pool:  # two network-bound resolutions at once
        runs = list(pool.map(lambda path: resolve(path, floor, tmp_path / path.stem), files))
    for path, run in zip(files, runs):
        errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR")]
        assert run.returncode == 0, f"{path.name} does not resolve on Python {floor}:\n" + "\n".join(
            errors or run.stderr.splitlines()[-20:])
        report = json.loads((tmp_path / path.stem / f"{path.stem}.json").read_text())
        resolved = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
                    for item in report["install"]}
        wanted = {name: version for name, (_, version) in pins(path).items()
                  if name not in LEFT_OUT_OF_RESOLUTION}
        unpinned = sorted(f"{n}=={v}" for n, v in resolved.items() if n not in wanted)
        assert not unpinned, f"{path.name} pulls in packages it does not pin: {unpinned}"
        moved = sorted(f"{n}: pinned {wanted[n]}, resolved {resolved.get(n)}"
                       for n in wanted if resolved.get(n) != wanted[n])
        assert not moved, f"{path.name}: pip resolved other versions than the pins: {moved}"


@pytest.mark.parametrize("path", [FULL, LEARNER], ids=lambda p: p.name)
def test_torch_is_pinned_to_the_cpu_build_the_makefile_installs(path):
    assert pins(path)["torch"][1] == "2.13.0"
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install -q torch==2.13.0\n" in makefile, "the Makefile installs torch first and alone"
