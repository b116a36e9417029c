"""Hostile submissions: none gets an undeserved point, and the grader always finishes with a
complete report.

Each submission is the reference solutions with ONE function redefined (appended to its
module, so the later definition wins) by the code in ``tests/adversarial/<name>.py``; the
other exercises must keep full marks, which shows that the damage stays in one exercise.
Grading runs in this process (a shared zygote, short time limits); a few cases go through
the ``mha-grade`` command, where what is printed and written is the point.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from processes import running

from autograder.grading import runner
from autograder.isolation import exchange, protocol, sandbox
from autograder.grading.exercises import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).resolve().parent / "adversarial"
TIME_LIMIT = 3.0  # seconds per exercise: long enough on a loaded machine, short for a test


@pytest.fixture(scope="module")
def zygote():
    z = sandbox.Zygote()
    yield z
    z.close()


def submission(tmp_path: Path, module: str, hostile: str, **subst) -> Path:
    """The solutions, with tests/adversarial/<hostile>.py appended to <module>.py."""
    dest = tmp_path / "submission"
    dest.mkdir(exist_ok=True)
    for f in (ROOT / "solutions").glob("*.py"):
        if f.name != "__init__.py" and not (dest / f.name).exists():
            shutil.copy(f, dest / f.name)
    code = (HOSTILE / f"{hostile}.py").read_text()
    for key, value in subst.items():
        code = code.replace(key, value)
    with open(dest / f"{module}.py", "a") as f:
        f.write("\n\n" + code)
    return dest


def grade(path, zygote, exercises, time_limit=TIME_LIMIT):
    t0 = time.monotonic()
    rep = runner.grade_submission(path, exercises=exercises, time_limit=time_limit, zygote=zygote)
    assert [r.id for r in rep.exercises] == [e for e in EXERCISES if e in exercises]  # complete
    return {r.id: r for r in rep.exercises}, time.monotonic() - t0


def assert_only(results, hurt: str, status: str | tuple[str, ...], kind_text: str | None = None):
    """``hurt`` scores 0 with ``status``; every other graded exercise keeps full marks."""
    statuses = (status,) if isinstance(status, str) else status
    r = results[hurt]
    assert r.score == 0 and r.status in statuses, (r.status, r.score, r.feedback)
    if kind_text:
        text = r.feedback + " ".join(c.feedback for c in r.cases)
        assert kind_text in text, text
    for other, o in results.items():
        if other != hurt:
            assert (o.status, o.score) == ("passed", o.max_score), (other, o.feedback)


# -------------------------------------------------------------------- running away

def test_infinite_loop_times_out_alone(zygote, tmp_path):
    results, took = grade(submission(tmp_path, "attention", "infinite_loop"), zygote,
                          ["softmax", "scaled_dot_product_attention", "causal_mask"], time_limit=60)
    # Stopped by its case's CPU limit (0.5 s, times the margin), long before the exercise's 60 s;
    # the next case loops too, so the rest are not run: the first two timed out, the rest not run.
    limit = EXERCISES["softmax"].case_cpu * exchange.CPU_MARGIN
    assert_only(results, "softmax", "timed out", f"more than {limit:g} s of CPU time")
    said = [c.feedback for c in results["softmax"].cases]
    assert [f.split(":")[0] for f in said] == ["timed out"] * 2 + ["not run"] * (len(said) - 2), said
    # What it cost is CPU time (a busy machine stretches the wall time, not this): two cases'
    # limits and a little for the imports; not a limit per case.
    assert results["softmax"].cpu_seconds <= 2 * limit + 0.5


def test_a_case_waiting_on_the_clock_is_not_cut_by_the_cpu_limit(zygote, tmp_path, monkeypatch):
    import dataclasses

    # Each case sleeps 0.25 s: over a 0.2 s CPU limit in wall time, far under it in CPU time.
    monkeypatch.setitem(EXERCISES, "softmax", dataclasses.replace(EXERCISES["softmax"], case_cpu=0.2))
    results, took = grade(submission(tmp_path, "attention", "slow_but_right"), zygote, ["softmax"], time_limit=30)
    assert results["softmax"].status == "passed", results["softmax"].feedback
    assert took > 0.25 * len(results["softmax"].cases)  # it did wait, and was waited for


def test_a_slow_import_is_not_charged_to_the_first_case(zygote, tmp_path):
    # 1 s of CPU at the module's top: twice softmax's CPU limit per case, well under the import's.
    assert EXERCISES["softmax"].case_cpu < 1.0 < exchange.IMPORT_CPU
    results, _ = grade(submission(tmp_path, "attention", "slow_import", SECONDS="1.0"), zygote,
                       ["softmax", "scaled_dot_product_attention"], time_limit=30)
    for r in results.values():
        assert (r.status, r.score) == ("passed", r.max_score), r.feedback


def test_an_import_that_never_ends_is_stopped_at_the_import_cpu_limit(zygote, tmp_path, monkeypatch):
    monkeypatch.setattr(exchange, "IMPORT_CPU", 1.0)
    results, took = grade(submission(tmp_path, "attention", "slow_import", SECONDS="1e9"), zygote,
                          ["softmax", "scaled_dot_product_attention", "causal_mask"], time_limit=60)
    for hurt in ("softmax", "scaled_dot_product_attention"):  # attention.py's two exercises
        r = results[hurt]
        assert (r.status, r.score) == ("timed out", 0), r.feedback
        assert "importing attention.py used more than 1 s of CPU time" in " ".join(c.feedback for c in r.cases)
    assert (results["causal_mask"].status, results["causal_mask"].score) == ("passed", 4)
    # Two imports stopped after 1 s of CPU each: either stopped at its 60 s wall limit instead
    # would make this at least 60 s (what it takes below that depends on the machine's load).
    assert took < 60


def test_memory_bomb_is_stopped(zygote, tmp_path):
    """Stopped by the address-space limit: its MemoryError is the learner's own exception, told
    in its words (the grader's "ran out of memory" is the kernel's OOM count alone)."""
    results, _ = grade(submission(tmp_path, "attention", "memory_bomb"), zygote,
                       ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", "failed", "MemoryError")


@pytest.mark.parametrize("hostile, status, text", [
    ("sys_exit_in_function", "failed", "SystemExit"),
    ("raise_keyboard_interrupt", "failed", "KeyboardInterrupt"),
    ("os_exit_in_function", "error", "exited (status 0)"),
])
def test_exits_inside_a_function(zygote, tmp_path, hostile, status, text):
    results, _ = grade(submission(tmp_path, "attention", hostile), zygote,
                       ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", status, text)


@pytest.mark.parametrize("hostile, text", [
    ("sys_exit_at_import", "SystemExit"),
    ("os_exit_at_import", "exited (status 0)"),
    ("syntax_error", "SyntaxError"),
])
def test_failures_at_import_cost_only_that_module(zygote, tmp_path, hostile, text):
    # analysis.py holds one exercise and nothing imports it.
    results, _ = grade(submission(tmp_path, "analysis", hostile), zygote,
                       ["attention_entropy", "softmax", "masked_softmax"])
    assert_only(results, "attention_entropy", "error", text)


def test_a_broken_module_imported_by_another_costs_only_its_own_exercises(zygote, tmp_path):
    # attention.py does `from .masking import masked_softmax`: a stand-in keeps it importable.
    results, _ = grade(submission(tmp_path, "masking", "sys_exit_at_import"), zygote,
                       ["softmax", "scaled_dot_product_attention", "masked_softmax"])
    assert_only(results, "masked_softmax", "error", "SystemExit")


def test_a_child_that_outlives_the_check_is_killed(zygote, tmp_path):
    # Where the kernel refuses new processes (seccomp), every attempt fails; elsewhere the
    # zygote kills whatever was started once the exercise ends.
    results, _ = grade(submission(tmp_path, "attention", "spawn_survivor"), zygote,
                       ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", "failed")
    said = results["softmax"].cases[0].feedback
    spawned = [int(p) for p in said.split("PIDS")[1].split("REFUSED")[0].split()]
    refused = said.split("REFUSED")[1].split("END")[0].split()
    assert len(spawned) + len(refused) == 3, said  # a plain child, a new session, a double fork
    deadline = time.monotonic() + 5
    alive = spawned
    while alive and time.monotonic() < deadline:
        alive = [p for p in spawned if running(p)]
        time.sleep(0.05)
    assert not alive, f"still running: {alive}"


def test_the_zygote_killed_by_the_learner_is_replaced(zygote, tmp_path):
    results, _ = grade(submission(tmp_path, "attention", "kill_zygote"), zygote,
                       ["softmax", "scaled_dot_product_attention", "causal_mask"])
    assert_only(results, "softmax", ("error", "failed"))


# ----------------------------------------------------------------- faking a result

def test_monkeypatching_comparisons_and_builtins_gains_nothing(zygote, tmp_path):
    results, _ = grade(submission(tmp_path, "attention", "monkeypatch_comparisons"), zygote,
                       ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", "failed")


@pytest.mark.parametrize("hostile", ["ndarray_subclass", "tensor_subclass"])
def test_array_and_tensor_subclasses_cannot_fake_equality(zygote, tmp_path, hostile):
    results, _ = grade(submission(tmp_path, "attention", hostile), zygote,
                       ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", "failed")


def test_a_tensor_subclass_from_a_torch_layer_gains_nothing(zygote, tmp_path):
    results, _ = grade(submission(tmp_path, "layer", "tensor_subclass_layer"), zygote,
                       ["MultiHeadAttention", "multi_head_attention"])
    r = results["MultiHeadAttention"]
    assert r.score < r.max_score / 2, (r.score, r.feedback)  # only checks that ignore the output
    assert results["multi_head_attention"].score == results["multi_head_attention"].max_score


@pytest.mark.parametrize("hostile", ["returns_list", "returns_none", "returns_nan", "returns_inf",
                                     "returns_object_array", "returns_huge_nesting"])
def test_wrong_return_values(zygote, tmp_path, hostile):
    results, _ = grade(submission(tmp_path, "attention", hostile), zygote,
                       ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", "failed")


@pytest.mark.parametrize("hostile", ["sdpa_wrong_tuple", "sdpa_returns_none"])
def test_wrong_tuples(zygote, tmp_path, hostile):
    results, _ = grade(submission(tmp_path, "attention", hostile), zygote,
                       ["scaled_dot_product_attention", "softmax"])
    assert_only(results, "scaled_dot_product_attention", "failed")


def test_a_missing_function_is_not_attempted(zygote, tmp_path):
    sub = submission(tmp_path, "attention", "infinite_loop")  # then drop softmax entirely
    text = (sub / "attention.py").read_text().replace("def softmax(", "def softmax_renamed(")
    (sub / "attention.py").write_text(text)
    results, _ = grade(sub, zygote, ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", "not attempted", "defines no `softmax`")


def test_calling_a_reference_it_may_not_use_is_refused(zygote, tmp_path):
    # softmax asks the grader for the reference softmax over the proxy channel: refused.
    results, _ = grade(submission(tmp_path, "attention", "steal_reference"), zygote,
                       ["softmax", "scaled_dot_product_attention"])
    assert_only(results, "softmax", "failed")


# ------------------------------------------------------ what is printed and written

def test_fake_report_on_stdout_and_tampered_report_files(tmp_path):
    out_json, out_gs = tmp_path / "report.json", tmp_path / "results.json"
    sub = submission(tmp_path, "attention", "fake_report", JSON_PATH=str(out_json), GS_PATH=str(out_gs))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "-e", "softmax", "-e", "causal_mask",
                           "--json", str(out_json), "--gradescope", str(out_gs), "--time-limit", "5"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "FAKE" not in proc.stdout + proc.stderr  # the learner's prints go nowhere
    full = json.loads(out_json.read_text())
    assert {e["id"]: e["score"] for e in full["exercises"]} == {"softmax": 0, "causal_mask": 4}
    gs = json.loads(out_gs.read_text())
    assert gs["score"] == 4 and "FAKE" not in json.dumps(gs)


def test_learner_code_cannot_write_to_a_descriptor_the_grader_holds(tmp_path):
    # The CLI forks its zygote from the grader's process: the grader's open files must not
    # reach the learner's code. Here the grader inherits an open file from this test.
    held = tmp_path / "held.txt"
    held.write_text("the grader's file\n")
    fd = os.open(held, os.O_RDWR | os.O_APPEND)
    try:
        sub = submission(tmp_path, "attention", "write_grader_fds")
        out_json = tmp_path / "report.json"
        proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "-e", "softmax", "-e", "causal_mask",
                               "--json", str(out_json), "--time-limit", "5"], pass_fds=[fd],
                              capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"),
                              cwd=tmp_path, timeout=300)
    finally:
        os.close(fd)
    assert proc.returncode == 0, proc.stderr
    assert held.read_text() == "the grader's file\n"
    scores = {e["id"]: e["score"] for e in json.loads(out_json.read_text())["exercises"]}
    assert scores == {"softmax": 0, "causal_mask": 4}


# ----------------------------------------------------------------- the protocol

def _frame(header: str, data: bytes = b"") -> bytes:
    return struct.pack("<I", len(header)) + header.encode() + data


@pytest.mark.parametrize("frame", [
    _frame("{oops"),  # not JSON
    _frame("{}"),  # an untagged dict
    _frame('{"a":[0,"object",[1],"np"]}', b"\0" * 8),  # object dtype: never unpickled
    _frame('{"a":[0,"float64",[99],"np"]}', b"\0" * 8),  # fewer bytes than the shape
    _frame('{"a":[0,"float64",[-1],"np"]}'),  # a negative size
    _frame('{"a":[0,"float64",[1],"np"]}', b"\0" * 16),  # unclaimed bytes
    _frame('{"a":[0,"float64",[1],"pickle"]}', b"\0" * 8),  # an unknown kind
    _frame("[" * 40 + "]" * 40),  # too deep
    b"\xff\xff\x00\x00{}",  # a header longer than the message
])
def test_garbage_frames_are_refused(frame):
    with pytest.raises(protocol.Garbage):
        protocol.decode(frame)


def test_plain_data_round_trips_and_subclasses_lose_their_overrides():
    import torch

    class Liar(np.ndarray):
        def __eq__(self, other):
            return True

    class TorchLiar(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return torch.ones(7)

    value = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": (1, 2.5, None, True, "x"),
             "c": [np.float64(3.0)], "liar": np.zeros(3).view(Liar),
             "t": torch.zeros(2).as_subclass(TorchLiar), "nan": float("nan")}
    frame = protocol.encode(value)
    back = protocol.decode(frame[8:])
    assert back["a"].dtype == np.float32 and back["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["b"] == (1, 2.5, None, True, "x") and type(back["c"][0]) is np.float64
    assert type(back["liar"]) is np.ndarray and back["liar"].tolist() == [0, 0, 0]
    assert type(back["t"]) is np.ndarray and back["t"].tolist() == [0, 0]
    assert np.isnan(back["nan"])
    with pytest.raises(protocol.Garbage):
        protocol.encode({"f": lambda: 0})
    with pytest.raises(protocol.Garbage):
        protocol.encode(np.array([object()]))


def test_no_learner_process_is_left_behind(zygote):
    # Every child of the shared zygote has been reaped: only the zygote itself remains.
    children = [p for p in _children_of(zygote.process.pid)]
    assert children == []


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
        except OSError:
            continue
    return out



def test_the_run_budget_bounds_the_whole_run(zygote, tmp_path, monkeypatch):
    import dataclasses
    import time as clock

    monkeypatch.setitem(EXERCISES, "softmax", dataclasses.replace(EXERCISES["softmax"], case_cpu=60.0))
    sub = submission(tmp_path, "attention", "infinite_loop")
    t0 = clock.monotonic()
    rep = runner.grade_submission(sub, exercises=["softmax", "scaled_dot_product_attention", "causal_mask"],
                                  time_limit=30, budget=2.0, zygote=zygote)
    took = clock.monotonic() - t0
    statuses = {r.id: r.status for r in rep.exercises}
    assert statuses["softmax"] == "timed out" and took < 30  # not the 30 s limit (below it: the machine's load)
    assert "time budget" in rep.exercises[0].cases[0].feedback
    # Whatever the budget left for, the report is complete and nothing is scored unearned.
    assert len(rep.exercises) == 3 and rep.exercises[0].score == 0


def test_a_proxied_call_cannot_exhaust_the_grader(zygote, tmp_path):
    # The reference runs on the learner's arguments only after a cost check against the case's sizes.
    results, _ = grade(submission(tmp_path, "layer", "exhaust_the_grader"), zygote,
                       ["multi_head_attention", "softmax"], time_limit=20)
    assert_only(results, "multi_head_attention", "failed", "was not run")


def test_a_proxied_call_of_any_size_ends_within_the_exercise_s_limit(zygote, tmp_path):
    # 21 MB of float16 for the reference attention: 72 s of the grader's CPU before (409 s for another size).
    limit = 4.0
    results, took = grade(submission(tmp_path, "layer", "float16_proxy"), zygote, ["multi_head_attention"],
                          time_limit=limit)
    assert results["multi_head_attention"].score == 0
    assert took < limit + 2, took


def test_a_case_with_its_own_time_limit_stops_sooner(zygote, tmp_path, monkeypatch):
    import dataclasses

    softmax = EXERCISES["softmax"]
    quick = dataclasses.replace(softmax, case_cpu=60.0,  # the wall limit of the case is what is tested
                                cases=lambda rng: [dataclasses.replace(c, timeout=1.0) for c in softmax.cases(rng)])
    monkeypatch.setitem(EXERCISES, "softmax", quick)
    t0 = time.monotonic()
    rep = runner.grade_submission(submission(tmp_path, "attention", "infinite_loop"), exercises=["softmax"],
                                  zygote=zygote)  # the exercise's own 10 s limit, not a short one
    r = rep.exercises[0]
    assert r.status == "timed out" and r.score == 0
    assert "this case's 1 s" in r.cases[0].feedback
    # The first case is run twice (a wall limit: a busy moment is not the learner's), the next to its
    # own limit; two slow in a row, the rest are not run: within the exercise's limit.
    said = [c.feedback.split(":")[0] for c in r.cases]
    assert said == ["timed out"] * 2 + ["not run"] * (len(said) - 2), said
    assert time.monotonic() - t0 < softmax.timeout + 5


@pytest.mark.parametrize("hostile, case_timeout", [("sleep_forever", None), ("sleep_forever", 1.0), ("infinite_loop", None),
                                                   ("memory_bomb", None), ("os_exit_in_function", None)])
def test_the_grader_and_the_self_check_word_a_child_s_end_alike(zygote, tmp_path, monkeypatch, hostile, case_timeout):
    """One wording of how a child ended (isolation/exchange.py:settle), whichever path ran it:
    mha-grade's runner on the hidden cases, the learner's self-check on stored public cases."""
    import dataclasses

    from autograder import selfcheck
    from autograder.grading import judge
    from autograder.grading.exercises import draw

    # A short wall limit of the exercise's own, the same for both paths (sleep_forever meets it),
    # or a shorter one of each case's.
    original = EXERCISES["softmax"]
    softmax = dataclasses.replace(original, timeout=TIME_LIMIT, cases=lambda rng: [
        dataclasses.replace(c, timeout=case_timeout) for c in original.cases(rng)])
    monkeypatch.setitem(EXERCISES, "softmax", softmax)
    cases = draw.public_cases(softmax)
    selfcheck.store(softmax, cases, [judge.reference_output(c) for c in cases], [{} for _ in cases],
                    tmp_path / "public")
    sub = submission(tmp_path, "attention", hostile)
    graded = runner.grade_submission(sub, exercises=["softmax"], zygote=zygote).exercises[0]
    checked = selfcheck.check_submission(sub, ["softmax"], directory=tmp_path / "public", zygote=zygote).exercises[0]
    said = {c.feedback for c in graded.cases}
    # The first case's end in the same words; both then give each later case its own outcome
    # (``exchange.run_cases``: the exercise's limit, for a case that waits forever after one that did).
    assert not graded.cases[0].passed and graded.cases[0].feedback == checked.cases[0].feedback
    assert case_timeout or {c.feedback for c in checked.cases} == said
    # Each later case: the same end, the exercise's wall limit, or "not run" (after two slow cases
    # in a row, or once the child running them is gone).
    later = {c.feedback for c in graded.cases if c.feedback.startswith(("timed out: no result", "timed out: the exercise", "not run: "))}
    assert said <= {graded.cases[0].feedback, checked.cases[-1].feedback} | later, said
    assert (checked.status, checked.score) == (graded.status, graded.score) == (graded.status, 0)
    if case_timeout:
        assert "this case's 1 s" in graded.cases[0].feedback


# -------------------------------------------------------------------- limits that hold under load

def test_the_case_after_a_timeout_gets_its_own_outcome(zygote, tmp_path):
    """apply_rope loops at positions in the thousands; the next case (an odd d, which must
    raise at once) is graded on what the code does there, not reported timed out."""
    results, _ = grade(submission(tmp_path, "language_model", "rope_loops_far"), zygote, ["apply_rope"], time_limit=30)
    cases = results["apply_rope"].cases
    far = [i for i, c in enumerate(cases) if "2500 to 3499" in c.name]
    assert far and far[0] + 1 < len(cases)
    assert cases[far[0]].feedback.startswith("timed out: this case used more than"), cases[far[0]].feedback
    assert [c.passed for i, c in enumerate(cases) if i != far[0]] == [True] * (len(cases) - 1), [
        (c.name, c.feedback) for c in cases if not c.passed]
    assert results["apply_rope"].status == "timed out" and 0 < results["apply_rope"].score < 3


def test_a_right_but_slow_rope_gets_the_same_grade_on_a_busy_machine(zygote, tmp_path):
    """``dense_rope.py`` needs about 0.4-0.6 s of CPU at positions 2500-3499 (the exercise's
    budget is 0.5 s a case): graded 10 times while two processes started here keep both cores
    busy, it gets its full grade every time."""
    sub = submission(tmp_path, "language_model", "dense_rope")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        grades = [runner.grade_submission(sub, exercises=["apply_rope"], zygote=zygote).exercises[0]
                  for _ in range(10)]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert {(r.status, r.score) for r in grades} == {("passed", 3.0)}, [
        (r.score, [c.feedback for c in r.cases if not c.passed]) for r in grades]
