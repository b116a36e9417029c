"""``atomic.write_atomic``, the one writer of reports, results and class files."""
from __future__ import annotations

import os
import stat

import pytest

from autograder import atomic


def test_a_symlink_planted_at_the_path_is_replaced_not_followed(tmp_path):
    target = tmp_path / "instructor-file"
    target.write_text("same bytes")
    os.chmod(target, 0o600)
    planted = tmp_path / "report.json"
    planted.symlink_to(target)
    atomic.write_atomic(planted, "same bytes", mode=0o600)  # even with the very bytes it holds
    assert not planted.is_symlink() and planted.read_text() == "same bytes"
    atomic.write_atomic(planted, "new")
    assert target.read_text() == "same bytes" and planted.read_text() == "new"


def test_unchanged_files_are_kept_and_modes_are_set(tmp_path):
    path = tmp_path / "sub" / "grades.csv"
    atomic.write_atomic(path, "a,b\n")
    first = path.stat()
    assert stat.S_IMODE(first.st_mode) == 0o644
    atomic.write_atomic(path, b"a,b\n")
    assert path.stat().st_ino == first.st_ino  # not rewritten
    atomic.write_atomic(path, "a,b\n", mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_ino != first.st_ino


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "summary.md"
    atomic.write_atomic(path, "old")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(OSError):
        atomic.write_atomic(path, "new")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"]
