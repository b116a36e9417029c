"""The README and the book's guides (book/guides/): short where a newcomer starts, and every
command they show checked against the code.

A command is found in a fenced ``bash`` block (continuation lines joined, comments dropped) or in
an inline code span that starts with a program (``make``, ``mha-grade``, ``python``, ...). Each
one must match a rule below, and the rule checks it:

- ``make T``: the Makefile has the target (``make -n T`` succeeds);
- ``mha-grade ...``, ``mha-grade batch|merge|term ...``: the program's own parser accepts the command
  (a span in a sentence, such as ``mha-grade batch --jobs 2``, names options: each must be one
  of the parser's, as a whole command need not be given there); the commands that grade a folder of this repository (``solutions``, ``mha_exercises``) are run,
  and their total is the one the text gives;
- ``python bench/x.py``, ``python scripts/x.py``: the file exists and declares every option used;
- ``python -m module``: the module is importable; ``pip install -r F``: F exists;
  ``pip install torch==V``: V is the Makefile's pin;
- ``kubectl apply -f F -l k=v`` and ``kubectl wait ... job/NAME``: F has that label and that Job;
  ``sbatch F`` (its job id kept in a variable or not): F exists; ``podman build -f F -t T .`` and
  ``podman run ... T ARGS``: F exists, T is the tag a build shown names, and ARGS are a command
  of F's entry point or an ``--entrypoint`` of F's;
- any other command fails the test, until a rule for it is written: a list of commands would
  only hold for the commands someone thought of.
"""
from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autograder.classroom import batch, cli, term

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "book" / "guides").glob("*.md"))
PAGES = [ROOT / "README.md", *GUIDES]
PROGRAMS = ("make ", "mha-grade", ".venv/bin/", "python", "sudo ", "pip ")
# A program's name in a sentence, not a command.
NAMES = re.compile(r"python[\d.]*|python\.sh|pip install|mha-grade|make")
MHA_GRADE = str(Path(sys.executable).with_name("mha-grade"))


def commands(text: str) -> list[tuple[str, bool]]:
    """Every command a page shows, as one line each, and whether it is whole (a block's line)
    or a span in a sentence."""
    found = []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                found.append((line, True))
    for span in re.findall(r"`([^`\n]+)`", text):
        if span.startswith(PROGRAMS) and not NAMES.fullmatch(span.strip()):
            found.append((span.strip(), False))
    return found


def shown() -> list[tuple[str, str, bool]]:
    return [(page.relative_to(ROOT).as_posix(), c, whole) for page in PAGES
            for c, whole in commands(page.read_text())]


def _argv(command: str) -> list[str]:
    command = re.sub(r"^\w+=\$\((.*)\)$", r"\1", command)  # shards=$(sbatch ...): the command inside
    argv = shlex.split(command.replace("...", ""))
    if argv[:1] == ["sudo"]:
        argv = argv[1:]
    if argv and argv[0].startswith(".venv/bin/"):
        argv[0] = argv[0][len(".venv/bin/"):]
    return argv


def _declares(script: Path, options: list[str]) -> list[str]:
    source = script.read_text()
    return [o for o in options if f'"{o}"' not in source and f"'{o}'" not in source]


