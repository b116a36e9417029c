"""The claims lint: every sentence a reader reads that makes a checkable claim is listed and backed.

What a reader reads: the markdown of ``book/0N_*.ipynb`` (prose, headings, captions of figures
and tables, exercises and hints), the comments of the code cells, the text the code cells print
or show (``print`` strings, ``caption=`` and ``title=`` arguments, the sentences of ``claim()``),
and the guides (``book/guides/*.md``). A sentence *claims* when, outside its inline code and
maths, it has a number, a comparison word (more, less, faster, above, below, ...) or a universal
word (every, never, always, only, all, none, at most, cannot). A glued number or a citation does
not exempt the words around it: every claiming sentence is listed in ``book/claims.yml`` with

* ``chapter`` (the notebook, or ``guides/<name>.md``) and ``quote`` (whitespace collapsed; a
  benchmark figure that ``scripts/bench_docs.py`` writes is read as ``{bench}``, so a new record
  does not make the entry stale);
* ``support``: what asserts it. It counts as *backed* when it names a test that exists
  (``tests/<file>.py::<test>``), a cell of the chapter whose code (or its ``-text`` tie cell)
  asserts (``assert``/``claim``), or a benchmark script with a record in ``bench/results/``;
  anything else, free text included, counts as ``unreviewed``: listed, not backed;
* for a sentence that cites (``{cite:t}``/``{cite:p}``), ``passage``: the paper's key, the section
  or page, and the words the sentence rests on, so that a reviewer can compare the two; a cited
  sentence without one counts as unreviewed whatever its support. A sentence that only reports
  what its source says may give ``support: passage``: the quoted words are then its support.

``tests/test_claims_lint.py`` fails on a claiming sentence that is not listed, on an entry whose
quote is no longer read anywhere (a sentence edited since it was checked), and on a chapter whose
unreviewed count rises; it reports the unreviewed count per chapter. ``python
scripts/claims_lint.py`` prints the counts; ``--add-unlisted`` appends every unlisted claim to the
register as ``unreviewed``; ``--sync`` also drops the stale entries that were only ``unreviewed``.
"""
from __future__ import annotations

import ast
import io
import json
import re
import sys
import tokenize
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
UNIVERSAL = re.compile(r"\b(every|never|always|only|all|none|any|at most|cannot|needs?)\b", re.IGNORECASE)
NUMBER_WORD = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twice|half|"
                         r"double|dozens?|hundreds?|thousands?|millions?)\b", re.IGNORECASE)
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


BENCH_REGION = re.compile(r"<!-- bench [^>]*-->.*?<!-- /bench -->", re.S)
BENCH = "{bench}"  # a figure scripts/bench_docs.py writes from a record (tests/test_bench_records.py checks it)


def without_figures(text):
    """Text with each benchmark region (a figure written from a record) replaced by ``{bench}``,
    so that a sentence's quote stays the same when a record's figure changes; its words do not
    escape the lint."""
    return BENCH_REGION.sub(BENCH, text)


def sentences(text):
    """The sentences of a markdown cell's prose, whitespace collapsed, benchmark figures as ``{bench}``."""
    text = without_figures(text)
    out = []
    for block in _prose_blocks(text):
        out += [" ".join(s.split()) for s in SENTENCE_END.split(block) if s.strip()]
    return out


