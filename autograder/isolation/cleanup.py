"""Removing a folder the learner's code wrote in, whatever it did to it: directories made
unreadable or unwritable, a tree deeper than recursion allows. The grader's cleanup of a
child's scratch directory where no tmpfs vanishes with it (``budget.py``), and of the
temporary folders a killed batch left.
"""
from __future__ import annotations

import os
import shutil
import stat


def remove_tree(path: str) -> bool:
    """Remove ``path`` whatever the learner did to it: every directory is given its owner's
    rights back (the grader's user's, or root's) before it is listed. True when nothing is left."""
    stack = [path]
    while stack:  # a loop, not recursion: the learner decides how deep the tree is
        where = stack.pop()
        try:
            mode = os.lstat(where).st_mode
            if not stat.S_ISDIR(mode):
                continue
            if stat.S_IMODE(mode) & stat.S_IRWXU != stat.S_IRWXU:
                os.chmod(where, stat.S_IMODE(mode) | stat.S_IRWXU)
            stack.extend(entry.path for entry in os.scandir(where) if entry.is_dir(follow_symlinks=False))
        except OSError:
            continue
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)