def check_command(command: str, whole: bool = True) -> str:
    """What the command's rule found: "" when it holds, else why not."""
    argv = _argv(command)
    program, args = argv[0], argv[1:]
    if program == "make":
        result = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
        return "" if result.returncode == 0 else f"make has no target {args}: {result.stderr.strip()}"
    if program == "mha-grade":
        parsers = {"batch": batch.parser, "merge": batch.parser, "term": term.parser}
        parser = parsers[args[0]]() if args[:1] and args[0] in parsers else cli.parser()
        args = args[1:] if args[:1] and args[0] in parsers else args
        if not whole:
            unknown = [a for a in args if a.startswith("-") and a not in parser._option_string_actions]
            return f"mha-grade has no option {unknown}" if unknown else ""
        try:
            parser.parse_args(args)
        except SystemExit:
            return f"mha-grade's parser refuses {args}"
        return ""
    if program in ("python", "python3") and args[:1] == ["-m"]:
        module = args[1]
        if module == "pytest":
            missing = [a for a in args[2:] if a.endswith(".py") and not (ROOT / a).exists()]
            return f"no such test file: {missing}" if missing else ""
        if module == "venv":
            return ""
        return "" if importlib.util.find_spec(module) else f"no module {module}"
    if program in ("python", "python3") and args[:1] == ["-c"]:
        result = subprocess.run([sys.executable, "-c", args[1]], capture_output=True, timeout=120)
        return "" if result.returncode == 0 else f"{command} failed: {result.stderr[-300:]!r}"
    if program in ("python", "python3") and args and args[0].endswith(".py"):
        script = ROOT / args[0]
        if not script.exists():
            return f"no such script {args[0]}"
        options = [a.split("=", 1)[0] for a in args[1:] if a.startswith("--")]
        missing = _declares(script, options)
        return f"{args[0]} declares no option {missing}" if missing else ""
    if program == "pip" and args[:1] == ["install"]:
        if "-r" in args:
            name = args[args.index("-r") + 1]
            return "" if (ROOT / name).exists() else f"no requirements file {name}"
        pins = [a for a in args if a.startswith("torch==")]
        if pins:
            makefile = (ROOT / "Makefile").read_text()
            return "" if f"pip install -q {pins[0]}" in makefile else f"{pins[0]} is not the Makefile's pin"
        if args[1:] == ["--no-deps", "-e", "."]:
            return ""
        if "--dry-run" in args:  # what tests/test_dependencies.py runs, described
            runs = (ROOT / "tests" / "test_dependencies.py").read_text()
            return "" if all(a in runs for a in args[1:]) else f"tests/test_dependencies.py does not run {command}"
        extras = re.fullmatch(r"\.(?:\[(\w+)\])?", args[1].strip("\"'")) if len(args) == 2 else None
        if extras:
            pyproject = (ROOT / "pyproject.toml").read_text()
            return "" if not extras[1] or re.search(rf"^{extras[1]} = \[", pyproject, re.M) else \
                f"pyproject.toml has no extra {extras[1]}"
        return f"no rule for {command}"
    if program == "jupyter" and args[:1] == ["lab"]:
        learner = (ROOT / "requirements-learner.txt").read_text().lower()
        return "" if "jupyterlab==" in learner else "jupyterlab is not in the learner set"
    if program.endswith(".sh") and (ROOT / program).exists():
        return ""
    if program == "kubectl":
        return _kubectl(args)
    if program == "sbatch":
        script = ROOT / args[-1]
        return "" if script.exists() and "#SBATCH" in script.read_text() else f"no sbatch script {args[-1]}"
    if program == "podman":
        return _podman(args)
    return f"no rule checks {command!r}: write one in tests/test_guides.py"


def _kubectl(args: list[str]) -> str:
    manifests = [ROOT / args[i + 1] for i, a in enumerate(args) if a == "-f"]
    text = "\n".join(m.read_text() for m in manifests if m.exists()) or \
        "\n".join(m.read_text() for m in (ROOT / "deploy").rglob("*.yaml"))
    documents = [d for d in yaml.safe_load_all(text) if d]
    for i, a in enumerate(args):
        if a == "-l":
            key, _, value = args[i + 1].partition("=")
            if not any((d.get("metadata", {}).get("labels") or {}).get(key) == value for d in documents):
                return f"no manifest with the label {args[i + 1]}"
        if a.startswith("job/"):
            if not any(d.get("kind") == "Job" and d["metadata"]["name"] == a[4:] for d in documents):
                return f"no Job named {a[4:]}"
    missing = [str(m) for m in manifests if not m.exists()]
    return f"no manifest {missing}" if missing else ""