def _bare(sentence):
    """The sentence without inline code, inline maths, glue and citation roles: what is left is
    what a reader takes as words."""
    s = GLUE.sub(" ", sentence).replace(BENCH, " ")
    s = CITE.sub(" ", s)
    s = re.sub(r"`[^`]*`", " ", s)
    s = re.sub(r"\$[^$]*\$", " ", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # a link's text, not its target
    return s


def triggers(sentence):
    """What makes ``sentence`` a claim: a list of "number" (digits, in maths too, or a number
    word), "comparison", "universal", "citation"."""
    bare = _bare(sentence)
    found = []
    maths = " ".join(re.findall(r"\$([^$]*)\$", sentence))
    if NUMBER.search(bare) or NUMBER.search(maths) or NUMBER_WORD.search(bare):
        found.append("number")
    if COMPARISON.search(bare):
        found.append("comparison")
    if UNIVERSAL.search(bare):
        found.append("universal")
    if CITE.search(sentence):
        found.append("citation")  # what a paper says is a claim too: its entry quotes the passage
    return found


def chapters():
    return sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


def guides():
    return sorted((BOOK / "guides").glob("*.md"))


def documents():
    """Everything the lint reads: the chapters, then the guides."""
    return chapters() + guides()


def name_of(path):
    """The register's name of a document: ``03_heads.ipynb``, ``guides/learner.md``."""
    path = Path(path)
    return f"guides/{path.name}" if path.suffix == ".md" else path.name


VALUE = "\u27e8value\u27e9"  # where an f-string puts a computed value: not a typed number
SHOWN_KEYWORDS = {"caption", "title", "label", "xlabel", "ylabel"}
SHOWING_CALLS = {"print", "claim", "set_title", "suptitle", "set_xlabel", "set_ylabel", "Markdown", "HTML"}


def _string(node):
    """The text of a string constant or f-string (computed parts as a marker), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else VALUE for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left), _string(node.right)
        return left + right if left is not None and right is not None else None
    return None


def code_texts(source):
    """What a reader reads of a code cell: its comments (a run of full-line comments is one
    text) and the strings it prints or shows (``print``, ``claim``'s sentence, captions, titles)."""
    texts, run = [], []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = []
    last_line = None
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        text = token.string.lstrip("#").strip()
        full_line = token.line.strip().startswith("#")
        if full_line and run and last_line == token.start[0] - 1:
            run.append(text)
        else:
            if run:
                texts.append(" ".join(run))
            run = [text]
        if not full_line:
            texts.append(" ".join(run))
            run = []
        last_line = token.start[0]
    if run:
        texts.append(" ".join(run))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return texts
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        shown = list(node.args) if name in SHOWING_CALLS else []
        shown += [k.value for k in node.keywords if k.arg in SHOWN_KEYWORDS]
        for arg in shown:
            text = _string(arg)
            if text and re.search(r"[A-Za-z]{3}", text):
                texts.append(text)
    return texts


WORD = re.compile(r"(?<![\w.(\[])[A-Za-z][a-z]{2,}(?![\w(\[])")  # a word, not an identifier or a call


def _text_sentences(text):
    """The sentences of a comment or a printed string that read as words: at least four words
    outside inline code (a shape like ``(Lk, d_k) = (3, 2)`` or a label is not a sentence)."""
    out = []
    for block in text.split("\n"):
        for s in SENTENCE_END.split(block):
            s = " ".join(s.split())
            words = [w for w in WORD.findall(re.sub(r"`[^`]*`", " ", s)) if "_" not in w]
            if len(words) >= 4:
                out.append(s)
    return out


def _bare_of_values(sentence):
    return sentence.replace(VALUE, " ")


def claims(path):
    """``[(sentence, triggers, how)]`` of a document, ``how`` "glue", "cite" or None (what the
    sentence also does; neither exempts it)."""
    path = Path(path)
    found = []
    if path.suffix == ".md":
        found += sentences(path.read_text())
    else:
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                found += sentences(source)
            elif cell["cell_type"] == "code":
                for text in code_texts(source):
                    found += _text_sentences(text)
    out, seen = [], set()
    for sentence in found:
        triggered = triggers(_bare_of_values(sentence))
        if not triggered or sentence in seen:
            continue
        seen.add(sentence)
        how = "glue" if GLUE.search(sentence) else "cite" if CITE.search(sentence) else None
        out.append((sentence, triggered, how))
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


TEST_NODE = re.compile(r"((?:tests|bench)/[\w/]+\.py)(?:::(\w+))?")
CELL_ID = re.compile(r"\bcells? ([0-9a-f]{8}|[a-z0-9]+-[a-z0-9-]+)\b")
ASSERTS = re.compile(r"^\s*(?:assert\b|claim\()", re.M)


def _asserting_cells():
    """Ids of the chapters' code cells that assert (``assert`` or ``claim(``), their own or in
    their ``-text`` tie cell."""
    out = set()
    for path in chapters():
        cells = json.loads(path.read_text())["cells"]
        by_id = {c.get("id"): "".join(c["source"]) for c in cells if c["cell_type"] == "code"}
        for cid, source in by_id.items():
            if ASSERTS.search(source) or ASSERTS.search(by_id.get(f"{cid}-text", "")):
                out.add(cid)
    return out


def kind_of_support(support, asserting=None):
    """``"test"``, ``"cell"``, ``"bench"`` or ``"unreviewed"``: what a support names that can fail.

    A test counts when its file and function exist; a cell when it asserts; a benchmark when its
    script has a record (``bench/results/<name>.json``). Free text, a cell that asserts nothing,
    a missing test: unreviewed."""
    support = str(support)
    if support.strip() == UNREVIEWED:
        return UNREVIEWED
    for file, function in TEST_NODE.findall(support):
        target = ROOT / file
        if not target.exists():
            continue
        if file.startswith("tests/") and function and re.search(rf"^def {function}\b", target.read_text(), re.M):
            return "test"
        if file.startswith("bench/") and (ROOT / "bench" / "results" / f"{target.stem}.json").exists():
            return "bench"
    asserting = _asserting_cells() if asserting is None else asserting
    if any(cell in asserting for cell in CELL_ID.findall(support)):
        return "cell"
    return UNREVIEWED


def plants_negations(file):
    """Whether a test module shows its checks failing on planted breaks: it defines ``PLANTED`` and a
    test that runs each of them expecting the check to fail (tests/test_claims_evidence.py,
    tests/test_chapter_properties.py)."""
    target = ROOT / file
    text = target.read_text() if target.exists() else ""
    return bool(re.search(r"^PLANTED\b", text, re.M) and re.search(r"^def test_\w*negation\w*\(", text, re.M))


def planted(support):
    """Whether the first test a support names lives in a module that plants negations."""
    tests = [file for file, function in TEST_NODE.findall(str(support)) if file.startswith("tests/") and function]
    return bool(tests) and plants_negations(tests[0])


def check(register=None, paths=None):
    """``(unlisted, stale, counts)``: claiming sentences not listed; entries whose quote is not a
    claiming sentence of their document any more; and per document the counts: ``claims``,
    ``glue``, ``cite`` (what the sentences also do), and how the listed ones are backed: ``test``,
    ``cell``, ``bench`` or ``unreviewed`` (a cited sentence without its ``passage`` included).
    ``paths``: the documents (every chapter and guide by default)."""
    register = load_register() if register is None else register
    paths = documents() if paths is None else list(paths)
    asserting = _asserting_cells()
    listed = {}
    for entry in register:
        listed.setdefault(entry["chapter"], {})[" ".join(without_figures(entry["quote"]).split())] = entry
    unlisted, stale, counts = [], [], {}
    for path in paths:
        name = name_of(path)
        document_listed = listed.get(name, {})
        found = claims(path)
        present = {sentence for sentence, _, _ in found}
        count = Counter()
        for sentence, _, how in found:
            count["claims"] += 1
            if how:
                count[how] += 1
            entry = document_listed.get(sentence)
            if entry is None:
                unlisted.append((name, sentence))
                continue
            kind = kind_of_support(entry["support"], asserting)
            has_passage = bool(str(entry.get("passage", "")).strip())
            if how == "cite" and str(entry["support"]).strip() == "passage" and has_passage:
                kind = "passage"  # a sentence that only reports its source: the quoted words back it
            elif how == "cite" and not has_passage:
                kind = UNREVIEWED
            count[kind] += 1
            if kind == "test" and planted(entry["support"]):
                count["planted"] += 1  # of the tests: those whose module shows them failing on a planted break
        stale += [(name, quote) for quote in document_listed if quote not in present]
        counts[name] = count
    names = {name_of(path) for path in paths}
    stale += [(chapter, quote) for chapter, quotes in listed.items() if chapter not in names for quote in quotes]
    return unlisted, stale, counts


def _yaml_quote(text):
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def drop_stale_unreviewed(stale, path=REGISTER):
    """Remove the register's stale entries whose support is ``unreviewed`` (nothing checked is lost);
    stale entries with a support stay, to be pointed at the edited sentence by hand. Returns the count."""
    stale = set(stale)
    text = path.read_text()
    head, _, body = text.partition("\n- chapter: ")
    chunks = ["- chapter: " + c for c in ("\n- chapter: " + body).split("\n- chapter: ")[1:]] if body else []
    kept, dropped = [], 0
    for chunk in chunks:
        entry = (yaml.safe_load(chunk) or [{}])[0]
        key = (entry.get("chapter"), " ".join(without_figures(str(entry.get("quote", ""))).split()))
        if key in stale and str(entry.get("support")).strip() == UNREVIEWED:
            dropped += 1
            continue
        kept.append(chunk.rstrip("\n"))
    path.write_text(head + "\n" + "\n".join(kept) + "\n")
    return dropped


def main(argv):
    unlisted, stale, counts = check()
    if "--sync" in argv:  # after editing prose: forget the unreviewed entries of sentences gone, list the new ones
        print(f"dropped {drop_stale_unreviewed(stale)} stale unreviewed entries")
        argv = [*argv, "--add-unlisted"]
        unlisted, stale, counts = check()
    if "--add-unlisted" in argv and unlisted:
        with REGISTER.open("a") as out:
            for chapter, sentence in unlisted:
                out.write(f"- chapter: {chapter}\n  quote: {_yaml_quote(sentence)}\n  support: {UNREVIEWED}\n")
        print(f"added {len(unlisted)} unlisted claims as {UNREVIEWED}")
        unlisted, stale, counts = check()
    columns = ("claims", "glue", "cite", "test", "planted", "cell", "bench", "passage", "unreviewed")
    print(f"{'document':<28}" + "".join(f"{c[:7]:>8}" for c in columns))
    for name, c in [*counts.items(), ("all", sum(counts.values(), Counter()))]:
        print(f"{name:<28}" + "".join(f"{c[k]:>8}" for k in columns))
    for chapter, sentence in unlisted:
        print(f"UNLISTED {chapter}: {sentence}")
    for chapter, quote in stale:
        print(f"STALE {chapter}: {quote}")
    return 1 if unlisted or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
