"""``python -m autograder`` is ``mha-grade`` (``classroom/cli.py``), ending without the
interpreter's teardown (``quick_exit.py``) when it grades in this process. On Linux the
command line replaces the process by a fresh interpreter first (execve, ``isolation/reexec.py``);
that image ends as its own code says.

The command line is the instructors' (``classroom/``, not shipped to learners): it is loaded
by name, so that this public module imports nothing secret (``.importlinter``), and a learner
release, which has no ``classroom/``, says what to run instead.
"""
import importlib
import importlib.util
import sys

from .quick_exit import exit_now

COMMAND_LINE = "autograder.classroom.cli"


def main() -> None:
    if importlib.util.find_spec("autograder.classroom") is None:
        sys.exit("mha-grade is the instructors' grader, not part of this release: `mha-check` "
                 "(or `python -m autograder.selfcheck`) checks your exercises on the public cases")
    exit_now(importlib.import_module(COMMAND_LINE).main())


if __name__ == "__main__":
    main()
