"""Ending a grader's process without the interpreter's teardown.

After the last report line is written there is nothing left to do, yet a normal exit
finalizes every module and object that torch, NumPy and the grader created: about a
second of CPU on a loaded machine, as long as a third of the torch import itself
(``bench/grading.py`` measures the whole process). :func:`exit_now` flushes the standard
streams and leaves at once. Reports are written before (atomically, ``report.write_atomic``)
and the learner-side processes are already closed. Under coverage or a debugger, which
save their data at exit, it exits normally.
"""
from __future__ import annotations

import os
import sys


def exit_now(code: int | None) -> None:
    code = 0 if code is None else code
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    if "coverage" in sys.modules or sys.gettrace() is not None:
        sys.exit(code)
    os._exit(code)
