"""deploy/: the Kubernetes Jobs, the Slurm scripts and the container recipe say what the guide
(book/guides/term.md) says: their command lines are ones ``mha-grade term`` accepts, the shards
count as many as the scheduler starts, the merge comes after, and nothing runs as root or with
a privilege. (Neither cluster nor container runtime is here: bench/term_class.py runs the same
commands, shards as separate processes and their indexes from the same variables.)"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import yaml

from autograder.classroom import term

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def _manifests():
    return {d["metadata"]["labels"]["step"]: d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "job.yaml").read_text())}


def _jobs():
    return {step: d for step, d in _manifests().items() if d["kind"] == "Job"}


def _pods():
    """Every pod spec of the manifests: the Jobs' templates and the loader pod."""
    return [d["spec"]["template"]["spec"] if d["kind"] == "Job" else d["spec"] for d in _manifests().values()]


def test_the_kubernetes_shards_are_an_indexed_job_of_n_pods_then_a_merge():
    jobs = _jobs()
    shards, merge = jobs["shards"]["spec"], jobs["merge"]["spec"]
    args = shards["template"]["spec"]["containers"][0]["args"]
    assert args[0] == "term" and shards["completionMode"] == "Indexed"
    n = int(args[args.index("--shard") + 1])  # --shard N: the index from JOB_COMPLETION_INDEX
    assert shards["completions"] == shards["parallelism"] == n
    merged = merge["template"]["spec"]["containers"][0]["args"]
    assert "--merge" in merged and "--shard" not in merged
    for command in (args, merged):
        parsed = term.parser().parse_args(command[1:])  # one that mha-grade term accepts
        assert parsed.seed_file is not None and parsed.seed is None  # the seed never on a command line


def test_no_pod_runs_as_root_or_with_a_privilege():
    for pod in _pods():
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
        assert pod["automountServiceAccountToken"] is False
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False and context["capabilities"]["drop"] == ["ALL"]
            assert "privileged" not in context and "add" not in context["capabilities"]
        assert not any("hostPath" in v for v in pod["volumes"])  # no docker.sock, nothing of the node's


def _defaults(script: str) -> str:
    """A script's words as they run with no variable set: ``${X:-default}`` is its default."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", script).replace("${SLURM_ARRAY_TASK_ID}", "0")


def test_the_slurm_array_has_as_many_tasks_as_shards_and_the_merge_follows():
    grade = _defaults((DEPLOY / "slurm" / "grade.sbatch").read_text())
    first, last = map(int, re.search(r"^#SBATCH --array=(\d+)-(\d+)$", grade, re.M).groups())
    command = shlex.split(re.search(r'^exec "\$VENV/bin/mha-grade" (.*?)$(?!\n\s)', grade.replace("\\\n", " "),
                                    re.M | re.S).group(1))
    assert int(command[command.index("--shard") + 1]) == last - first + 1
    merge = _defaults((DEPLOY / "slurm" / "merge.sbatch").read_text()).replace("\\\n", " ")
    merged = shlex.split(re.search(r'^exec "\$VENV/bin/mha-grade" (.*)$', merge, re.M).group(1))
    assert "--merge" in merged and "--dependency=afterok:$shards" in merge
    for args in (command, merged):
        term.parser().parse_args(args[1:])


def test_the_container_runs_as_an_ordinary_user_without_docker_inside():
    recipe = (DEPLOY / "Containerfile").read_text()
    steps = [line for line in recipe.splitlines() if line and not line.startswith("#")]
    user = next(line for line in steps if line.startswith("USER "))
    assert steps.index(user) > max(i for i, line in enumerate(steps) if line.startswith("RUN"))  # the last word
    assert not user.split()[1].startswith(("0", "root"))
    assert "docker" not in "\n".join(steps).replace("docker.io/library", "").lower()  # no daemon, no socket
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in recipe  # never a CUDA torch


def test_the_shards_get_the_shipped_seccomp_profile_which_allows_what_the_grader_needs():
    import json

    shards = _jobs()["shards"]["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]
    assert shards == {"type": "Localhost", "localhostProfile": "profiles/mha-grade.json"}
    profile = json.loads((DEPLOY / "kubernetes" / "seccomp-mha-grade.json").read_text())
    denied = {n for rule in profile["syscalls"] if rule["action"] != "SCMP_ACT_ALLOW" for n in rule["names"]}
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    # what the grader calls to confine a learner process ...
    assert not denied & {"unshare", "mount", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
                         "seccomp", "prctl", "clone", "clone3"}
    # ... and what RuntimeDefault refuses a container, refused still
    assert {"kexec_load", "init_module", "bpf", "ptrace", "keyctl", "open_by_handle_at", "setns"} <= denied


def _fake_install(tmp_path):
    """A venv whose mha-grade records its arguments and what it finds: no grading here."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / "mha-grade").write_text(
        "#!/bin/bash\necho \"$@\" >> \"$RECORD\"\nout=$(echo \"$@\" | sed 's/.*--out \\([^ ]*\\).*/\\1/')\n"
        "[ -d \"$out\" ] && echo out-exists >> \"$RECORD\"\n")
    (venv / "bin" / "mha-grade").chmod(0o755)
    return venv


