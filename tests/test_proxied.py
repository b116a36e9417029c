"""Calls of a learner's code to the reference (``autograder/grading/proxied.py``): costed against
the exercise's own cases before they run, float16 cast up front, run in a worker the grader
kills at the exercise's deadline. From outside: the wall time a call takes, the worker's pid."""
import os
import time

import numpy as np
import pytest

from autograder.grading import proxied
from autograder.grading.exercises import EXERCISES
from autograder.isolation import protocol

MHA = EXERCISES["multi_head_attention"]
CASES = MHA.cases(np.random.default_rng(0))


def _reply(frame: bytes):
    return protocol.decode(frame[8:], torch_tensors=True)


def test_the_attack_sizes_are_refused_before_any_work():
    answer = proxied.answerer({"scaled_dot_product_attention": "attention"}, CASES)
    q = np.ones((1, 4, 1024, 870), dtype=np.float16)  # 21 MB: 72 s of float16 matmul in the grader before
    t0 = time.monotonic()
    got = _reply(answer("scaled_dot_product_attention", [q, q, q], {}))
    assert time.monotonic() - t0 < 1.0
    assert "was not run" in got["error"] and "elements" in got["error"]
    big = np.ones((1, 20000, 1))  # a 20000 x 20000 score matrix from a few elements: refused on its work
    got = _reply(answer("scaled_dot_product_attention", [big, big, big], {}))
    assert "was not run" in got["error"] and "operations" in got["error"]


def test_a_call_the_size_of_a_case_is_answered_and_float16_keeps_its_dtype():
    from solutions.attention import scaled_dot_product_attention

    answer = proxied.answerer({"scaled_dot_product_attention": "attention"}, CASES)
    q = np.random.default_rng(1).standard_normal((2, 2, 5, 4)).astype(np.float16)
    got = _reply(answer("scaled_dot_product_attention", [q, q, q], {}))["result"]
    want = scaled_dot_product_attention(q.astype(np.float32), q.astype(np.float32), q.astype(np.float32))
    assert got[0].dtype == np.float16 and np.allclose(got[0], want[0].astype(np.float16))
    assert _reply(answer("no_such", [], {}))["error"].startswith("no reference")


@pytest.mark.parametrize("seconds", [0.5, 1.5])
def test_a_call_past_its_deadline_is_killed_in_its_worker(seconds):
    # Costed as allowed (the scale of a large case), slow in fact: int64 matmul, no BLAS.
    q = np.ones((1, 1, 3500, 3500))  # 2 x 43e9 multiply-adds: many seconds on one core, or over its memory
    answer = proxied.answerer({"scaled_dot_product_attention": "attention"}, [],
                              deadline=time.monotonic() + seconds)
    proxied.FLOOR_ELEMENTS, proxied.FLOOR_WORK, old = 1 << 40, 1 << 60, (proxied.FLOOR_ELEMENTS, proxied.FLOOR_WORK)
    try:
        t0 = time.monotonic()
        got = _reply(answer("scaled_dot_product_attention", [q, q, q], {}))
        took = time.monotonic() - t0
    finally:
        proxied.FLOOR_ELEMENTS, proxied.FLOOR_WORK = old
    assert "took longer than" in got["error"] or "ran out of the time" in got["error"], got
    assert took < seconds + 2, took
    dead = proxied.worker()
    assert dead.pid is None  # the slow worker was killed; the next call forks a fresh one
    small = np.ones((1, 1, 3, 4))
    assert "result" in _reply(proxied.answerer({"scaled_dot_product_attention": "attention"}, CASES)(
        "scaled_dot_product_attention", [small, small, small], {}))
    assert dead.pid is None or os.waitpid(dead.pid, os.WNOHANG) == (0, 0)


def test_any_call_the_child_sends_gets_a_reply():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    answer = proxied.answerer({"scaled_dot_product_attention": "attention"}, CASES)
    small = st.builds(lambda s, d: np.ones(s, dtype=d), st.lists(st.integers(0, 5), max_size=5).map(tuple),
                      st.sampled_from(["float16", "float32", "float64", "int64", "bool", "uint8"]))
    junk = st.recursive(st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=5), small),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                        max_leaves=8)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(name=st.one_of(st.just("scaled_dot_product_attention"), junk), args=junk, kwargs=junk)
    def run(name, args, kwargs):
        reply = _reply(answer(name, args, kwargs))
        assert set(reply) <= {"result", "error"}

    run()


def test_arrays_that_broadcast_into_a_cube_are_costed_as_the_cube():
    # Review F5: q (470,1,1,1,1), k (1,470,1,1,1), v (1,1,470,1,1): 1,410 elements that broadcast to 470^3
    # (830 MB of float64 in the grader's worker).
    answer = proxied.answerer({"scaled_dot_product_attention": "attention"}, CASES)
    q, k, v = (np.ones(tuple(470 if i == j else 1 for i in range(5))) for j in range(3))
    got = _reply(answer("scaled_dot_product_attention", [q, k, v], {}))
    assert "was not run" in got["error"], got
