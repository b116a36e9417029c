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
- ``kubectl apply -f F -l k=v``, ``kubectl wait ... job/NAME|pod/NAME`` and ``kubectl cp`` to or from
  ``POD:``: F has that label, that Job, that Pod; ``kubectl create secret generic S
  --from-file=K=F``: a container mounts the Secret S and names the file K in it on its command line;
  ``sbatch F`` (its job id kept in a variable or not): F exists; ``podman build -f F -t T .`` and
  ``podman run ... T ARGS``: F exists, T is the tag a build shown names, and ARGS are a command
  of F's entry point or an ``--entrypoint`` of F's;
- the lines of the term guide's Slurm block: the block bench/slurm_term.py runs as written on a real
  cluster extracts them, its record passed with the bench's source as it is now, and neither the
  block nor deploy/slurm/ changed since the record's commit; each line holds too (``MHA=`` and
  ``cd`` name the paths the bench makes, the script exists and is executable, ``submit.sh`` reads
  ``MHA_VENV``, ``squeue`` answered in the record); a span naming a Slurm log
  (``mha-grade-<job>_<task>.log``) is an array script's ``#SBATCH --output``;
- ``install ... F /var/lib/kubelet/seccomp/P``: F is a seccomp profile and P a ``localhostProfile``
  the manifests name; ``(umask M; python3 -c '...' > F)`` is run: F is one whole number below
  2**63 (as the grader reads a seed file), readable by its owner only;
- any other command fails the test, until a rule for it is written: a list of commands would
  only hold for the commands someone thought of.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
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


def _slurm_bench():
    spec = importlib.util.spec_from_file_location("slurm_term", ROOT / "bench" / "slurm_term.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slurm_steps() -> list[str]:
    """The lines of the block bench/slurm_term.py runs, as the bench extracts it from the guide."""
    return [c for c, _ in commands(f"```bash\n{_slurm_bench().guide_block()}```")]


def _needs_history(commit: str) -> None:
    """The Slurm rule compares the guide and deploy/slurm/ with the bench's commit: a clone
    without that commit (shallow, or a tarball) cannot say, and skips saying why."""
    known = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True, timeout=30)
    if known.returncode:
        pytest.skip(f"commit {commit[:7]} of bench/results/slurm_term.json is not in this clone (shallow?)")


