"""``mha-grade`` with the planted stand-in grader (``classbuild.planted_grade``), as a program:
tests/test_term.py runs a term's shards as separate processes with it.

    python tests/planted_mha_grade.py term TERM.toml --out OUT --unconfined [...]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from classbuild import planted_grade  # noqa: E402

from autograder.classroom import batch, cli  # noqa: E402

batch.pipeline_grader = lambda user, time_limit, zygotes=0: planted_grade
sys.exit(cli.main(sys.argv[1:]))
