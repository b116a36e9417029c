"""The learner release's README (``release.py``): set up, open the chapters, read the book,
check, hand in; and its set-up commands, which the release's test and bench run as written."""
from __future__ import annotations

import re

LEARNER_REQUIREMENTS = "requirements-learner.txt"


def readme(python: str, html: bool, submit: list[str]) -> str:
    """The learner's README: set up, open the chapters, read the book, check, hand in."""
    if html:
        book = ("Open `html/index.html` in a browser: the book as published, without the solutions (they "
                "are published after the deadline). The chapters in `book/` are the same pages, to run.")
    else:
        book = ("The chapters are the notebooks in `book/` (open them as above); the solutions are "
                "published after the deadline.")
    files = "\n".join(f"- `mha_exercises/{name}`" for name in submit)
    return f"""# Multi-head attention, from the ground up: learner release

The chapters are Jupyter notebooks in `book/`; your exercises are in `mha_exercises/`: replace
each `raise NotImplementedError` with your code.

## 1. Set up (once)

You need Python {python} (`python3 --version`). In this folder:

```bash
python3 -m venv .venv
.venv/bin/pip install torch==2.13.0
.venv/bin/pip install -r {LEARNER_REQUIREMENTS} -e .
```

`torch==2.13.0` goes first and alone: asked for by another package, pip may choose a much larger
GPU build. On Windows use `.venv\\Scripts\\pip` (and `.venv\\Scripts\\python` below).
`-e` installs this folder in place, so the notebooks and the check run the code you edit here.
The environment takes about 1.3 GB of disk (PyTorch is 750 MB of it); with the packages
already downloaded these commands took under two minutes (measured by `bench/release.py` of the
course repository), plus the download on a first install.

## 2. Work through the chapters

```bash
.venv/bin/jupyter lab book/
```

Start with `01_attention.ipynb`. Each chapter runs *your* `mha_exercises/` code.

## 3. Read the book

{book}

## 4. Check your work

In a chapter, `check("softmax")` (any exercise id) grades one exercise. From a terminal, all
exercises or one:

```bash
.venv/bin/mha-check mha_exercises
.venv/bin/mha-check mha_exercises --exercise softmax
```

Your code runs in a separate, confined process; the check compares its results with stored
expected outputs of public practice cases and names the likely mistake when it recognises one.
Your grade comes from the same checks on hidden cases (other random inputs), so pass them
because your code is right, not because it fits these cases.

## 5. Hand in

Hand in your exercise files, as you edited them, as your instructor asks (for instance,
uploaded together to Gradescope):

{files}
"""


def setup_commands(readme_text: str) -> str:
    """The shell commands of the README's set-up step (the test and the bench run exactly these)."""
    section = readme_text.split("## 1. Set up", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)
