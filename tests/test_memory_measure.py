"""``drivers.memory.peak``, which grades chunked attention's "never holding the full (Lq, Lk)
score matrix": what it sees of torch's and NumPy's allocations, and the state it leaves."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from autograder.isolation.drivers import memory

MIB = 2**20


def test_numpy_reports_its_arrays_to_tracemalloc():
    """What the traced peak rests on, for the NumPy installed."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        a = np.empty((2048, 2048))
        del a
        assert tracemalloc.get_traced_memory()[1] >= 32 * MIB
    finally:
        tracemalloc.stop()


def test_a_numpy_matrix_shows_in_the_traced_peak():
    _, used = memory.peak(lambda: np.ones((2048, 2048)).sum())
    assert 32 * MIB <= used["traced"] < 33 * MIB
    assert used["stopped"] == ""


def test_a_torch_matrix_shows_in_the_torch_peak_and_as_the_largest_block():
    _, used = memory.peak(lambda: torch.ones(2048, 2048, dtype=torch.float64).sum())
    assert used["torch_largest"] == 32 * MIB
    assert 32 * MIB <= used["torch"] < 33 * MIB
    assert used["traced"] < MIB  # torch's allocator does not report to tracemalloc


def test_what_is_freed_before_the_next_allocation_is_not_counted_twice():
    def one_after_the_other():
        for _ in range(3):
            torch.ones(1024, 2048, dtype=torch.float64).sum()  # 16 MiB, freed at once

    _, used = memory.peak(one_after_the_other)
    assert 16 * MIB <= used["torch"] < 17 * MIB


def test_the_result_comes_back_and_both_measures_stop_after_the_call():
    assert not tracemalloc.is_tracing() and not torch.autograd._profiler_enabled()
    result, _ = memory.peak(lambda: 42)
    assert result == 42
    assert not tracemalloc.is_tracing() and not torch.autograd._profiler_enabled()
    with pytest.raises(ZeroDivisionError):
        memory.peak(lambda: 1 / 0)
    assert not tracemalloc.is_tracing() and not torch.autograd._profiler_enabled()


def test_tracemalloc_already_tracing_is_left_tracing():
    tracemalloc.start()
    try:
        _, used = memory.peak(lambda: np.ones((1024, 1024)).sum())
        assert tracemalloc.is_tracing()
        assert 8 * MIB <= used["traced"] < 9 * MIB
    finally:
        tracemalloc.stop()


def test_a_call_that_stops_either_measure_is_reported():
    def stops_tracemalloc():
        tracemalloc.stop()

    def stops_the_profiler():
        torch.autograd._disable_profiler_legacy()

    assert memory.peak(stops_tracemalloc)[1]["stopped"] == "tracemalloc"
    _, used = memory.peak(stops_the_profiler)
    assert used["stopped"] == "torch's profiler" and used["torch"] is None
    assert not tracemalloc.is_tracing() and not torch.autograd._profiler_enabled()


def test_a_profiler_already_running_leaves_torch_unmeasured_and_running():
    enable, disable, enabled = memory._torch_profiler()
    enable()
    try:
        _, used = memory.peak(lambda: torch.ones(1024, 1024).sum())
        assert used["torch"] is None and used["stopped"] == "" and enabled()
    finally:
        disable()
