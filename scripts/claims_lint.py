"""The claims lint: every sentence of a chapter's prose that makes a checkable claim is backed.

A sentence *claims* when, outside its inline code and maths, it has a number, a comparison word
(more, less, faster, above, below, ...) or a universal word (every, never, always, only, all,
none, at most, cannot). Each such sentence of a markdown cell of ``book/0N_*.ipynb`` must be

* **glued**: it pastes a number a cell computed (``{glue:text}`...```), or
* **cited**: it names its source (``{cite:t}`...```, ``{cite:p}`...```), or
* **listed** in ``book/claims.yml``: the chapter, the sentence quoted, and what supports it
  (``support``: the cell id that computes or asserts it, or the test or benchmark that checks it;
  ``unreviewed`` for a sentence nobody has yet checked against evidence: listed, not backed).

``tests/test_claims_lint.py`` fails on a claiming sentence that is none of these, and on a
register entry whose quote no longer appears in its chapter (a sentence edited since it was
checked). ``python scripts/claims_lint.py`` prints the counts per chapter;
``--add-unlisted`` appends every unlisted claim to the register as ``unreviewed``.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
REGISTER = BOOK / "claims.yml"
UNREVIEWED = "unreviewed"

NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
COMPARISON = re.compile(r"\b(more|less|fewer|larger|smaller|greater|higher|lower|faster|slower|better|worse|"
                        r"than|above|below|exceeds?|most|least)\b", re.IGNORECASE)
UNIVERSAL = re.compile(r"\b(every|never|always|only|all|none|at most|cannot)\b", re.IGNORECASE)
GLUE = re.compile(r"\{glue(?::\w+)?\}`[^`]+`")
CITE = re.compile(r"\{cite(?::\w+)?\}`[^`]+`")

FENCE = re.compile(r"^(`{3,}|~{3,}|:{3,})(.*)$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
SENTENCE_END = re.compile(r"(?<=[.!?])[)\"']?\s+(?=[A-Z(`*{$\[\"'])")


def _prose_blocks(text):
    """The paragraphs and list items of a markdown cell, code blocks and display maths left out;
    directive blocks (exercise, admonition, solution) keep their prose, without their options."""
    blocks, current, fence, directives = [], [], None, []
    in_math = False

    def flush():
        if current:
            blocks.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and stripped.strip("`~:") == "":
                fence = None
            continue
        match = FENCE.match(stripped)
        if match:
            flush()
            info = match.group(2).strip()
            if not info and directives and match.group(1) == directives[-1]:
                directives.pop()  # a directive's closing line
            elif info.startswith("{") and not info.startswith(("{code", "{math")):
                directives.append(match.group(1))  # a directive's opening line: its body is prose
            else:
                fence = match.group(1)  # code: skip to its end
            continue
        if stripped.startswith("$$"):
            flush()
            if not (stripped.endswith("$$") and len(stripped) > 2):
                in_math = not in_math
            continue
        if in_math:
            continue
        if not stripped or (stripped.startswith("(") and stripped.endswith(")=")):  # a blank line, a label
            flush()
            continue
        if stripped.startswith((":label:", ":class:", "**Difficulty**")):
            flush()
            continue
        if stripped.startswith("|") or stripped.startswith("#"):
            flush()
            blocks.append(stripped.lstrip("#").strip())  # a table row or a heading: a block of its own
            continue
        if LIST_ITEM.match(line):
            flush()
            line = LIST_ITEM.sub("", line)
        current.append(line.strip())
    flush()
    return blocks


def sentences(text):
    """The sentences of a markdown cell's prose, whitespace collapsed."""
    out = []
    for block in _prose_blocks(text):
        out += [" ".join(s.split()) for s in SENTENCE_END.split(block) if s.strip()]
    return out


