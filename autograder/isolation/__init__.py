"""The learner's code in confined processes: the grader's handle (``sandbox.py``, and
``exchange.py`` for one child's job), the learner side (``worker.py`` and the modules it
names), and :func:`confinement`, which says whether this machine's kernel confines that code."""
from .confine import confinement  # noqa: F401
