"""Learner-written text made inert, for every place the grader shows it.

An exception's message, a type's name, a file's name inside a submission, a string the
learner's code returned: all of it is written by the learner, and all of it reaches an
instructor's terminal, a JSON report, Markdown and HTML feedback or a Gradescope page. There
it must read as the characters it is, never act: no escape sequence that clears a screen,
hides text, writes the clipboard (OSC 52) or makes a hyperlink; no carriage return that
overwrites a line; no bidi override that reorders one; no markup that a writer renders.

:func:`inert` is applied where learner text enters a result (``spec.CaseError``,
``spec.CaseResult``, ``report.Report``), so every writer inherits it; what stays for each
writer is its own markup: rich's (``report.py`` prints ``Text`` objects, never markup) and
Markdown's (:func:`markdown`). :func:`excerpt` is the short, fixed-length cut of learner text
that an immediately visible output may hold.

The class files of a batch go one step further: they receive learner text only as a
:class:`LearnerText`, which knows where it came from, has no plain ``str()``, and renders only
through an escaper per format (terminal, Markdown, HTML, a CSV cell a spreadsheet opens, JSON),
each cut to what a :class:`Budget` grants; their writers call :func:`learner` on it, which
refuses a plain ``str``. So a raw string of a learner's cannot reach those files unnoticed.
Budgets count BYTES of UTF-8 after the format's escaping (a CJK character costs 3), never
characters: the information a learner's text carries is bounded whatever its alphabet. The
grader's own sentences, with the learner's words in slots inside them, are rendered by
``said.py`` under the same kind of budget.
"""
from __future__ import annotations

import re
import unicodedata

# Categories that never print as themselves: controls (C0, DEL, C1), format characters (the
# bidi overrides and isolates, zero-width characters, Unicode tags), line and paragraph
# separators, surrogates (undecodable bytes).
_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
_NAMES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(char: str) -> str:
    if char in _NAMES:
        return _NAMES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in _HIDDEN


# Fast path: printable ASCII (and a newline where kept) needs no look at each character.
_PLAIN = re.compile(r"[\x20-\x7e]*")
_PLAIN_LINES = re.compile(r"[\x20-\x7e\n]*")


def inert(text, *, newlines: bool = False) -> str:
    """``text`` with every character that does not print as itself shown as an escape
    (ESC as ``\\x1b``, U+202E as ``\\u202e``, a newline as ``\\n`` unless ``newlines``)."""
    text = text if type(text) is str else str(text)
    if (_PLAIN_LINES if newlines else _PLAIN).fullmatch(text):
        return text
    return "".join(c if not _hidden(c) or (newlines and c == "\n") else _shown(c) for c in text)


def excerpt(text, limit: int) -> str:
    """At most ``limit`` characters of inert ``text``, cut with "…" (which counts)."""
    text = inert(text)
    if len(text) <= limit:
        return text
    return text[:max(0, limit - 1)] + "…" if limit > 0 else ""


# Characters with a meaning in Markdown (CommonMark) or in the HTML it may carry.
# Escaped wherever learner text sits inside a line: what opens emphasis, code, a link or an
# image, a table cell or raw HTML there. Line-start syntax (#, -, +, 1.) needs no escape, as
# the text never starts a line, and a "(" makes no link without the "]" before it.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]!|~])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


def markdown(text) -> str:
    """Inert ``text`` for a Markdown file, read as literal text: every Markdown-active
    character backslash-escaped, ``& < > "`` as entities, whitespace runs as one space (a
    newline would end a table row)."""
    text = inert(" ".join(str(text).split()))
    text = _MARKDOWN.sub(r"\\\1", text)
    return "".join(_HTML.get(c, c) for c in text)


def spreadsheet(text) -> str:
    """Inert ``text`` for a CSV cell that a spreadsheet opens: a cell starting with ``= + - @``
    (or a tab or carriage return before one) is a formula to Excel, LibreOffice and Google
    Sheets, so it gains a leading ``'`` (OWASP's advice on CSV injection), and control
    characters are escaped. A number is left as it is."""
    text = inert(str(text))
    try:
        float(text)
        return text
    except ValueError:
        return "'" + text if text[:1] in ("=", "+", "-", "@") else text


# ------------------------------------------------------------------- one way out for learner text

class LearnerText:
    """A string a learner controls (a file's or folder's name, an id or a name in an export, an
    exception's words, a note), and where it came from (``origin``). It has no plain ``str()``:
    a writer gets its characters only through one of the renderings below, each inert for its
    format and cut to the bytes of UTF-8 a :class:`Budget` grants; the class writers refuse a plain
    ``str`` where learner text belongs (:func:`learner`), so a raw string cannot reach a file."""

    __slots__ = ("_text", "origin")

    def __init__(self, text, origin: str):
        self._text = text._text if isinstance(text, LearnerText) else ("" if text is None else str(text))
        self.origin = origin

    def __str__(self):
        raise TypeError(f"learner text ({self.origin}) is shown only through a rendering: "
                        ".terminal(), .markdown(), .html(), .csv() or .json()")

    __format__ = lambda self, spec: self.__str__()  # noqa: E731  (an f-string is str() too)

    def __repr__(self) -> str:
        return f"LearnerText({inert(self._text[:40])!r}, {self.origin!r})"

    def __len__(self) -> int:
        return len(self._text)

    def __bool__(self) -> bool:
        return bool(self._text)

    def __eq__(self, other) -> bool:
        return isinstance(other, LearnerText) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)

    def lines(self) -> list[LearnerText]:
        return [LearnerText(line, self.origin) for line in self._text.splitlines()]

    def _cut(self, budget: Budget | None, cap: int | None, fmt: str = "text") -> str:
        """Inert, escaped for ``fmt``, and cut to the BYTES of UTF-8 that ``cap`` and ``budget``
        grant (after the escaping: a CJK character costs 3, an ``&amp;`` 5)."""
        from .said import cut_bytes  # deferred: said imports this module (its escapers) at its top

        text = inert(" ".join(self._text.split()))
        limits = [x for x in (cap, budget.left if budget else None) if x is not None]
        shown, size = cut_bytes(text, fmt, max(0, min(limits)) if limits else 1 << 62)
        if budget is not None:
            budget.left -= size
        return shown

    def terminal(self, budget: Budget | None = None, cap: int | None = None) -> str:
        """For a terminal (rich prints it with ``markup=False``): controls shown as escapes."""
        return self._cut(budget, cap)

    def json(self, budget: Budget | None = None, cap: int | None = None) -> str:
        return self._cut(budget, cap)

    def markdown(self, budget: Budget | None = None, cap: int | None = None) -> str:
        return self._cut(budget, cap, "markdown")

    def html(self, budget: Budget | None = None, cap: int | None = None) -> str:
        return self._cut(budget, cap, "html")

    def csv(self, budget: Budget | None = None, cap: int | None = None) -> str:
        """A CSV cell a spreadsheet opens as text: :func:`spreadsheet`, numbers left as they are."""
        return spreadsheet(self._cut(budget, cap))


class Budget:
    """The bytes of learner text (UTF-8, after the output's escaping) one output of one learner has left."""

    def __init__(self, chars: int):
        self.left = chars


def learner(value) -> LearnerText:
    """``value`` where a writer puts learner text: a :class:`LearnerText`, never a plain ``str``
    (TypeError: the writer was handed learner text that did not say so)."""
    if not isinstance(value, LearnerText):
        raise TypeError(f"a writer was handed {type(value).__name__} {inert(str(value))[:40]!r} where "
                        "learner text belongs: wrap it in LearnerText at the place it was read")
    return value