def _bare(sentence):
    """The sentence without inline code, inline maths, glue and citation roles: what is left is
    what a reader takes as words."""
    s = GLUE.sub(" ", sentence)
    s = CITE.sub(" ", s)
    s = re.sub(r"`[^`]*`", " ", s)
    s = re.sub(r"\$[^$]*\$", " ", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # a link's text, not its target
    return s


def triggers(sentence):
    """What makes ``sentence`` a claim: a list of "number", "comparison", "universal" (maths
    counts as a number when it holds digits)."""
    bare = _bare(sentence)
    found = []
    maths = " ".join(re.findall(r"\$([^$]*)\$", sentence))
    if NUMBER.search(bare) or NUMBER.search(maths):
        found.append("number")
    if COMPARISON.search(bare):
        found.append("comparison")
    if UNIVERSAL.search(bare):
        found.append("universal")
    return found


def chapters():
    return sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


def claims(path):
    """``[(sentence, triggers, how)]`` of a chapter, ``how`` "glue", "cite" or None."""
    out = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for sentence in sentences("".join(cell["source"])):
            found = triggers(sentence)
            if not found:
                continue
            how = "glue" if GLUE.search(sentence) else "cite" if CITE.search(sentence) else None
            out.append((sentence, found, how))
    return out


def load_register(path=REGISTER):
    entries = yaml.safe_load(path.read_text()) if path.exists() else None
    entries = entries or []
    for entry in entries:
        missing = {"chapter", "quote", "support"} - set(entry)
        if missing:
            raise ValueError(f"{path.name}: an entry lacks {sorted(missing)}: {entry}")
        if not str(entry["support"]).strip():
            raise ValueError(f"{path.name}: an empty support for {entry['quote'][:60]!r}")
    return entries


def check(register=None, paths=None):
    """``(unlisted, stale, counts)``: claiming sentences neither glued, cited nor listed; entries
    whose quote is not a sentence of their chapter any more; and per chapter the counts.
    ``paths``: the chapters (every one by default), each read as its own name's chapter."""
    register = load_register() if register is None else register
    paths = chapters() if paths is None else list(paths)
    listed = {}
    for entry in register:
        listed.setdefault(entry["chapter"], {})[" ".join(entry["quote"].split())] = str(entry["support"])
    unlisted, stale, counts = [], [], {}
    for path in paths:
        chapter_listed = listed.get(path.name, {})
        found = claims(path)
        present = {sentence for sentence, _, _ in found}
        count = Counter()
        for sentence, _, how in found:
            count["claims"] += 1
            if how:
                count[how] += 1
            elif sentence in chapter_listed:
                support = chapter_listed[sentence]
                count["unreviewed" if support == UNREVIEWED else "test" if "tests/" in support or "bench/" in support else "cell"] += 1
            else:
                unlisted.append((path.name, sentence))
        stale += [(path.name, quote) for quote in chapter_listed if quote not in present]
        counts[path.name] = count
    names = {path.name for path in paths}
    stale += [(chapter, quote) for chapter, quotes in listed.items() if chapter not in names for quote in quotes]
    return unlisted, stale, counts


def _yaml_quote(text):
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def main(argv):
    unlisted, stale, counts = check()
    if "--add-unlisted" in argv and unlisted:
        with REGISTER.open("a") as out:
            for chapter, sentence in unlisted:
                out.write(f"- chapter: {chapter}\n  quote: {_yaml_quote(sentence)}\n  support: {UNREVIEWED}\n")
        print(f"added {len(unlisted)} unlisted claims as {UNREVIEWED}")
        unlisted, stale, counts = check()
    print(f"{'chapter':<28}{'claims':>7}{'glue':>6}{'cite':>6}{'test':>6}{'cell':>6}{'unrev.':>8}")
    for name, c in counts.items():
        print(f"{name:<28}{c['claims']:>7}{c['glue']:>6}{c['cite']:>6}{c['test']:>6}{c['cell']:>6}{c['unreviewed']:>8}")
    for chapter, sentence in unlisted:
        print(f"UNLISTED {chapter}: {sentence}")
    for chapter, quote in stale:
        print(f"STALE {chapter}: {quote}")
    return 1 if unlisted or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
