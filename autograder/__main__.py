"""``python -m autograder`` is ``mha-grade``, ending without the interpreter's teardown
(``quick_exit.py``; the ``mha-grade`` script can point at :func:`main` for the same)."""
import sys


def main() -> None:
    from .cli import main as grade
    from .quick_exit import exit_now

    exit_now(grade(sys.argv[1:]))


if __name__ == "__main__":
    main()
