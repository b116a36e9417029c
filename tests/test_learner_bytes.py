"""One learner's bytes cost only that learner: files the grader itself reads (notebooks,
zips, source for ``--similarity``) and frames a learner's process sends back, each built to
cost the grader, seen from outside: a class graded beside them ends by itself, every honest
learner keeps full marks, the hostile learner has a row saying what was refused, and the
grader's memory stays bounded. The hostile submissions are in ``tests/hostile_files.py``;
``bench/learner_bytes.py`` measures the same attacks at full size.
"""
from __future__ import annotations

import csv
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hostile_files
from autograder import limited, submission
from autograder.isolation import confinement, protocol

ROOT = Path(__file__).resolve().parent.parent
MB = 2**20
# Above what an honest class of this size costs the grader tree's largest process (about
# 0.3 GB, torch included): what the hostile frame alone cost before (1.6 GB more) cannot fit.
PEAK_BOUND_MB = 800

confined = pytest.mark.skipif(not confinement()[0], reason=f"not confined here: {confinement()[1]}")


# A process's peak resident size, as the kernel keeps it, starts at its fork: a grader started
# straight from pytest would carry pytest's own peak (836 MB late in a full run, against 268 MB
# for the grader alone). So a fresh interpreter starts it, and says what wait4 reports of it and
# of every process of its tree.
LAUNCH = """
import json, os, subprocess, sys, time
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
deadline = time.monotonic() + float(sys.argv[1])
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        code = os.waitstatus_to_exitcode(status)
        break
    if time.monotonic() > deadline:
        proc.kill()
        pid, status, usage = os.wait4(proc.pid, 0)
        code = None
        break
    time.sleep(0.05)
print(json.dumps({"status": code, "peak_kb": usage.ru_maxrss}))
"""


def mha_grade(args: list, cwd: Path) -> tuple[int, str, float]:
    """``python -m autograder ARGS`` as an instructor runs it: (exit status, stderr, peak RSS in
    MB of the largest process of the grader's tree, from the kernel's count when it is reaped)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("MHA_GRADE_USER", None)
    with open(cwd / "stderr.txt", "w+") as err:
        launched = subprocess.run([sys.executable, "-c", LAUNCH, "300", sys.executable, "-m", "autograder",
                                   *map(str, args)], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err,
                                  text=True, check=True)
        ended = json.loads(launched.stdout)
        if ended["status"] is None:
            pytest.fail("the batch did not end by itself within 300 s")
        err.seek(0)
        return ended["status"], err.read(), ended["peak_kb"] / 1024


# ------------------------------------------------------------------------------ reading

def test_reading_is_refused_alone_when_it_fails_or_overruns():
    def recurse(n):
        return recurse(n + 1)

    with pytest.raises(limited.Refused, match="nested too deeply"):
        limited.call(recurse, 0, what="reading it")
    with pytest.raises(limited.Refused, match="more memory"):
        limited.call(bytearray, 2 * limited.READ_MB * MB, what="reading it")
    start = time.monotonic()
    with pytest.raises(limited.Refused, match="longer than 1 s|more than 1 s of CPU"):
        limited.call(time.sleep, 30, what="reading it", seconds=1)
    assert time.monotonic() - start < 10
    with pytest.raises(limited.Refused, match="exited with status 3"):
        limited.call(os._exit, 3, what="reading it")
    with pytest.raises(submission.SubmissionError, match="no exercise files"):  # the reader's own refusal
        limited.call(submission.read, ROOT / "tests", what="reading it", expected=submission.SubmissionError)
    assert limited.call(sorted, [3, 1, 2], what="sorting") == [1, 2, 3]


def test_a_notebook_cell_too_deep_or_too_slow_to_parse_costs_nothing(tmp_path):
    nb = hostile_files.deep_notebook(tmp_path / "01_attention.ipynb")
    got = submission.load(nb)  # the cell is left out: it defines no exercise
    assert "def softmax" in got.sources["attention"] and "a+a" not in got.sources["attention"]
    assert "code cell(s) 2 too deep or too large for the grader's parser, left out" in got.intake()
    nb = hostile_files.newlines_notebook(tmp_path / "01_attention.ipynb", lines=400_000)
    start = time.process_time()
    got = submission.read(nb)  # in this process: the pattern itself must be linear
    assert time.process_time() - start < 5  # 400k lines: was 150 s and more (quadratic)
    assert "def softmax" in got.sources["attention"]


def test_a_submissions_files_are_capped_together(tmp_path):
    z = hostile_files.notebooks_zip(tmp_path / "mallory.zip", count=5, megabytes=19)
    with pytest.raises(submission.SubmissionError, match=f"add up to more than {submission.MAX_TOTAL // MB} MB"):
        submission.load(z)


def test_a_submission_refused_whole_still_gets_its_gradescope_results(tmp_path):
    """As on Gradescope (``mha-grade SUB --gradescope``): a zip over the cap is refused with
    exit status 2, and results.json still gives every exercise its test at 0 and says why,
    without the grader's path to the submission."""
    from autograder.spec import POINTS

    z = hostile_files.notebooks_zip(tmp_path / "mallory.zip", count=5, megabytes=19)
    results = tmp_path / "results.json"
    status, stderr, _ = mha_grade([z, "--gradescope", results, "--seed", "3"], tmp_path)
    assert status == 2 and "add up to more than" in stderr, stderr
    got = json.loads(results.read_text())
    cap = submission.MAX_TOTAL // MB
    assert got["score"] == 0
    assert got["output"].startswith(f"Nothing could be graded: the submission's files add up to more than {cap}")
    tests = [(t["name"], t["score"], t["max_score"]) for t in got["tests"]]
    assert tests == [(e, 0.0, p) for e, p in POINTS.items()]
    assert str(tmp_path) not in results.read_text()


