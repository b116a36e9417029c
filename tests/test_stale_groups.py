"""Control groups a killed grader left behind (``mha-grade-<zygote pid>``) are removed by the
next grader, wherever the killed one ran: in this process's own parent group, or in a group
beside it (a killed run's shell, terminal or job had a group of its own, where no later run
starts). Before, such groups stayed for good (found here: two memory groups of killed runs)."""
import os

import pytest

from autograder.isolation import budget


def _dead_pid() -> int:
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


@pytest.mark.parametrize("which", ["memory", "pids"])
def test_a_killed_zygote_s_groups_are_removed_beside_this_one(which):
    parent = budget.memory_directory() if which == "memory" else budget.pids_directory()
    if parent is None or not budget._may_make_group(parent, which):
        pytest.skip(f"no {which} group may be made here")
    beside = os.path.join(os.path.dirname(parent), f"mha-test-beside-{os.getpid()}")
    os.mkdir(beside)
    try:
        stale = os.path.join(beside, f"mha-grade-{_dead_pid()}")
        os.mkdir(stale)
        os.mkdir(os.path.join(stale, "12345"))  # a child's group inside it
        mine = os.path.join(parent, f"mha-grade-{os.getpid()}")  # a live zygote's (this process's)
        os.mkdir(mine)
        try:
            budget._remove_stale(parent)
            assert not os.path.exists(stale)
            assert os.path.exists(mine)
        finally:
            os.rmdir(mine)
    finally:
        for path in (os.path.join(beside, e) for e in os.listdir(beside)) if os.path.isdir(beside) else ():
            if os.path.isdir(path):
                budget._remove_group(path)
        os.rmdir(beside)


def test_a_pid_taken_again_by_another_process_does_not_keep_a_group():
    # A group made before its pid's process started is a dead zygote's: the pid was reused.
    assert budget._stale("/proc", os.getpid()) is True
    assert budget._stale("/", _dead_pid()) is True
