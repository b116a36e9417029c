"""``python -m autograder`` is ``mha-grade`` (check() in the notebooks runs it this way)."""
import sys

from .cli import main

sys.exit(main())
