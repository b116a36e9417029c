"""The book without its solutions: what the learner release (``release.py``) ships of each chapter.

Every ``{solution}`` (and any hint that holds a code block) is replaced by a note, in MyST
markdown, in notebooks (outputs cleared too, glued numbers as ``{eval}`` for JupyterLab) and in
the built site's copies of the chapters;
a built page that still renders a solution is found by :func:`shows_solution`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

SOLUTION_NOTE = "*Solution: published after the deadline.*\n"
HINT_NOTE = "*Hint: its code is published after the deadline.*\n"

_DIRECTIVE = re.compile(r"^ {0,3}(?P<fence>`{3,}|:{3,})\s*\{(?P<name>[\w-]+)\}(?P<argument>.*)$")
_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _closing(lines: list[str], start: int, fence: str) -> int:
    """The index of the line that closes the fence opened at ``start`` (or the last line)."""
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    return next((i for i in range(start + 1, len(lines)) if closing.match(lines[i])), len(lines) - 1)


def _is_hint(name: str, argument: str, body: list[str]) -> bool:
    titled = name == "admonition" and "hint" in argument.lower()
    classed = any(re.match(r"\s*:class:.*\bhint\b", line) for line in body)
    return name == "hint" or titled or classed


def strip_markdown(text: str, gated: bool = False) -> tuple[str, int, bool]:
    """``text`` with every solution replaced by a note: ``{solution}`` directives (backtick and
    colon fences), everything between ``{solution-start}`` and ``{solution-end}`` (``gated``
    carries that state across cells), and hints that hold a code block (inline code stays: a
    hint names the tool, the solution writes the code). Returns the text, the number of
    solutions removed and whether a gated solution is still open."""
    lines, out, removed, i = text.splitlines(keepends=True), [], 0, 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        name = match.group("name") if match else None
        if gated:
            if name == "solution-end":
                gated = False
                i = _closing(lines, i, match.group("fence"))
            i += 1
            continue
        if name is None:
            out.append(lines[i])
            i += 1
            continue
        end = _closing(lines, i, match.group("fence"))
        body = lines[i + 1:end]
        if name == "solution":
            out.append(SOLUTION_NOTE)
            removed += 1
        elif name == "solution-start":
            out.append(SOLUTION_NOTE)
            removed, gated = removed + 1, True
        elif _is_hint(name, match.group("argument"), body) and any(_CODE_FENCE.match(line) for line in body):
            out.append(HINT_NOTE)
        else:
            out.extend(lines[i:end + 1])
        i = end + 1
    return "".join(out), removed, gated


def solution_blocks(text: str) -> list[tuple[str, str]]:
    """The ``(argument, body)`` of every ``{solution}`` directive of a markdown text (what the
    book shows; the argument is the label of its exercise)."""
    lines, blocks, i = text.splitlines(keepends=True), [], 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        end = _closing(lines, i, match.group("fence")) if match else i
        if match and match.group("name") == "solution":
            blocks.append((match.group("argument").strip(), "".join(lines[i + 1:end])))
        i = end + 1
    return blocks


# ``{glue:text}`name:.2f``` (myst-nb, the book's build) as ``{eval}`glued("name:.2f")```: jupyterlab-myst
# renders ``{eval}`` by asking the kernel, where the chapter's glue() kept the value (lab/page.py).
# A key from another notebook (``other.ipynb::name``) is not in this kernel: left as it is.
_GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([^`:]+(?::[^`:]*)?)`")


def glue_as_eval(text: str) -> str:
    """A markdown cell's glue roles as jupyterlab-myst's ``{eval}`` of ``glued(...)``."""
    return _GLUE_ROLE.sub(lambda m: '{eval}`glued("%s")`' % m.group(1), text)


def strip_notebook(notebook: dict) -> int:
    """Strip the solutions of every markdown cell and every output, in place; the count removed."""
    cells, removed, gated = [], 0, False
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            if gated:  # a cell inside a gated solution
                continue
            cell["outputs"], cell["execution_count"] = [], None  # outputs of the author's run
            if "remove-cell" in cell.get("metadata", {}).get("tags", []):  # the book's, not the lesson's:
                cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True  # folded in JupyterLab
        else:
            source = "".join(cell["source"])
            text, count, gated = strip_markdown(source, gated)
            text = glue_as_eval(text)
            removed += count
            if text != source:
                cell["source"] = text
                cell.pop("attachments", None)
        cells.append(cell)
    if gated:
        raise ValueError("a {solution-start} has no {solution-end}")
    notebook["cells"] = cells
    return removed


def strip_file(path: Path) -> int:
    """Strip one shipped book file in place (notebooks, MyST markdown); the solutions removed."""
    if path.suffix == ".ipynb":
        notebook = json.loads(path.read_text())
        removed = strip_notebook(notebook)
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        return removed
    if path.suffix == ".md" or path.name.endswith((".md.txt", ".ipynb.txt")):
        text, removed, gated = strip_markdown(path.read_text())
        if gated:
            raise ValueError(f"{path}: a {{solution-start}} has no {{solution-end}}")
        path.write_text(text)
        return removed
    return 0


_SOLUTION_NODE = re.compile(r"""class="[^"]*\bsolution\b""")


def shows_solution(html: str) -> bool:
    """Whether a built page renders a solution (a book built with its solutions shown)."""
    return bool(_SOLUTION_NODE.search(html))
