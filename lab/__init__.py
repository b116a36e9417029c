"""The course's support code and data: what chapters, benchmarks and the grader use, and
learners read but never write (the exercises are in ``mha_exercises/``).

==============  ==========================================================
module          what it holds
==============  ==========================================================
plots.py        the chapters' figures
heads_task.py   chapter 5's task: a tiny model whose heads learn sub-tasks
digits.py       chapter 6's lab: the digits data and the prunable model
removal.py      chapter 6's experiment: heads removed in orders, pruning curves, seeds
weights/        chapter 6's trained weights (``scripts/train_digits.py``)
measure.py      chapter 7's speed and memory measurements
views.py        views in the page: attention to hover, the in-browser sentence model, tables
page.py         numbers glued into the text and the text's claims, with or without myst-nb
==============  ==========================================================
"""
