"""check()'s warm grader (autograder/service/): one per kernel, fresh grading every call,
restarted when it died or the grader changed, gone with its kernel; and the spawn path
that macOS and Windows use (autograder/isolation/practice.py), forced here with MHA_CHECK_MODE=spawn."""
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from processes import running

from autograder import service
from autograder.submission import load

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = load(ROOT / "solutions").sources
NO_MAX = "\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum(axis=axis, keepdims=True)\n"
LOOP = "\n\ndef softmax(x, axis=-1):\n    while True:\n        pass\n"


@pytest.fixture(autouse=True)
def fresh_service():
    service.stop()
    yield
    service.stop()


def test_one_service_grades_the_sources_of_each_call():
    first = service.grade("softmax", SOLUTIONS, "solutions")
    pid = service._SERVICE.process.pid
    assert first["exercises"][0]["status"] == "passed"
    edited = dict(SOLUTIONS, attention=SOLUTIONS["attention"] + NO_MAX)
    second = service.grade("softmax", edited, "solutions")
    assert service._SERVICE.process.pid == pid  # the same warm service...
    result = second["exercises"][0]
    assert result["status"] == "partial" and "without subtracting the max" in result["feedback"]
    assert service.grade("softmax", SOLUTIONS, "solutions")["exercises"][0]["status"] == "passed"
    with pytest.raises(service.ServiceError, match="no checks for exercise 'nope'"):
        service.grade("nope", SOLUTIONS, "solutions")
    assert service._SERVICE.process.pid == pid  # ...that survived a bad request


def test_the_service_restarts_when_it_died_or_the_grader_changed(monkeypatch):
    service.grade("causal_mask", SOLUTIONS, "solutions")
    old = service._SERVICE.process
    old.kill()
    old.wait()
    assert service.grade("causal_mask", SOLUTIONS, "solutions")["exercises"][0]["status"] == "passed"
    restarted = service._SERVICE.process
    assert restarted.pid != old.pid

    real = service.fingerprint
    monkeypatch.setattr(service, "fingerprint", lambda kind: real(kind) + "-edited")
    service.grade("causal_mask", SOLUTIONS, "solutions")
    assert service._SERVICE.process.pid != restarted.pid
    assert restarted.poll() is not None  # the old one was stopped, not left behind


def test_the_service_and_its_zygote_die_with_the_kernel(tmp_path):
    kernel = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import os, sys, time
            from autograder import service
            from autograder.submission import load
            service.grade("padding_mask", load("solutions").sources, "solutions")
            print(service._SERVICE.process.pid, flush=True)
            time.sleep(600)
        """)], cwd=ROOT, stdout=subprocess.PIPE, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    pid = int(kernel.stdout.readline())
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        zygotes = [int(p) for p in f.read().split()]
    assert running(pid) and zygotes and all(map(running, zygotes))
    kernel.kill()
    kernel.wait()
    deadline = time.monotonic() + 20
    while (running(pid) or any(map(running, zygotes))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(pid) and not any(map(running, zygotes))


def test_the_channel_is_private():
    service.grade("split_heads", SOLUTIONS, "solutions")
    pid = service._SERVICE.process.pid
    sockets = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            sockets.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:  # a cache file the idle service opened and has closed since
            pass
    inodes = {s[len("socket:["):-1] for s in sockets if s.startswith("socket:[")}
    listening = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        with open(f"/proc/net/{table}") as f:
            listening += [line.split()[9] for line in f.readlines()[1:]]
    with open("/proc/net/unix") as f:  # a named unix socket has a path in the last column
        named = [line.split()[6] for line in f.readlines()[1:] if len(line.split()) > 7]
    assert inodes and not inodes & set(listening) and not inodes & set(named)


# ------------------------------------------------------------- the spawn path (macOS, Windows)

def test_check_in_spawn_mode_is_labelled_and_graded(monkeypatch, capsys):
    from mha_exercises.check import check
    from solutions.attention import softmax

    monkeypatch.setenv("MHA_CHECK_MODE", "spawn")
    check(softmax)
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("✔ softmax: 5/5 points, passed") and "practice check, not confined" in out


def test_spawn_mode_stops_an_infinite_loop_at_the_time_limit(monkeypatch):
    monkeypatch.setenv("MHA_CHECK_MODE", "spawn")
    looping = dict(SOLUTIONS, attention=SOLUTIONS["attention"] + LOOP)
    started = time.monotonic()
    report = service.grade("softmax", looping, "solutions", time_limit=2)
    assert report["practice"] is True
    result = report["exercises"][0]
    assert result["status"] == "timed out" and time.monotonic() - started < 60
    assert service.grade("softmax", SOLUTIONS, "solutions")["exercises"][0]["status"] == "passed"


def _self_check(release: Path, submission: Path, *exercises: str) -> dict:
    """``python -m autograder.selfcheck`` run from the release, the secret modules unimportable."""
    from autograder import SECRET

    out = submission.parent / f"{submission.name}.json"
    argv = [str(submission), "--json", str(out), "--quiet", *(x for e in exercises for x in ("--exercise", e))]
    code = (f"import runpy, sys\nfor name in {SECRET!r}:\n    sys.modules[name] = None\n"
            f"sys.argv = ['autograder.selfcheck', *{argv!r}]\nrunpy.run_module('autograder.selfcheck', run_name='__main__')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MHA_BACKEND")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=release, env=dict(env, OMP_NUM_THREADS="1"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "practice check, not confined" in proc.stdout
    return json.loads(out.read_text())


def test_self_check_in_spawn_mode(monkeypatch, tmp_path_factory, tmp_path):
    """The release's self-check, its learner side spawned: a wrong softmax named, an unfilled
    causal_mask not attempted, a correct layer passed (every exercise: tests/test_release.py)."""
    from autograder.classroom import release as builder

    monkeypatch.setenv("MHA_CHECK_MODE", "spawn")
    release = tmp_path_factory.mktemp("dist") / "release"
    assert builder.main(["--out", str(release)]) == 0
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for f in (ROOT / "solutions").glob("*.py"):
        if f.name != "__init__.py":
            (mixed / f.name).write_text(f.read_text())
    (mixed / "attention.py").write_text((mixed / "attention.py").read_text() + NO_MAX)
    (mixed / "masking.py").write_text((mixed / "masking.py").read_text() + "\n\ndef causal_mask(*a, **k):\n"
                                      "    raise NotImplementedError\n")
    found = _self_check(release, mixed, "softmax", "causal_mask", "multi_head_attention")
    status = {e["id"]: e for e in found["exercises"]}
    assert status["softmax"]["status"] in ("failed", "partial") and status["softmax"]["score"] < 5
    assert any("without subtracting the max" in (c["diagnosis"] or "") for c in status["softmax"]["cases"])
    assert status["causal_mask"]["status"] == "not attempted"
    assert status["multi_head_attention"]["status"] == "passed"
    assert found["confinement"]["confined"] is False
