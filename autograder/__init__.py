"""The trusted grader. It lives outside the learner-editable package ``mha_exercises``.

Pipeline (one module each): load a submission (``submission.py``), run the learner's code
in an isolated process (``sandbox.py`` + ``worker.py``, plain data over ``protocol.py``),
compare with the reference and diagnose (``judge.py``, using the checks of
``exercises/``), report (``report.py``). ``cli.py`` is ``mha-grade``.
"""
__version__ = "0.1.0"
