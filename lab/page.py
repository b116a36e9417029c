"""What a chapter's code cells tell the text around them, wherever the chapter runs: the book's
build (myst-nb), JupyterLab with the learner set (jupyterlab-myst), a hosted kernel.

``glue("name", value)`` pastes a computed number into the text. Where myst-nb is installed (the
book's build) it is myst-nb's glue, for the book's ``{glue:text}`name:.2f```; everywhere it also
keeps the value, so that ``glued("name:.2f")`` is the same text. The learner release's chapters
say ``{eval}`glued("name:.2f")``` instead (jupyterlab-myst renders ``{eval}`` by asking the
kernel), so the number shows in JupyterLab once the cell that computes it has run.

``checking_the_text()`` says whether this run backs the published text: the reference solutions
(``MHA_BACKEND=solutions``, the book's build and its tests). The chapters check the text's claims
only then, in cells the book does not show (tag ``remove-cell``): with a learner's code a claim
may not hold, and that is the learner's run, not a broken page.
"""
from __future__ import annotations

from mha_exercises.backend import backend

try:  # the book's build and the developers' install; not the learner set
    from myst_nb import glue as _myst_glue
except ImportError:
    _myst_glue = None

_GLUED: dict[str, object] = {}


class _Text(str):
    """A string that shows as itself: ``{eval}`` displays the repr, which for ``str`` is quoted."""

    def __repr__(self) -> str:
        return str(self)


def glue(name: str, value, display: bool = False) -> None:
    """Keep ``value`` under ``name`` for the text (``{glue:text}`` in the book, ``glued`` here)."""
    _GLUED[name] = value
    if _myst_glue is not None:
        _myst_glue(name, value, display=display)
    elif display:
        from IPython.display import display as show  # deferred: only in a notebook

        show(value)


def glued(key: str) -> _Text:
    """The text of a glued value, ``"name"`` or ``"name:.2f"`` as in ``{glue:text}``; until the
    cell that computes it has run, a placeholder saying so."""
    name, _, spec = key.partition(":")
    if name not in _GLUED:
        return _Text(f"[{name}: run the cell above]")
    return _Text(format(_GLUED[name], spec))


def checking_the_text() -> bool:
    """Whether this run backs the published text: the reference solutions are running."""
    return backend() == "solutions"


def claim(holds: bool, sentence: str) -> None:
    """The text states ``sentence`` of this run: with the reference solutions (the book's build)
    a run that contradicts it stops; with a learner's code it is a note."""
    if not holds:
        if checking_the_text():
            raise AssertionError(f"the text says: {sentence}; this run contradicts it")
        print(f"note: the text says {sentence}, which your run contradicts")
