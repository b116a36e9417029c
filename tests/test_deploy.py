"""deploy/: the Kubernetes Jobs, the Slurm scripts and the container recipe say what the guide
(book/guides/term.md) says: their command lines are ones ``mha-grade term`` accepts, the shards
count as many as the scheduler starts, the merge comes after, and nothing runs as root or with
a privilege. (Neither cluster nor container runtime is here: bench/term_class.py runs the same
commands, shards as separate processes and their indexes from the same variables.)"""
import re
import shlex
from pathlib import Path

import yaml

from autograder.classroom import term

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def _jobs():
    return {d["metadata"]["labels"]["step"]: d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "job.yaml").read_text())}


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
    for job in _jobs().values():
        pod = job["spec"]["template"]["spec"]
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