def _full_marks(path, exercises=None, seed=0):
    """Stands in for the grader: every exercise passed (what is measured here is the reading)."""
    from autograder.spec import POINTS

    ids = exercises or ["softmax"]
    exs = [{"id": e, "status": "passed", "score": float(POINTS[e]), "max_score": float(POINTS[e]), "cases": [],
            "feedback": "", "notes": []} for e in ids]
    return {"submission": str(path), "score": sum(e["score"] for e in exs), "seed": seed,
            "max_score": sum(e["max_score"] for e in exs), "exercises": exs}


def test_a_batch_s_timeout_bounds_reading_a_submission_too(tmp_path, monkeypatch):
    """``--timeout`` covers reading (README: "30 s ... or --timeout if less"): a notebook whose
    reading would take a minute is stopped after the batch's 2 s, that learner alone refused."""
    from autograder.classroom import batch

    read = submission._load_data

    def slow_for_mallory(path):  # runs in the forked reader
        if "mallory" in path:
            time.sleep(60)
        return read(path)

    monkeypatch.setattr(submission, "_load_data", slow_for_mallory)
    klass, out = tmp_path / "class", tmp_path / "out"
    klass.mkdir()
    hostile_files.deep_notebook(klass / "honest.ipynb", terms=10)  # notebooks are read in a limited fork
    hostile_files.deep_notebook(klass / "mallory.ipynb", terms=10)
    start = time.monotonic()
    batch.run_batch(klass, out, jobs=1, exercises=["softmax"], grade=_full_marks, timeout=2, progress=False)
    assert time.monotonic() - start < 30  # not the minute the reading wanted
    with open(out / "grades.csv") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    assert rows["honest"]["total"] == "5" and rows["mallory"]["total"] == "0"
    said = json.loads((out / "reports" / "mallory.json").read_text())["error"]
    assert "longer than 2 s" in said, said


# ----------------------------------------------------------------------------- protocol