def _podman(args: list[str]) -> str:
    recipe = ROOT / "deploy" / "Containerfile"
    if not recipe.exists():
        return "no deploy/Containerfile"
    built = {c.split(" -t ")[1].split()[0] for _, c, _ in shown() if c.startswith("podman build") and " -t " in c}
    if args[0] == "build":
        return "" if (ROOT / args[args.index("-f") + 1]).exists() else "no recipe"
    rest, entrypoint = args[1:], None
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-v", "--entrypoint"):
            value = rest.pop(0)
            entrypoint = value if option == "--entrypoint" else entrypoint
    image, command = rest[0], rest[1:]
    if image not in built:
        return f"the image {image} is built by no command shown"
    source = recipe.read_text()
    if entrypoint:
        return "" if entrypoint.startswith("/opt/venv/bin/") and "python3 -m venv /opt/venv" in source else \
            f"the image has no {entrypoint}"
    if 'ENTRYPOINT ["/opt/venv/bin/mha-grade"]' not in source:
        return "the image's entry point is not mha-grade"
    return check_command(shlex.join(["mha-grade", *command]))


@pytest.mark.parametrize(("page", "command", "whole"), shown(), ids=lambda v: str(v)[:60])
def test_every_command_shown_is_checked(page, command, whole):
    problem = check_command(command, whole)
    assert not problem, f"{page}: {problem}"


def test_the_pages_show_commands():
    """The extraction finds the commands (an empty list would check nothing)."""
    found = dict.fromkeys(c for _, c, _ in shown())
    assert "make book" in found and "make test" in found
    assert any(c.startswith(".venv/bin/mha-grade batch") for c in found)
    assert len(found) >= 30, len(found)


def test_an_unknown_or_wrong_command_fails_its_rule():
    assert check_command("make no-such-target")
    assert check_command("mha-grade batch subs/ --no-such-option")
    assert check_command("python bench/batch.py --no-such-option")
    assert check_command("python scripts/no_such_script.py")
    assert check_command("curl https://example.org")
    assert check_command("pip install torch==1.0")
    assert check_command("mha-grade term term.toml --out x --no-such-option")
    assert check_command("kubectl apply -f deploy/kubernetes/job.yaml -l step=no-such-step")
    assert check_command("kubectl wait --for=condition=complete job/no-such-job")
    assert check_command("sbatch deploy/slurm/no_such.sbatch")
    assert check_command("podman run --rm other-image batch /data --out /out")
    assert check_command("podman run --rm mha-grade batch /data --no-such-option")
    assert check_command("mha-grade batch --no-such-option", whole=False)
    assert check_command("mha-grade batch", whole=True)  # a whole command needs its folder and --out
    assert not check_command("mha-grade batch --jobs 2", whole=False)
    assert not check_command("mha-grade -e softmax --seed 3")


def test_the_readme_fits_on_two_screens():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move the detail into book/guides/"


AUDIENCES = ("learner", "instructor", "contributor")


def test_the_readme_links_each_guide_and_the_toc_has_every_page():
    readme = (ROOT / "README.md").read_text()
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    in_toc = {c["file"] for part in toc["parts"] for c in part["chapters"]}
    in_toc |= {s["file"] for part in toc["parts"] for c in part["chapters"] for s in c.get("sections", [])}
    for audience in AUDIENCES:
        assert f"](book/guides/{audience}.md)" in readme, f"README.md does not link the {audience} guide"
    for guide in GUIDES:
        relative = guide.relative_to(ROOT).as_posix()
        assert relative.removesuffix(".md") in in_toc, f"_toc.yml does not list {relative}"
    assert set(AUDIENCES) <= {g.stem for g in GUIDES}


@pytest.mark.parametrize(("folder", "total"), [("solutions", "100/100"), ("mha_exercises", "0/100")])
def test_the_grading_commands_shown_give_the_totals_shown(folder, total):
    """`mha-grade solutions` and `mha-grade mha_exercises`, as the README and the learner guide
    show them, run here: the references get every point, the stubs none."""
    result = subprocess.run([MHA_GRADE, folder, "--quiet"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-500:]
    assert total in result.stdout, result.stdout[-500:]
