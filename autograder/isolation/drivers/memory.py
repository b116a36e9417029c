"""The memory one call allocates at its peak, measured around it in the process that runs it.

Torch's CPU allocations are reported to torch's profiler (its legacy mode: C++ only, no
import, no kineto start-up, microseconds per op), NumPy's and Python's to ``tracemalloc``;
neither sees the other's, so each gives its own peak. For ``chunked_attention``'s contract
("never holding the full (Lq, Lk) score matrix"): a learner's full matrix is one allocation,
made in one of the two, so the larger of the two peaks shows it.

What a learner's code could still do: stop either measurement (found after the call, and
reported: the check then fails, saying so), or patch this module or torch's profiler from
its own file (deliberate, in the submitted code for an instructor to read, and no easier
than patching any other driver to hide a wrong output). Memory taken outside both (a C
extension's own malloc) is not seen: no course code does that.
"""
from __future__ import annotations

import sys
import tracemalloc


def _torch_profiler():
    """``(enable, disable, enabled)`` of torch's legacy profiler with memory reports, or None
    where torch is not loaded or has no legacy mode (then torch's allocations go unmeasured)."""
    torch = sys.modules.get("torch")
    try:
        from torch.autograd import (ProfilerConfig, ProfilerState, _disable_profiler_legacy,
                                    _enable_profiler_legacy, _profiler_enabled)

        config = ProfilerConfig(ProfilerState.CPU, False, True, False, False, False,
                                torch._C._profiler._ExperimentalConfig())
    except (AttributeError, ImportError, TypeError):
        return None
    return (lambda: _enable_profiler_legacy(config)), _disable_profiler_legacy, _profiler_enabled


def _torch_peak(records) -> tuple[int, int]:
    """``(peak, largest)`` of the allocations the profiler recorded: the most bytes held at once
    above the start, and the largest single block."""
    changes = sorted((e for thread in records for e in thread if e.kind() == "memory_alloc"),
                     key=lambda e: e.start_us())
    held = peak = largest = 0
    for event in changes:
        size = event.cpu_memory_usage()
        held += size
        peak, largest = max(peak, held), max(largest, size)
    return peak, largest


def peak(call):
    """``(result, report)`` of ``call()``: ``report`` holds ``torch`` (bytes of torch tensors held
    at once above the start, None if unmeasured), ``torch_largest`` (the largest block),
    ``traced`` (the same for what tracemalloc sees) and ``stopped`` (the measurement the call
    stopped, "" when none)."""
    torch = _torch_profiler() if "torch" in sys.modules else None
    ours = not tracemalloc.is_tracing()
    if ours:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    profiling = False
    if torch is not None:
        try:
            torch[0]()
            profiling = True
        except RuntimeError:  # a profiler already runs (the grader's own tests may profile)
            pass
    try:
        result = call()
    finally:
        traced = tracemalloc.get_traced_memory()[1] - base if tracemalloc.is_tracing() else None
        stopped = [] if traced is not None else ["tracemalloc"]
        records = None
        if profiling:
            if torch[2]():
                records = torch[1]()
            else:
                stopped.append("torch's profiler")
        if ours and tracemalloc.is_tracing():
            tracemalloc.stop()
    torch_peak, largest = _torch_peak(records) if records is not None else (None, None)
    return result, {"torch": torch_peak, "torch_largest": largest, "traced": traced,
                    "stopped": " and ".join(stopped)}
