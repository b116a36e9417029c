"""Typed sentences: the grader's words, the learner's words and a case's values, told apart in
every string that reaches a learner, and one renderer for every output.

A sentence the grader says is a template of its own, filled with grader facts (an exercise id,
a case's name, a shape, a dtype, a feature, a count) and with two other kinds of part, each
marked where it is put in, so that the marks travel with the text through f-strings, joins and
the JSON reports a batch reads back:

* a learner slot, :func:`slot`: text the learner's code chose (an exception's message, its
  type's name, a dict key it returned, a line of its source). Inert from the start
  (:func:`autograder.inert.inert`, which also escapes any mark the learner sends), and shown by
  the renderer only within the learner's budget for that output, measured in BYTES of UTF-8
  after the output's own escaping (a CJK character is 3 bytes, an ``&amp;`` 5);
* a value, :func:`value`: a number or an index the grader computed on a case's data (what the
  learner's output holds there, what the reference's holds). Outputs of hidden cases (feedback
  files, Gradescope's visible output, the class summary) show ``…`` in its place; a practice
  case's self-check and the instructor's own terminal show it.

:func:`render` is the one way out: every writer of a learner-visible output (the terminal,
``check()``, feedback .md/.html, Gradescope's results.json, the class summary, progress) passes
the strings of a report through it with one :class:`Budget` per learner per output. Grader
words are shown as they are (escaped for the format); a slot is cut to the bytes the budget
has left; a value is hidden or shown by ``values``. A stray or unclosed mark is the learner's:
:func:`clean` escapes it, so no text ends a slot early.

    said("{name} has shape {shape}, expected {want}", name="the result", shape=(2, 3), want=(3, 2))
    f"raised {slot(type_name, 40)} at line {line}"    # a learner's words, in their slot
    f"the result is {value(got)}, expected {value(want)}"

Standard library only: the learner's own ``check()`` imports it.
"""
from __future__ import annotations

import re

from .inert import _HTML, _MARKDOWN, LearnerText, inert, spreadsheet

OPEN, CLOSE = "\x0e", "\x0f"  # a learner slot (SO, SI: inert() escapes both in learner text)
VALUE, END_VALUE = "\x10", "\x11"  # a case's value (DLE, DC1)
MARKS = OPEN + CLOSE + VALUE + END_VALUE
SLOT_CHARS = 2000  # characters a slot keeps where it is made (the renderer's budget cuts far shorter)
HIDDEN = "…"  # a value, where the cases are hidden
CUT = "…"
# One learner, one output: the learner's bytes an exercise may take, and the file.
EXERCISE_BYTES = 600
FILE_BYTES = 4096

_PART = re.compile("(\x0e[^\x0e\x0f\x10\x11]*\x0f|\x10[^\x0e\x0f\x10\x11]*\x11)")


def slot(text, cap: int = SLOT_CHARS) -> str:
    """``text`` of the learner's, marked as theirs: inert, at most ``cap`` characters."""
    text = inert(" ".join(str(text).split()) if type(text) is str else str(text))
    if len(text) > cap:
        text = text[:max(cap - 1, 0)] + CUT
    return OPEN + text + CLOSE


def value(x, digits: int = 6) -> str:
    """A value computed on a case's data (never the learner's text: a number, a bool, an index),
    marked so that outputs of hidden cases leave it out."""
    if isinstance(x, float) or type(x).__name__.startswith("float"):
        shown = f"{float(x):.{digits}g}"
    else:
        shown = inert(str(x))[:200]
    return VALUE + shown + END_VALUE


def said(template: str, **fields) -> str:
    """A grader sentence: ``template`` (the grader's literal) filled with ``fields``. A field
    may be a grader fact (int, float count, bool, a tuple of ints, a string the grader owns: an
    id, a case's name), an already marked part (``slot(...)``, ``value(...)``), or learner text
    (:class:`autograder.inert.LearnerText`), which becomes a slot."""
    filled = {}
    for key, x in fields.items():
        if isinstance(x, LearnerText):
            x = slot(x._text)
        elif isinstance(x, tuple):
            x = "(" + ", ".join(str(int(v)) for v in x) + ("," if len(x) == 1 else "") + ")"
        filled[key] = x
    return template.format(**filled)


def clean(text, *, newlines: bool = False) -> str:
    """``text`` inert, keeping the marks of well-formed parts: a mark outside one (a learner's
    stray ``\\x0f`` that would end a slot early) is escaped like any other control."""
    text = text if type(text) is str else str(text)
    if not any(m in text for m in MARKS):
        return inert(text, newlines=newlines)
    out = []
    for piece in _PART.split(text):
        if piece and piece[0] in (OPEN, VALUE) and _PART.fullmatch(piece):
            out.append(piece[0] + inert(piece[1:-1]) + piece[-1])
        else:
            out.append(inert(piece, newlines=newlines))
    return "".join(out)