def _slurm_step(command: str, record: dict | None = None) -> str:
    """A line of the guide's Slurm block: the bench that runs the block as written passed on it
    (``record``: the bench's record, bench/results/slurm_term.json unless given)."""
    bench = _slurm_bench()
    record = record or json.loads((ROOT / "bench" / "results" / "slurm_term.json").read_text())
    if record["exit_status"] != 0 or "PASS:" not in record["output"]:
        return "bench/slurm_term.py's record did not pass"
    if record["source_sha256"] != hashlib.sha256((ROOT / "bench" / "slurm_term.py").read_bytes()).hexdigest():
        return "bench/slurm_term.py changed since its record: run it again"
    _needs_history(record["commit"])
    then = subprocess.run(["git", "show", f"{record['commit']}:book/guides/term.md"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    if then.returncode:
        return f"cannot read the guide at the record's commit {record['commit'][:7]}: {then.stderr.strip()}"
    if bench.guide_block() not in then.stdout:
        return f"the guide's Slurm block changed since the record's commit {record['commit'][:7]}: run the bench again"
    if subprocess.run(["git", "diff", "--quiet", record["commit"], "--", "deploy/slurm"], cwd=ROOT,
                      timeout=30).returncode:
        return f"deploy/slurm/ changed since the record's commit {record['commit'][:7]}: run the bench again"
    submit = ROOT / "deploy" / "slurm" / "submit.sh"
    if command.startswith("MHA="):
        return "" if command == f"MHA={bench.PROJECT_LINK}" else f"the bench puts the project at {bench.PROJECT_LINK}"
    if command.startswith("cd "):
        return "" if command == f"cd {bench.TERM_LINK}" else f"the bench puts the term at {bench.TERM_LINK}"
    if command == "export MHA_VENV=$MHA/.venv":
        return "" if "${MHA_VENV:-" in submit.read_text() else "submit.sh does not read MHA_VENV"
    if command == "$MHA/deploy/slurm/submit.sh":
        return "" if os.access(submit, os.X_OK) else "deploy/slurm/submit.sh is not executable"
    if command.startswith("squeue"):
        runs = record["output"].count("the guide's block")
        return "" if runs and record["output"].count("JOBID PARTITION") == runs else \
            "squeue did not answer in every run of the record"
    return f"no rule checks the Slurm step {command!r}: write one in tests/test_guides.py"


def _slurm_log(span: str) -> str:
    """``mha-grade-<job>_<task>.log``: an array script's log, in Slurm's own pattern."""
    pattern = span.replace("<job>", "%A").replace("<task>", "%a")
    for script in (ROOT / "deploy" / "slurm").glob("*.sbatch"):
        text = script.read_text()
        if f"#SBATCH --output={pattern}\n" in text and "#SBATCH --array" in text:
            return ""
    return f"no array script in deploy/slurm writes its log to {pattern}"


def _install(args: list[str]) -> str:
    """``install -D -m 0644 F /var/lib/kubelet/seccomp/P``: F is the profile the manifests name as P."""
    source, target = ROOT / args[-2], args[-1]
    kubelet = "/var/lib/kubelet/seccomp/"
    if not target.startswith(kubelet):
        return f"no rule for installing to {target}"
    try:
        profile = json.loads(source.read_text())
    except (OSError, ValueError) as err:
        return f"{args[-2]} is not a seccomp profile: {err}"
    if not {"defaultAction", "syscalls"} <= set(profile):
        return f"{args[-2]} is not a seccomp profile"
    named = {name for m in (ROOT / "deploy").rglob("*.yaml")
             for name in re.findall(r"localhostProfile: ([\w./-]+)", m.read_text())}
    return "" if target[len(kubelet):] in named else f"no manifest names the profile {target[len(kubelet):]}"


SEED = re.compile(r"\((umask \d+; )?python3 -c '[^']*' > (\w+)\)")


def _seed(command: str) -> str:
    """The seed recipe, run: one whole number below 2**63 in a file only its owner reads."""
    name = SEED.fullmatch(command)[2]
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(["bash", "-c", command], cwd=tmp, capture_output=True, text=True, timeout=60)
        if result.returncode:
            return f"{command} failed: {result.stderr[-300:]}"
        made = Path(tmp) / name
        mode = made.stat().st_mode & 0o777
        try:
            seed = int(made.read_text().strip())  # as mha-grade reads --seed-file
        except ValueError:
            return f"{name} is not a whole number: {made.read_text()[:40]!r}"
    if mode != 0o600:
        return f"{name} has mode {mode:o}, not 600: others could read the seed"
    return "" if 0 <= seed < 2 ** 63 else f"{name} holds {seed}, not in [0, 2**63)"


def check_command(command: str, whole: bool = True) -> str:
    """What the command's rule found: "" when it holds, else why not."""
    if whole and command in slurm_steps():
        return _slurm_step(command)
    if not whole and re.fullmatch(r"mha-grade-[\w<>-]+\.log", command):
        return _slurm_log(command)
    if SEED.fullmatch(command):
        return _seed(command)
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
    if program == "install":
        return _install(args)
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
        if a.startswith("pod/") or (args[:1] == ["cp"] and ":" in a):
            pod = a[4:] if a.startswith("pod/") else a.split(":", 1)[0]
            if not any(d.get("kind") == "Pod" and d["metadata"]["name"] == pod for d in documents):
                return f"no Pod named {pod}"
    if args[:3] == ["create", "secret", "generic"]:
        key = next((a.split("=", 2)[1] for a in args if a.startswith("--from-file=") and a.count("=") == 2), None)
        return "" if key and _reads_secret(documents, args[3], key) else \
            f"no container reads the key {key} of the Secret {args[3]} from its mount"
    missing = [str(m) for m in manifests if not m.exists()]
    return f"no manifest {missing}" if missing else ""


def _reads_secret(documents: list[dict], name: str, key: str) -> bool:
    """Some container mounts the Secret ``name`` and names the file ``key`` in it on its command line."""
    for d in documents:
        spec = d.get("spec", {})
        pod = spec.get("template", {}).get("spec", spec)
        volumes = {v["name"] for v in pod.get("volumes") or [] if (v.get("secret") or {}).get("secretName") == name}
        for c in pod.get("containers") or []:
            line = " ".join(map(str, [*(c.get("command") or []), *(c.get("args") or [])]))
            if any(m["name"] in volumes and f"{m['mountPath'].rstrip('/')}/{key}" in line
                   for m in c.get("volumeMounts") or []):
                return True
    return False


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
    assert check_command("kubectl wait --for=condition=ready pod/no-such-pod")
    assert check_command("kubectl cp ./term no-such-pod:/data/term")
    assert check_command("kubectl create secret generic no-such-secret --from-file=seed=seed")
    assert check_command("kubectl create secret generic mha-grade-seed --from-file=other=seed")
    assert check_command("sbatch deploy/slurm/no_such.sbatch")
    assert check_command("podman run --rm other-image batch /data --out /out")
    assert check_command("podman run --rm mha-grade batch /data --no-such-option")
    assert check_command("mha-grade batch --no-such-option", whole=False)
    assert check_command("mha-grade batch", whole=True)  # a whole command needs its folder and --out
    assert check_command("MHA=/opt/elsewhere")  # no line of the Slurm block, no rule
    assert check_command("cd /srv/courses/other")
    assert check_command("mha-grade-<job>.log", whole=False)  # no script writes such a log
    assert check_command("sudo install -D -m 0644 deploy/kubernetes/no_such.json /var/lib/kubelet/seccomp/profiles/mha-grade.json")
    assert check_command("sudo install -D -m 0644 deploy/kubernetes/seccomp-mha-grade.json /var/lib/kubelet/seccomp/other.json")
    assert check_command("sudo install -D -m 0644 deploy/kubernetes/job.yaml /var/lib/kubelet/seccomp/profiles/mha-grade.json")
    assert "mode 644" in check_command("(umask 022; python3 -c 'print(7)' > seed)")  # readable by all
    assert "not a whole number" in check_command("(umask 077; python3 -c 'print(7.5)' > seed)")
    assert check_command("(umask 077; python3 -c 'print(2 ** 63)' > seed)")
    assert not check_command("(umask 077; python3 -c 'print(7)' > seed)")
    assert not check_command("mha-grade batch --jobs 2", whole=False)
    assert not check_command("mha-grade -e softmax --seed 3")


def test_the_slurm_rule_fails_on_a_record_that_does_not_hold():
    """The Slurm block's rule rests on the bench's record: a failed run, another bench source, a
    commit whose guide had another block or a run where squeue did not answer each fail it."""
    steps = slurm_steps()
    assert len(steps) == 5 and "squeue --me" in steps, steps
    record = json.loads((ROOT / "bench" / "results" / "slurm_term.json").read_text())
    assert not _slurm_step("squeue --me", record)
    assert _slurm_step("squeue --me", dict(record, exit_status=1))
    assert _slurm_step("squeue --me", dict(record, output=record["output"].replace("PASS:", "")))
    assert _slurm_step("squeue --me", dict(record, source_sha256="0" * 64))
    _needs_history("81b219d")
    before = subprocess.run(["git", "rev-list", "-1", "81b219d^"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert "changed since" in _slurm_step("squeue --me", dict(record, commit=before))  # no block there yet
    assert _slurm_step("squeue --me", dict(record, output=record["output"].replace("JOBID PARTITION", "", 1)))


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
