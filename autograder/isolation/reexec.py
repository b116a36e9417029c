"""The fresh image: how a grader starts its learner-side process with none of its secrets.

A grader run as a program on Linux replaces itself (execve) by a fresh interpreter whose
command line and environment say nothing of the grader's options (the seed, the output
paths) or of the instructor's environment (tokens, the class folder): those wait in a memory
file inherited across the exec. The fresh image forks its zygotes first, which therefore
hold none of it, and only then reads them back (:func:`read_options`). ``mha-grade``
(``classroom/cli.py``) is the grader that does so; the order it relies on (the zygote
before torch and before any reference code) is stated in ``.importlinter``.
"""
from __future__ import annotations

import json
import os
import sys

OPTIONS_FD = "MHA_GRADE_OPTIONS_FD"
# What the fresh image's environment keeps until the zygote is forked: what Python, the
# libraries and the terminal read at start-up. The rest (an instructor's tokens) comes back
# from the memory file afterwards, in the grader only.
_START_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "COLUMNS", "LINES", "NO_COLOR",
              "FORCE_COLOR", "TMPDIR", "LD_LIBRARY_PATH", "VIRTUAL_ENV")
_START_PREFIXES = ("LC_", "PYTHON", "MHA_", "OMP_", "MKL_", "OPENBLAS_")


def can_reexec() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "memfd_create") and bool(sys.executable)


def reexec(argv: list[str], image_args: list[str], entry: str) -> None:
    """execve a fresh interpreter that runs ``entry``'s ``main()`` with a command line that says
    only ``image_args`` and a start-up environment; the options and the whole environment wait
    in an inherited memory file. Returns only if the exec failed."""
    fd = os.memfd_create("mha-grade-options", 0)  # inherited across execve, never on disk
    os.write(fd, json.dumps({"argv": argv, "env": dict(os.environ)}).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    env = {k: v for k, v in os.environ.items() if k in _START_ENV or k.startswith(_START_PREFIXES)}
    env.pop(OPTIONS_FD, None)
    env[OPTIONS_FD] = str(fd)
    # The same import path as this process (never the current directory's first).
    code = (f"import sys; sys.path[:] = {_image_path()!r}; from {entry} import main; "
            "from autograder.quick_exit import exit_now; exit_now(main())")
    try:
        os.execve(sys.executable, [sys.executable, "-c", code, *image_args], env)
    except OSError:
        os.close(fd)


def _image_path() -> list[str]:
    """This process's import path without the current directory (where ``python -m`` put it),
    unless the grader is imported from there: importing lists each folder of the path, and a
    zygote forked in the image would hold the names of the instructor's files (the class folder)."""
    here = os.path.realpath(os.getcwd())
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    return [p for p in sys.path if os.path.realpath(p or ".") != here or here == home]


def read_options(fd: int) -> list[str]:
    """The real options, with the whole environment restored, read once the zygote exists (it
    closed this fd); ``pread`` leaves the file offset, which a process forked earlier (the
    batch's process ahead, ``classroom/ahead.py``) shares, where it was."""
    saved = json.loads(os.pread(fd, os.fstat(fd).st_size, 0))
    os.close(fd)
    os.environ.clear()
    os.environ.update(saved["env"])
    return saved["argv"]
