"""The reference outputs kept on disk (autograder/grading/cache.py): the same reports with and
without them, read instead of recomputed, never used for other inputs, only in a private folder."""
import os
import stat

import pytest

from autograder.grading import cache, judge, reference, runner
from autograder.isolation import sandbox
from autograder.submission import Submission, load
from solution_copies import ROOT

NO_MAX = "\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum(axis=axis, keepdims=True)\n"
EXERCISES = ["softmax", "MultiHeadAttention"]


@pytest.fixture(scope="module")
def zygote():
    z = sandbox.Zygote()
    yield z
    z.close()


@pytest.fixture
def submission():
    sources = load(ROOT / "solutions").sources
    return Submission("wrong-softmax", dict(sources, attention=sources["attention"] + NO_MAX))


def forget():
    """This process's memory of cases and outputs: the next run must use the disk, or compute."""
    runner.forget_cases()
    judge.forget_outputs()
    cache.forget_warmed()


def reference_runs(monkeypatch) -> list:
    calls = []
    real = reference.namespace
    monkeypatch.setattr(reference, "namespace", lambda overrides=None: calls.append(overrides) or real(overrides))
    return [calls]


def grade(submission, zygote, seed=0):
    forget()
    report = runner.grade_submission(submission, exercises=EXERCISES, zygote=zygote, seed=seed).to_dict()
    for key in ("wall_time", "graded_at"):
        report.pop(key)
    for exercise in report["exercises"]:
        exercise.pop("cpu_seconds")  # as the kernel counted it: never twice the same
    return report


def test_stored_outputs_are_read_back_not_recomputed(tmp_path, monkeypatch, zygote, submission):
    where = tmp_path / "cache"
    monkeypatch.setenv("MHA_GRADE_CACHE", "off")
    without = grade(submission, zygote)
    assert not where.exists()

    monkeypatch.setenv("MHA_GRADE_CACHE", str(where))
    (calls,) = reference_runs(monkeypatch)
    first = grade(submission, zygote)
    stored = sorted(where.rglob("*.bin"))
    assert [p.name for p in stored] == ["0-MultiHeadAttention-cases.bin", "0-MultiHeadAttention.bin",
                                        "0-softmax-cases.bin", "0-softmax.bin"]
    assert stat.S_IMODE(where.stat().st_mode) == 0o700 and stat.S_IMODE(stored[0].stat().st_mode) == 0o600
    assert calls.count(None) > 0  # computed once...
    calls.clear()
    second = grade(submission, zygote)
    assert calls.count(None) == 0  # ...then read (the known bugs still run: the diagnosis)
    assert without == first == second
    assert second["exercises"][0]["status"] == "partial"


def test_outputs_for_other_inputs_or_unreadable_files_are_recomputed(tmp_path, monkeypatch, zygote, submission):
    where = tmp_path / "cache"
    monkeypatch.setenv("MHA_GRADE_CACHE", str(where))
    good = grade(submission, zygote)
    (calls,) = reference_runs(monkeypatch)
    path = next(where.rglob("0-softmax.bin"))
    path.write_bytes(path.read_bytes()[:-7] + b"garbage")  # a torn or tampered file
    assert grade(submission, zygote) == good and calls.count(None) > 0

    monkeypatch.setenv("MHA_GRADE_CACHE", "off")
    seed_1 = grade(submission, zygote, seed=1)
    monkeypatch.setenv("MHA_GRADE_CACHE", str(where))
    for stored in where.rglob("0-*.bin"):  # seed 0's outputs under seed 1's names: other inputs
        stored.with_name("1-" + stored.name[2:]).write_bytes(stored.read_bytes())
    calls.clear()
    assert grade(submission, zygote, seed=1) == seed_1 and calls.count(None) > 0


def test_a_folder_others_can_read_is_not_used(tmp_path, monkeypatch):
    where = tmp_path / "shared"
    where.mkdir(mode=0o755)
    os.chmod(where, 0o755)
    monkeypatch.setenv("MHA_GRADE_CACHE", str(where))
    assert cache.directory() is None
    os.chmod(where, 0o700)
    assert cache.directory() == where
    monkeypatch.setenv("MHA_GRADE_CACHE", "off")
    assert cache.directory() is None


def test_stored_cases_are_the_drawn_ones(tmp_path, monkeypatch):
    from autograder.grading.exercises import EXERCISES as ALL, draw
    from autograder.isolation import protocol

    monkeypatch.setenv("MHA_GRADE_CACHE", str(tmp_path / "cache"))
    for exercise in (ALL["softmax"], ALL["head_importance"]):
        drawn = draw.grading_cases(exercise, 3)
        stored = cache.cases(exercise, 3, lambda: drawn)  # drawn, then written
        calls = []
        read = cache.cases(exercise, 3, lambda: calls.append(1) or drawn)  # read back from disk
        assert not calls and read is not drawn and len(read) == len(drawn) == len(stored)
        for a, b in zip(read, drawn):
            assert (a.name, a.driver, a.weight, a.rtol, a.atol, a.properties, a.timeout, a.rung) == \
                   (b.name, b.driver, b.weight, b.rtol, b.atol, b.properties, b.timeout, b.rung)
            assert protocol.encode(a.inputs) == protocol.encode(b.inputs)  # same arrays, dtypes and types