def test_a_frame_header_is_capped_before_it_is_parsed():
    bomb = b"[" + b"{}," * 20_000_000 + b"{}]"  # 60 MB: parsed, 20M dicts (1.57 GB)
    start = time.process_time()
    with pytest.raises(protocol.Garbage, match=f"header of {len(bomb)} bytes"):
        protocol.decode(struct.pack("<I", len(bomb)) + bomb)
    many = b"[" + b"0," * (protocol.MAX_NODES + 1) + b"0]"  # under the byte cap, over the node cap
    with pytest.raises(protocol.Garbage, match=f"more than {protocol.MAX_NODES} values"):
        protocol.decode(struct.pack("<I", len(many)) + many)
    assert time.process_time() - start < 1  # refused on sight, nothing parsed
    honest = {"case": 3, "ok": [1.5, "a, [b]", {"d": 1}]}
    assert protocol.decode(protocol.encode(honest)[8:]) == honest


# ------------------------------------------------------------------------ a whole class

@confined
def test_a_class_with_every_hostile_file_is_graded_and_honest_learners_keep_full_marks(tmp_path):
    klass, out = tmp_path / "class", tmp_path / "out"
    klass.mkdir()
    for i in range(2):
        hostile_files.honest(klass / f"honest{i}")
    hostile_files.deep_notebook(klass / "deep_notebook.ipynb")
    hostile_files.deep_module(klass / "deep_module")
    hostile_files.newlines_notebook(klass / "newlines.ipynb")
    hostile_files.notebooks_zip(klass / "notebooks.zip", count=5, megabytes=19)
    hostile_files.frame_bomb(klass / "frame_bomb")
    status, stderr, peak = mha_grade(["batch", klass, "--out", out, "-e", "softmax", "--jobs", "2",
                                      "--similarity", "--timeout", "30", "--quiet"], tmp_path)
    assert status == 0, stderr
    with open(out / "grades.csv") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"honest0", "honest1", "deep_notebook", "deep_module", "newlines", "notebooks", "frame_bomb"}
    for i in range(2):
        assert rows[f"honest{i}"]["total"] == "5", rows[f"honest{i}"]
    reports = {learner: json.loads((out / "reports" / f"{learner}.json").read_text()) for learner in rows}

    def said(learner):
        r = reports[learner]
        return r.get("error") or " ".join(c.get("feedback", "") for e in r["exercises"] for c in e["cases"])

    # The long expression and the blank lines are left out of the notebooks: the softmax above them counts.
    assert rows["deep_notebook"]["total"] == "5" and rows["newlines"]["total"] == "5"
    assert "too deep or too large for the grader's parser" in " ".join(reports["deep_notebook"]["intake"]["taken"])
    assert "add up to more than" in said("notebooks") and rows["notebooks"]["total"] == "0"
    # Too deep to compile in the learner's process too: that is the learner's error, not the grader's.
    assert rows["deep_module"]["total"] == "0" and "parser cannot read (nested too deeply" in said("deep_module")
    assert not any("grader failed" in said(learner) for learner in rows)
    assert rows["frame_bomb"]["total"] == "0" and "header of" in said("frame_bomb"), said("frame_bomb")
    assert peak < PEAK_BOUND_MB, peak