@pytest.mark.parametrize("task", ["0", "3"])
def test_a_slurm_task_makes_its_output_folder_and_the_one_seed_from_an_empty_folder(tmp_path, task):
    venv, work = _fake_install(tmp_path), tmp_path / "term"
    work.mkdir()
    env = {**os.environ, "MHA_VENV": str(venv), "SLURM_ARRAY_TASK_ID": task, "RECORD": str(tmp_path / "record")}
    for _ in range(2):  # the second task reads the first one's seed
        run = subprocess.run(["bash", str(DEPLOY / "slurm" / "grade.sbatch")], cwd=work, env=env,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    seed = work / ".seed"
    assert (seed.stat().st_mode & 0o777) == 0o600 and int(seed.read_text()) >= 0
    record = (tmp_path / "record").read_text().splitlines()
    assert record[1] == record[3] == "out-exists" and (work / "graded").is_dir()
    assert f"--progress-json graded/progress-{task}.jsonl" in record[0] and "--seed-file .seed" in record[0]
    assert sorted(p.name for p in work.iterdir()) == [".seed", "graded"]  # nothing else left behind


def test_submit_sh_gives_the_jobs_absolute_paths_and_chains_the_merge(tmp_path):
    venv, work, bin_ = _fake_install(tmp_path), tmp_path / "term", tmp_path / "bin"
    work.mkdir()
    bin_.mkdir()
    (bin_ / "sbatch").write_text('#!/bin/bash\necho "$@|$MHA_VENV|$TERM_FILE|$OUT|$SEED_FILE" >> "$RECORD"\n'
                                 'echo 42\n')
    (bin_ / "sbatch").chmod(0o755)
    env = {**os.environ, "MHA_VENV": str(venv), "RECORD": str(tmp_path / "record"),
           "PATH": f"{bin_}:{os.environ['PATH']}"}
    run = subprocess.run([str(DEPLOY / "slurm" / "submit.sh"), "--partition=debug"], cwd=work, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    shards, merge = (tmp_path / "record").read_text().splitlines()
    paths = f"|{venv}|{work / 'term.toml'}|{work / 'graded'}|{work / '.seed'}"
    assert shards == f"--parsable --export=ALL --partition=debug {DEPLOY / 'slurm' / 'grade.sbatch'}{paths}"
    assert merge == (f"--parsable --export=ALL --kill-on-invalid-dep=yes --dependency=afterok:42 --partition=debug "
                     f"{DEPLOY / 'slurm' / 'merge.sbatch'}{paths}")
    assert (work / "graded").is_dir() and ((work / ".seed").stat().st_mode & 0o777) == 0o600
