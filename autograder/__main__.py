"""``python -m autograder`` is ``mha-grade``, ending without the interpreter's teardown
(``quick_exit.py``) when it grades in this process. On Linux ``cli.main`` replaces the process
by a fresh interpreter first (execve); that image ends as its own code says."""
import sys


def main() -> None:
    from .cli import main as grade
    from .quick_exit import exit_now

    exit_now(grade())


if __name__ == "__main__":
    main()