def plain(text) -> str:
    """``text`` with its marks dropped and values shown: for code that reads a sentence (a
    regex over it), never for an output."""
    return str(text).translate({ord(m): None for m in MARKS})


def has_marks(text) -> bool:
    return any(m in str(text) for m in MARKS)


class Budget:
    """The bytes of learner text one learner has left in one output: ``file_bytes`` in all, at
    most ``exercise_bytes`` of them in any one exercise (:meth:`exercise` starts the next)."""

    def __init__(self, file_bytes: int = FILE_BYTES, exercise_bytes: int = EXERCISE_BYTES):
        self.left = file_bytes
        self.exercise_bytes = exercise_bytes
        self.exercise_left = exercise_bytes
        self.spent = 0

    def exercise(self) -> "Budget":
        self.exercise_left = self.exercise_bytes
        return self

    def grant(self) -> int:
        return max(0, min(self.left, self.exercise_left))

    def spend(self, n: int) -> None:
        self.left -= n
        self.exercise_left -= n
        self.spent += n


# How each format escapes one character of text (grader words and slots alike).
def _text(c: str) -> str:
    return c


def _markdown(c: str) -> str:
    c = _MARKDOWN.sub(r"\\\1", c)
    return _HTML.get(c, c)


def _html(c: str) -> str:
    return "&#x27;" if c == "'" else _HTML.get(c, c)


ESCAPE = {"terminal": _text, "text": _text, "json": _text, "markdown": _markdown, "html": _html, "csv": _text}


def _escaped(text: str, fmt: str) -> str:
    if fmt == "markdown":
        return "".join(_HTML.get(c, c) for c in _MARKDOWN.sub(r"\\\1", text))
    if fmt == "html":
        return "".join(_html(c) for c in text)
    return text


def cut_bytes(text: str, fmt: str, limit: int) -> tuple[str, int]:
    """``text`` escaped for ``fmt`` and cut to at most ``limit`` bytes of UTF-8 (the cut's "…"
    counted), never in the middle of a character or of an escape; and the bytes it takes."""
    escaped = _escaped(text, fmt)
    size = len(escaped.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return escaped, size
    room = limit - len(CUT.encode())
    if room <= 0:
        return "", 0
    escape = ESCAPE[fmt]
    out, used = [], 0
    for c in text:
        e = escape(c)
        n = len(e.encode("utf-8", "surrogatepass"))
        if used + n > room:
            break
        out.append(e)
        used += n
    return "".join(out) + CUT, used + len(CUT.encode())


def render(text, fmt: str, budget: Budget | None = None, *, values: bool = False) -> str:
    """A string of the grader's, as ``fmt`` (``terminal``, ``text``, ``json``, ``markdown``,
    ``html``, ``csv``) shows it: grader words escaped for the format, each learner slot cut to
    what ``budget`` grants (in bytes, after escaping; no budget: the slot's own cap), each value
    shown where ``values`` else ``…``. Every character that is not grader words is a slot's:
    the text's marks are checked first (:func:`clean`)."""
    if fmt not in ESCAPE:
        raise ValueError(f"no such format: {fmt!r}")
    if isinstance(text, LearnerText):
        text = slot(text._text)
    elif type(text) is not str:
        raise TypeError(f"render takes the grader's str or LearnerText, not {type(text).__name__}")
    text = clean(text, newlines=True)
    out = []
    for piece in _PART.split(text):
        if not piece:
            continue
        if piece[0] == OPEN:
            body = piece[1:-1]
            if budget is None:
                out.append(_escaped(body, fmt))
                continue
            shown, size = cut_bytes(body, fmt, budget.grant())
            budget.spend(size)
            out.append(shown)
        elif piece[0] == VALUE:
            out.append(_escaped(piece[1:-1], fmt) if values else HIDDEN)
        else:
            out.append(_escaped(piece, fmt))
    shown = "".join(out)
    if fmt in ("markdown", "html"):  # a newline would end a table row
        shown = " ".join(shown.split())
    return spreadsheet(shown) if fmt == "csv" else shown


def learner_bytes(text) -> int:
    """The bytes of UTF-8 in ``text``'s learner slots (what a budget counts before escaping)."""
    return sum(len(p[1:-1].encode("utf-8", "surrogatepass")) for p in _PART.split(clean(text, newlines=True))
               if p and p[0] == OPEN)