def test_code_that_cannot_be_fingerprinted_leaves_out_only_its_learner(tmp_path, monkeypatch):
    from autograder.classroom import similarity

    tokens = similarity.normalised_tokens

    def fragile(source, name):  # runs in the forked fingerprinting process: a parser that dies or hangs
        if "CRASH" in source:
            os._exit(9)
        if "HANG" in source:
            time.sleep(60)
        return tokens(source, name)

    monkeypatch.setattr(similarity, "normalised_tokens", fragile)
    good = hostile_files.SOFTMAX.replace("return e", "total = np.sum(e, axis=axis, keepdims=True)\n"
                                                    "    assert total.all()\n    return e")
    subs = {"ada": good, "bob": good + "\n# mine\n", "mal": good + "# CRASH\n", "slow": good + "# HANG\n"}
    finder = similarity.Similarity(tmp_path / "cache", warn=lambda m: None, seconds=2)
    found = finder.code_all({learner: {"attention": code} for learner, code in subs.items()})
    assert isinstance(found["mal"], similarity.Unfingerprinted) and "status 9" in str(found["mal"])
    assert isinstance(found["slow"], similarity.Unfingerprinted) and "longer than 2 s" in str(found["slow"])
    assert set(found["ada"]) == set(found["bob"]) == {"softmax"}
    result = finder.run({k: v for k, v in found.items() if k in ("ada", "bob")},
                        {k: str(v) for k, v in found.items() if k in ("mal", "slow")})
    assert [c.learners for c in result.clusters] == [["ada", "bob"]]
    md = similarity.clusters_markdown(result)
    assert "- mal: fingerprinting the code failed" in md and "- slow: fingerprinting the code took longer" in md


def test_an_exercise_s_frames_are_capped_together_before_they_are_read():
    import socket
    import threading

    import numpy as np

    from autograder.isolation import exchange

    grader, learner = socket.socketpair()
    big = np.zeros(5 * MB)  # 40 MB: one frame may be that large, two may not
    frames = [protocol.encode({"case": i, "ok": big}) for i in range(2)]
    sent = []

    def send():
        try:
            for frame in frames:
                learner.sendall(frame)
                sent.append(len(frame))
        except OSError:  # the grader stopped reading: the rest is never read
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    child = exchange.Child(os.getpid(), grader)
    outputs, ended = child.collect(3, time.monotonic() + 10, lambda *a: b"")
    assert ended == "oversize"
    assert outputs[0].nbytes == big.nbytes and outputs[1] is None and outputs[2] is None
    grader.close()
    sender.join(10)
    learner.close()


def test_a_module_longer_than_a_returned_string_still_travels_to_the_learners_process():
    source = "# " + "x" * 30_000 + "\n" + hostile_files.SOFTMAX  # 30 kB of comments: an honest module may
    job = {"sources": {"attention": source}}
    with pytest.raises(protocol.Garbage):  # a learner's output may not hold such a string
        protocol.encode(job)
    frame = protocol.encode(job, max_string=protocol.JOB_LIMITS["max_string"])
    assert protocol.decode(frame[8:], **protocol.JOB_LIMITS) == job


def test_an_exercise_s_messages_are_counted_too(monkeypatch):
    import socket

    from autograder.isolation import exchange

    monkeypatch.setattr(exchange, "MAX_EXERCISE_FRAMES", 50)
    grader, learner = socket.socketpair()
    learner.sendall(protocol.encode({"call": "softmax", "args": [], "kwargs": {}}) * 100)  # small, but many
    outputs, ended = exchange.Child(os.getpid(), grader).collect(2, time.monotonic() + 10, lambda *a: b"")
    assert ended == "oversize" and outputs == [None, None]
    grader.close()
    learner.close()


def test_a_submission_is_read_where_there_is_neither_fork_nor_resource(tmp_path):
    """As on Windows, where a learner release's self-check reads a zip in process: importing
    the reader must not need the POSIX-only ``resource``, and the in-process guards answer."""
    import zipfile

    with zipfile.ZipFile(tmp_path / "hw.zip", "w") as z:
        z.write(ROOT / "solutions" / "attention.py", "hw/attention.py")
    script = (
        "import os, sys\n"
        "sys.modules['resource'] = None\n"  # an import of it now raises ImportError
        "del os.fork\n"
        "from autograder import limited, submission\n"
        "assert limited.resource is None\n"
        f"s = submission.load({str(tmp_path / 'hw.zip')!r})\n"
        "print(sorted(s.sources))\n"
        "try:\n"
        "    limited.call(submission.read, 'no-such-folder', what='reading it', expected=submission.SubmissionError)\n"
        "except submission.SubmissionError as err:\n"
        "    print('refused:', err)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "['attention']" in out.stdout
    assert "refused:" in out.stdout
