"""Build the learner release: ``make release`` -> ``dist/release/`` and ``dist/release.zip``.

What ships, and how the solutions are taken out, is ``autograder/classroom/release/__init__.py``'s.

    python scripts/build_release.py [--out dist/release] [--html _build/learner/_build/html]
    python scripts/build_release.py --book-config _build/learner/_config.yml   # for make book-learner
"""
import sys
from pathlib import Path

# The grader of this checkout, the one beside the book it ships, even where another is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.classroom.release import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
