"""The learner's code confined by the kernel: each attack runs, and is seen from outside to
have changed nothing (no file written, no byte received, no signal, no point scored).

Most attacks go through ``python -m autograder`` as an instructor runs it (no extra flag):
the command replaces itself by a fresh image and forks the zygote from it. As root they run
again with an unprivileged learner user (``MHA_GRADE_USER``), as on Gradescope. Each hostile
function is a file of ``tests/adversarial/`` appended to a copy of the solutions.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from processes import running

from autograder.isolation import confine, confinement

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).resolve().parent / "adversarial"
LEARNER_USER = "mha-confine-test"
EXERCISES = ["softmax", "causal_mask"]  # the hostile softmax and an honest exercise

pytestmark = pytest.mark.skipif(not confinement()[0], reason=f"not confined here: {confinement()[1]}")


def hostile(tmp_path: Path, name: str, module: str = "attention", **subst) -> Path:
    dest = tmp_path / "submission"
    shutil.copytree(ROOT / "solutions", dest, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    code = (HOSTILE / f"{name}.py").read_text()
    for key, value in subst.items():
        code = code.replace(key, str(value))
    with open(dest / f"{module}.py", "a") as f:
        f.write("\n\n" + code)
    return dest


def mha_grade(args: list, cwd: Path, env: dict | None = None, run_as: str | None = None, popen=False):
    """``python -m autograder ARGS`` as a program (the instructor's way)."""
    cmd = [sys.executable, "-m", "autograder", *map(str, args)]
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    env.pop("MHA_GRADE_USER", None)
    if run_as:
        env["MHA_GRADE_USER"] = run_as
    if popen:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def graded(report_path: Path) -> dict:
    report = json.loads(report_path.read_text())
    return {e["id"]: e for e in report["exercises"]}


def outcome(exercise: dict) -> str:
    said = exercise["cases"][0]["feedback"]
    assert "OUTCOME" in said, said  # the attack ran
    return said


def assert_honest_exercises_keep_their_points(results: dict, hostile_id: str = "softmax"):
    for eid, e in results.items():
        if eid != hostile_id:
            assert e["score"] == e["max_score"], (eid, e["feedback"])


@pytest.fixture(scope="module")
def learner_user():
    """An unprivileged user to run the learner's code as (root only, as on Gradescope)."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd")
    try:
        pwd.getpwnam(LEARNER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", LEARNER_USER],
                       check=True)
    return LEARNER_USER


@pytest.fixture(params=["grader's user", "learner user"])
def run_as(request):
    return request.getfixturevalue("learner_user") if request.param == "learner user" else None


def _readable_by_everyone(path: Path):
    """The learner user must be able to reach the submission and write the scratch root."""
    for p in [path, *path.parents]:
        if p == Path("/"):
            break
        if p.stat().st_mode & 0o755 != 0o755:  # run as an ordinary user, /tmp (1777) is not ours to chmod
            p.chmod(p.stat().st_mode | 0o755)


# ------------------------------------------------------------------ the API

def test_confinement_says_what_confines():
    confined, why = confinement()
    assert confined and "Landlock" in why
    status = confine.status()
    assert status["confined"] and status["why"] == "" and any("seccomp" in layer for layer in status["layers"])


def test_a_kernel_without_landlock_is_reported_loudly(monkeypatch, tmp_path):
    from autograder import report

    monkeypatch.setattr(confine, "landlock_abi", lambda: (0, "this kernel has no Landlock"))
    confined, why = confinement()
    assert not confined and "no Landlock" in why
    status = confine.status()
    assert "NOT confined" in report.confinement_warning(status) and "no Landlock" in report.confinement_warning(status)


@pytest.mark.parametrize("abi, other_user, confined, missing", [
    (7, False, True, ""),
    (5, False, False, "signals to the grader"),  # no signal scoping before ABI 6 ...
    (5, True, True, ""),  # ... but another user cannot signal the grader anyway
    (3, True, True, ""),  # no TCP rules: the seccomp filter refuses every socket instead
])
def test_older_kernels_lose_layers_one_by_one(monkeypatch, abi, other_user, confined, missing):
    monkeypatch.setattr(confine, "landlock_abi", lambda: (abi, ""))
    status = confine.status(run_as=other_user)
    assert status["confined"] is confined and missing in status["why"], status


# -------------------------------------------------------- files and network

def test_writes_and_connections_are_refused(tmp_path, run_as):
    home = Path(os.path.expanduser("~"))
    marker = f"mha-confine-{os.getpid()}-{time.monotonic_ns()}"
    earlier = Path(f"/tmp/{marker}-earlier-batch/reports")  # a report an earlier batch left in /tmp
    earlier.mkdir(parents=True)
    (earlier / "alice.json").write_text('{"score": 42}')
    targets = {"HOME_TARGET": home / marker, "TMP_TARGET": Path("/tmp") / marker,
               "REPO_TARGET": ROOT / marker, "REPORT_TARGET": earlier / "alice.json"}
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(tmp_path / "grader.sock"))
    unix.listen()
    os.chmod(tmp_path / "grader.sock", 0o777)
    try:
        sub = hostile(tmp_path, "write_everywhere", TCP_PORT=tcp.getsockname()[1], UDP_PORT=udp.getsockname()[1],
                      UNIX_PATH=tmp_path / "grader.sock", **targets)
        _readable_by_everyone(tmp_path)
        out = tmp_path / "report.json"
        mha_grade([sub, *sum((["-e", e] for e in EXERCISES), []), "--json", out], tmp_path, run_as=run_as)
        results = graded(out)
        said = outcome(results["softmax"])
        for label in ("home", "tmp", "repo", "report", "tcp", "udp", "unix"):
            assert f"{label}:refused" in said, said
        assert results["softmax"]["score"] == 0
        assert_honest_exercises_keep_their_points(results)
        for key, path in targets.items():
            if key == "REPORT_TARGET":
                assert path.read_text() == '{"score": 42}'
            else:
                assert not path.exists(), path
        tcp.settimeout(0.2)
        with pytest.raises(socket.timeout):
            tcp.accept()  # nothing connected
        udp.settimeout(0.2)
        with pytest.raises(socket.timeout):
            udp.recvfrom(64)  # nothing sent
        unix.settimeout(0.2)
        with pytest.raises(socket.timeout):
            unix.accept()
    finally:
        tcp.close()
        udp.close()
        unix.close()
        shutil.rmtree(earlier.parent, ignore_errors=True)
        for path in targets.values():
            if path.is_file() and "earlier" not in str(path):
                path.unlink()


def test_the_solutions_and_the_checks_cannot_be_read(tmp_path, run_as):
    sub = hostile(tmp_path, "steal_solutions")
    _readable_by_everyone(tmp_path)
    out = tmp_path / "report.json"
    mha_grade([sub, "-e", "softmax", "-e", "causal_mask", "-e", "masked_softmax", "--json", out], tmp_path,
              run_as=run_as)
    results = graded(out)
    assert results["softmax"]["score"] == 0
    assert "Permission denied" in results["softmax"]["cases"][0]["feedback"]
    assert_honest_exercises_keep_their_points(results)


# -------------------------------------------------------------- secrets

@pytest.mark.parametrize("how", ["--seed", "--seed-file"])
def test_the_seed_the_environment_and_the_output_paths_stay_with_the_grader(tmp_path, how):
    seed, env_secret, path_secret = "86753091", "hush-TOKEN-4242", "out-PATHSECRET-77"
    (tmp_path / "seed").write_text(seed + "\n")
    given = [how, seed if how == "--seed" else tmp_path / "seed"]
    notes = tmp_path / "instructor-notes.txt"  # where the grader is started: its cwd
    notes.write_text("answers")
    sub = hostile(tmp_path, "snoop_secrets", SECRET_SEED_VALUE=seed, SECRET_ENV_VALUE=env_secret,
                  SECRET_PATH_VALUE=path_secret, SECRET_FILE=notes)
    out = tmp_path / f"{path_secret}.json"
    grader = _mha_grade_pid([sub, "-e", "softmax", "-e", "causal_mask", *given, "--json", out], tmp_path,
                            env={"INSTRUCTOR_TOKEN": env_secret})
    assert json.loads(out.read_text())["seed"] == int(seed)
    results = graded(out)
    # found nothing: not in argv, environ, /proc (the grader's), cwd, /etc/shadow
    assert_snooped_nothing(results["softmax"]["cases"][0]["feedback"], grader)
    assert_honest_exercises_keep_their_points(results)


def _mha_grade_pid(args: list, cwd: Path, env: dict | None = None) -> int:
    """``mha_grade``, which must succeed, and the grader's pid (the fresh image keeps it)."""
    proc = mha_grade(args, cwd, env=env, popen=True)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    return proc.pid


def assert_snooped_nothing(said: str, holder: int):
    """``said`` is the snoop's report (``adversarial/snoop_secrets.py``): it ran to the end,
    looked at the /proc entries of pid ``holder`` (a process that holds the secrets) and of all
    the pids of its walk, and found nothing. What it looked at is what it says it walked, not
    what the CPU time it took allows: its walk is bounded and checks its own budget."""
    assert re.search(r"FOUND\s+END", said), said  # nothing between them (the words may be re-spaced)
    walk = re.search(r"END WALKED (\d+-\d+(?: \d+-\d+)*)( CUT)?", said)
    assert walk, said
    runs = [tuple(map(int, run.split("-"))) for run in walk.group(1).split()]
    assert any(lo <= holder <= hi for lo, hi in runs), f"the snoop never looked at pid {holder}: {said}"
    assert not walk.group(2), f"the snoop ran out of its CPU budget before the end of its walk: {said}"


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        except FileNotFoundError:  # a thread that ended while the tasks were listed
            pass
    return out


def _open_files(pid: int) -> set:
    """What process ``pid``'s descriptors name: files, and sockets and pipes by inode
    (an inherited descriptor names the same one as its parent's)."""
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:  # closed meanwhile
            pass
    return held - {"/dev/null"}


def _memory_holds(pid: int, needles: list[bytes]) -> set:
    """Which needles are anywhere in the readable memory of process ``pid`` (read from here)."""
    found = set()
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            parts = line.split()
            if "r" not in parts[1] or (len(parts) > 5 and parts[5].startswith("/")):
                continue  # mapped files hold no secret
            start, end = (int(v, 16) for v in parts[0].split("-"))
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            found |= {n for n in needles if n in data}
    return found


def _seccomp(pid: int) -> bool:
    """Whether process ``pid`` runs under a seccomp filter (a learner's code does; nothing else here)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.split() == ["Seccomp:", "2"] for line in f)
    except OSError:  # it ended meanwhile
        return False


def _learner_side(proc, at_least: int = 2) -> list[int]:
    """The zygote of the ``mha-grade`` process ``proc`` and its children, once there are some."""
    deadline, learners = time.monotonic() + 120, []
    while time.monotonic() < deadline and proc.poll() is None:
        zygotes = _children(proc.pid)
        learners = zygotes + [c for z in zygotes for c in _children(z)]
        if len(learners) >= at_least:
            return learners
        time.sleep(0.1)
    raise AssertionError(proc.stderr.read() if proc.poll() is not None else "no learner-side process")


def test_learner_processes_die_with_their_grader(tmp_path):
    proc = mha_grade([hostile(tmp_path, "sleep_forever"), "-e", "softmax", "--time-limit", "60"], tmp_path,
                     popen=True)
    try:
        learners = _learner_side(proc)
        proc.kill()  # SIGKILL: the grader has no chance to clean up
        proc.wait()
        deadline = time.monotonic() + 5
        while any(map(running, learners)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in learners if running(p)]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="reads another process's memory (root)")
def test_the_secret_seed_is_never_in_the_learner_sides_memory(tmp_path):
    # The zygote is forked from the grader's process: that process must not have held the
    # seed, the output path or the instructor's environment before the fork.
    seed, env_secret, path_secret = "97531864", "hush-TOKEN-9191", "out-PATHSECRET-55"
    sub = hostile(tmp_path, "sleep_forever")
    (tmp_path / "grades-NAMESECRET-12.csv").write_text("")  # a file in the instructor's current folder
    proc = mha_grade([sub, "-e", "softmax", "--seed", seed, "--json", tmp_path / f"{path_secret}.json",
                      "--time-limit", "30"], tmp_path, env={"INSTRUCTOR_TOKEN": env_secret}, popen=True)
    try:
        learners = _learner_side(proc)  # the zygote, and its child running the loop
        with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
            assert seed.encode() not in f.read()  # the grader's own command line is a fresh one
        needles = [seed.encode(), env_secret.encode(), path_secret.encode(), b"NAMESECRET"]
        for pid in learners:
            assert _memory_holds(pid, needles) == set(), pid
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="reads another process's memory (root)")
def test_a_batchs_learner_finds_no_secret_either(tmp_path):
    # The batch, its graders and the process ahead (which reads the class while torch is
    # imported) all hold the seed and the instructor's environment: none can be read from here.
    seed, env_secret = "97531864", "hush-TOKEN-5151"
    klass, out = tmp_path / "class", tmp_path / "out-PATHSECRET-88"
    notes = tmp_path / "instructor-notes.txt"
    notes.write_text("answers")
    klass.mkdir()
    shutil.move(hostile(tmp_path, "snoop_secrets", SECRET_SEED_VALUE=seed, SECRET_ENV_VALUE=env_secret,
                        SECRET_PATH_VALUE="PATHSECRET", SECRET_FILE=notes), klass / "mallory")
    batch = _mha_grade_pid(["batch", klass, "--out", out, "--seed", seed, "-e", "softmax", "-e", "causal_mask",
                            "--jobs", "1", "--similarity", "--quiet"], tmp_path, env={"INSTRUCTOR_TOKEN": env_secret})
    results = {e["id"]: e for e in json.loads((out / "reports" / "mallory.json").read_text())["exercises"]}
    # found nothing: argv, environ, /proc (the batch's and all between: memory too), cwd
    assert_snooped_nothing(results["softmax"]["cases"][0]["feedback"], batch)
    assert results["causal_mask"]["score"] == 4


def test_a_batchs_learner_side_holds_no_secret_either(tmp_path):
    # mha-grade batch forks its graders' zygotes in its fresh image, before it reads the
    # options: neither they nor the children running the learners' code hold the seed, the
    # class and output folders or the instructor's environment.
    seed, env_secret = "86420975", "hush-TOKEN-7373"
    klass, out = tmp_path / "class-CLASSSECRET-31", tmp_path / "out-PATHSECRET-77"
    klass.mkdir()
    shutil.move(hostile(tmp_path, "sleep_forever"), klass / "mallory")
    proc = mha_grade(["batch", klass, "--out", out, "--seed", seed, "--jobs", "1", "-e", "softmax",
                      "--time-limit", "60", "--quiet"], tmp_path, env={"INSTRUCTOR_TOKEN": env_secret}, popen=True)
    try:
        deadline, learners = time.monotonic() + 120, []
        while not learners and time.monotonic() < deadline and proc.poll() is None:
            # a zygote is the batch's child whose children run confined (a grader has none: its zygote
            # is a sibling; the process ahead's children read the class, unconfined, and hold the options)
            learners = [p for z in _children(proc.pid) for kids in [_children(z)] if any(map(_seccomp, kids))
                        for p in [z, *kids]]
            time.sleep(0.1)
        assert learners, proc.stderr.read() if proc.poll() is not None else "no learner-side process"
        needles = [seed.encode(), env_secret.encode(), b"CLASSSECRET", b"PATHSECRET"]
        for pid in learners:
            assert _memory_holds(pid, needles) == set(), pid
        # Nor any descriptor of the batch's: its end of the channel to the process ahead
        # (which holds the options), its output files, its pipes to the graders.
        batch_holds = _open_files(proc.pid)
        assert batch_holds and all(not (_open_files(pid) & batch_holds) for pid in learners)
    finally:
        proc.kill()
        proc.wait()


# --------------------------------------------------------- other processes

def test_the_grader_cannot_be_signalled_or_traced(tmp_path):
    from autograder.grading import runner
    from autograder.isolation import sandbox

    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *a: received.append(1))
    zygote = sandbox.Zygote()
    try:
        sub = hostile(tmp_path, "signal_grader", GRADER_PID=os.getpid())
        zygote._wait_ready()
        before = zygote.process.pid
        report = runner.grade_submission(sub, exercises=EXERCISES, time_limit=10, zygote=zygote)
        results = {e.id: e for e in report.exercises}
        said = results["softmax"].cases[0].feedback
        assert "grader:refused" in said and "zygote:refused" in said and "ptrace:refused" in said, said
        assert results["causal_mask"].score == results["causal_mask"].max_score
        assert received == [] and zygote.process.pid == before and zygote.process.poll() is None
        with open("/proc/self/status") as f:
            assert "TracerPid:\t0" in f.read()
    finally:
        zygote.close()
        signal.signal(signal.SIGUSR1, previous)


def test_a_forked_writer_does_not_outlive_its_function(tmp_path):
    watch = tmp_path / "watch.txt"
    sub = hostile(tmp_path, "forked_writer", WATCH_FILE=watch)
    out = tmp_path / "report.json"
    mha_grade([sub, "-e", "softmax", "-e", "causal_mask", "--json", out], tmp_path)
    results = graded(out)
    said = outcome(results["softmax"])
    assert_honest_exercises_keep_their_points(results)
    time.sleep(1.0)  # a survivor would write every 50 ms
    assert not watch.exists(), said


# -------------------------------------------------------------- submissions

def test_symlinks_and_dotdot_in_a_zip_reach_nothing(tmp_path):
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in (ROOT / "solutions").glob("*.py"):
            if f.name not in ("attention.py", "__init__.py"):
                z.write(f, f.name)
        link = zipfile.ZipInfo("attention.py")  # a symlink to the reference
        link.external_attr = 0o120777 << 16
        z.writestr(link, str(ROOT / "solutions" / "attention.py"))
        z.writestr("../../escaped.py", "ESCAPED = True\n")
        z.writestr("../masking.py", (ROOT / "solutions" / "masking.py").read_text())
    out = tmp_path / "report.json"
    mha_grade([archive, "-e", "softmax", "-e", "masked_softmax", "--json", out], tmp_path)
    results = graded(out)
    assert results["softmax"]["score"] == 0  # the link's text is not the reference's code
    assert not (tmp_path.parent / "escaped.py").exists() and not (tmp_path / "escaped.py").exists()
    assert not list(tmp_path.parent.parent.glob("escaped.py"))


def test_a_symlink_in_a_submission_folder_is_not_followed(tmp_path):
    # The grader reads the folder (not the learner's code): a link to the reference would be
    # graded as the learner's own work. The link is left out, and the report says so.
    sub = tmp_path / "submission"
    shutil.copytree(ROOT / "solutions", sub, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    (sub / "attention.py").unlink()
    (sub / "attention.py").symlink_to(ROOT / "solutions" / "attention.py")
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "-e", "softmax", "-e", "causal_mask",
                           "--json", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    scores = {e["id"]: e["score"] for e in report["exercises"]}
    assert scores["softmax"] == 0 and scores["causal_mask"] == 4  # the honest file keeps its points
    assert "attention.py (a symbolic link, not followed)" in json.dumps(report)


def test_learners_of_a_batch_cannot_touch_each_other(tmp_path):
    klass, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(ROOT / "solutions", klass / "alice", ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    mallory = hostile(tmp_path, "batch_thief", CLASS_DIR=klass, OUT_DIR=out)
    shutil.move(mallory, klass / "mallory")
    before = {p: p.read_bytes() for p in klass.rglob("*") if p.is_file()}
    mha_grade(["batch", klass, "--out", out, "--exercise", "softmax", "--exercise", "causal_mask", "--jobs", "1",
               "--quiet"], tmp_path)
    alice = json.loads((out / "reports" / "alice.json").read_text())
    mallory_report = json.loads((out / "reports" / "mallory.json").read_text())
    assert alice["score"] == alice["max_score"] == 9 and "PWNED" not in alice
    scores = {e["id"]: e["score"] for e in mallory_report["exercises"]}
    assert scores == {"softmax": 0, "causal_mask": 4}, mallory_report["exercises"][0]["feedback"]
    said = mallory_report["exercises"][0]["cases"][0]["feedback"]
    assert "report:refused" in said and "classmate:refused" in said, said
    assert {p: p.read_bytes() for p in klass.rglob("*") if p.is_file()} == before
    assert "PWNED" not in (out / "grades.csv").read_text()
