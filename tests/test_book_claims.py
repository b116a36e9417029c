"""The chapters' prose stays tied to the computations that back it.

A number the text quotes from a measurement is pasted in by myst-nb's glue
(``{glue:text}`name:.2f``` in a markdown cell, ``glue("name", value, display=False)`` in a
code cell of the same notebook); a comparison the text makes ("above chance", "faster") is
checked by an ``assert`` in the cell that computes it. nbval (``make test``) runs every cell,
so a failing assert fails the suite; a glue key that no cell produces would only be a warning
of the book build, so this file checks the keys statically, without running anything, and
counts the ties. It also keeps out sentences the review of the chapters found false.
"""
import ast
import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
NOTEBOOKS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))

# {glue}`key`, {glue:text}`key:.2f`, {glue:any}`other.ipynb::key`, ... and ```{glue:figure} key
GLUE_ROLE = re.compile(r"\{glue(?::(?:any|text|md|math))?\}`([^`]+)`")
GLUE_DIRECTIVE = re.compile(r"^[`:]{3,}\{glue(?::(?:any|figure|math|md))?\}\s+(\S+)", re.MULTILINE)
FORMAT_TYPES = set("bcdoxXeEfFgGn%s")

# Sentences the review found wrong, stronger than the evidence, or contradicted by the chapter's
# own numbers. They must not come back (in any chapter, case-insensitive, line breaks ignored).
REFUTED = {
    "at a constant cost per token": "a cached decoding step is O(E^2 + tE), chapter 7 measures it",
    "costs about the same at every position": "a cached decoding step grows with t",
    "with the same mask convention as this course": "is_causal=True is top-left aligned",
    "the gap is much larger": "nothing in the book measures a GPU",
    "the time is about the same": "chunked and plain times differ and scatter; the chapter gives the spread",
    "fills the memory": "the cache overtakes the weights only at large batch x context",
    "interchangeable with pytorch's": "only in eval mode: in training nn.MultiheadAttention returns weights after dropout",
    "zero is the only answer": "zero output for a fully masked row is a convention",
    "-1e9` is `-inf` in float16": "NumPy rounds to -inf, torch's masked_fill raises",
    "key 2 matches best": "key 0 is better aligned with the query; key 2 wins by its length",
    "fall to about chance": "the measured accuracies are above chance",
    "(the course convention, and pytorch's)": "nn.MultiheadAttention folds heads into the batch",
    "here it forces it": "specialisation depends on the seed",
    "matches `torch.nn.multiheadattention` exactly": "to rounding error, in eval mode",
    "attention into attention within blocks": "blocks of L/H tokens only when H divides L (L = 5, H = 3 overlap)",
    "the reference layer stays finite": "in that cell `ref` is nn.MultiheadAttention, which returns NaN",
    "the question it breaks is the one its attention pointed at":
        "a near-uniform head has its argmax on 'majority' whatever its job",
    "breaks exactly the question the head attends for": "true of the pointers only",
    "keys at most": "e to the mean entropy is an average, not a per-query bound",
    "each pointer looks at": "e to the mean entropy is an average over queries",
    # Chapter 8 (the refuting review of the new chapter).
    "each row is a position, each column a feature": "the heatmap is pe.T: positions are its columns",
    "down to about $1/10000$ (the last pair)": "the last pair turns at 10000^(-(d-2)/d), 1/5600 at d = 32",
    "at chance on the first copy": "the first copy's loss is 3.6 nats, above chance (3.47) on every seed",
    "near zero on the repeat": "the repeat's loss is 0.4 to 0.5 nats",
    "the long-distance agreement is where a model of this size slips":
        "over 20 sampling seeds, about half of the invalid sentences are agreement slips, not all",
    "of {glue:text}`num_seeds` seeds: the heads left behind":
        "on other test batches the top pair of seed 5 is not the costliest (two heads tie on induction score)",
    "in models of every size.": "Olsson et al. study a range of sizes, not every size",
    "removing any other pair on {glue:text}`pair_beats_others`":
        "analyse compares with the pairs sharing no head with the top pair; against every pair, 4 of 6",
    "without each other pair (one head of each layer)": "only the pairs disjoint from the top pair",
    "$\\log 32$ = 3.47": "a typed number: glued from induction.CHANCE",
    "the heads left behind still copy part of the way (the loss stays below chance)":
        "on seeds 6 and 7 (a single previous-token head) removing the top pair takes the loss above chance",
}

# Sentences a chapter must keep: the caveats the review found missing, stated where they apply.
REQUIRED = {
    "05_looking_at_heads.ipynb": [
        "the same as a one-hot row",  # a fully masked row has entropy 0
        "average over the real queries only",  # padded queries pull the mean down
        "log of *its* number of allowed keys",  # the maximum under a mask
        "an average, not a bound",
    ],
    "03_heads.ipynb": ["when $h$ divides $l$"],
    "04_layer.ipynb": ["every size distinct"],
    "08_language_model.ipynb": [
        "a little above chance on the first copy",  # 3.6 nats on every seed, chance 3.47
        "on every one of five test batches",  # the top pair's cost depends on the batch
        "not the only one",  # agreement slips are about half of the invalid samples
        "close to $1/10000$ only when $d$ is large",
        "with the cut at 0.6 instead",  # the circuit and the rest depend on the cut
        "those sharing one head with it included",  # the top pair against every other pair
        "the circuit has a single previous-token head",  # where removing the pair is enough
        "the ends of the trained range",  # the repeat's loss at periods 5 and 20, not only 12
    ],
}


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _source(cell):
    return "".join(cell["source"])


def _glued_keys(path):
    """Keys passed as a string literal to ``glue(...)`` in the code cells, in order."""
    keys = []
    for cell in _cells(path):
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse(_source(cell))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "glue":
                name = node.args[0] if node.args else None
                assert isinstance(name, ast.Constant) and isinstance(name.value, str), (
                    f"{path.name}: glue() needs a literal key, so that this test can find it")
                keys.append(name.value)
    return keys


def _references(path):
    """``(document, key, format_spec)`` for every glue role or directive in the markdown cells."""
    refs = []
    for cell in _cells(path):
        if cell["cell_type"] != "markdown":
            continue
        text = _source(cell)
        for content in GLUE_ROLE.findall(text) + GLUE_DIRECTIVE.findall(text):
            document, _, key = content.rpartition("::")
            key, _, spec = key.partition(":")
            refs.append((document or path.name, key, spec))
    return refs


def _asserts(path):
    return sum(isinstance(node, ast.Assert) for cell in _cells(path) if cell["cell_type"] == "code"
               for node in ast.walk(ast.parse(_source(cell))))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_glue_key_in_the_text_is_computed_once_by_the_chapter(path):
    glued = _glued_keys(path)
    duplicates = sorted({key for key in glued if glued.count(key) > 1})
    assert not duplicates, f"{path.name}: glued more than once: {duplicates}"
    for document, key, spec in _references(path):
        source = BOOK / document
        assert source.exists(), f"{path.name}: glue reference to a missing notebook {document}"
        assert key in _glued_keys(source), (
            f"{path.name}: the text pastes {key!r}, which no code cell of {document} glues")
        assert not spec or spec[-1] in FORMAT_TYPES, f"{path.name}: {key!r} has a format spec without a type: {spec!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_glued_value_is_used_by_the_text(path):
    used = {(document, key) for document, key, _ in _references(path)}
    used |= {(path.name, key) for other in NOTEBOOKS for document, key, _ in _references(other) if document == path.name}
    unused = [key for key in _glued_keys(path) if (path.name, key) not in used]
    assert not unused, f"{path.name}: glued but never pasted into the text: {unused}"


@pytest.mark.parametrize("path", [*NOTEBOOKS, *BOOK.glob("*.md")], ids=lambda p: p.name)
def test_refuted_sentences_stay_out(path):
    if path.suffix == ".ipynb":
        text = "\n".join(_source(cell) for cell in _cells(path) if cell["cell_type"] == "markdown")
    else:
        text = path.read_text()
    flat = " ".join(text.split()).lower()
    found = {phrase: why for phrase, why in REFUTED.items() if phrase in flat}
    assert not found, f"{path.name} says again what the review refuted: {found}"


# The ties of the chapters that quote measurements: at least this many glued numbers in the text
# and asserts in the code. A chapter losing its ties (a glue replaced by a typed number, an
# assert deleted) fails here.
MINIMUM_TIES = {
    "01_attention.ipynb": (7, 12),
    "02_masking.ipynb": (0, 9),
    "03_heads.ipynb": (0, 8),
    "04_layer.ipynb": (0, 16),
    "05_looking_at_heads.ipynb": (10, 15),
    "07_beyond.ipynb": (24, 16),
    "08_language_model.ipynb": (52, 14),
}


@pytest.mark.parametrize("name", sorted(MINIMUM_TIES))
def test_chapters_keep_their_ties(name):
    path = BOOK / name
    pasted, asserts = len(_references(path)), _asserts(path)
    min_pasted, min_asserts = MINIMUM_TIES[name]
    print(f"{name}: {pasted} glued numbers in the text, {asserts} asserts")
    assert pasted >= min_pasted and asserts >= min_asserts, (
        f"{name}: {pasted} glued numbers (at least {min_pasted}) and {asserts} asserts (at least {min_asserts})")


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_caveats_stay_in(name):
    text = "\n".join(_source(cell) for cell in _cells(BOOK / name) if cell["cell_type"] == "markdown")
    flat = " ".join(text.split()).lower()
    missing = [phrase for phrase in REQUIRED[name] if phrase.lower() not in flat]
    assert not missing, f"{name} lost the caveats {missing}"


# ------------------------------------------------------------------ maths, asserts, hints

MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.DOTALL)
TEXT_ARGUMENT = re.compile(r"\\(?:text|textrm|textit|textbf|mbox)\{([^{}]*)\}")


def _markdown(path):
    if path.suffix == ".md":
        return path.read_text()
    return "\n".join(_source(cell) for cell in _cells(path) if cell["cell_type"] == "markdown")


def _without_code(text):
    """Markdown without fenced blocks and inline code, where a dollar sign is not maths."""
    text = re.sub(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1\s*$", "", text, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"^(`{3,})\s*(?:python|ipython3?|bash|text)?\s*$", "", text, flags=re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("path", [*NOTEBOOKS, *BOOK.glob("*.md")], ids=lambda p: p.name)
def test_no_tex_command_inside_text_mode(path):
    """MathJax shows a backslash inside \\text{...} literally: `\\text{valid\\_lens}` rendered as
    "valid\\_lens". Words with underscores go in code, or in \\mathtt{...} where \\_ is a command."""
    found = []
    for match in MATH.finditer(_without_code(_markdown(path))):
        maths = match.group(1) or match.group(2)
        found += [arg for arg in TEXT_ARGUMENT.findall(maths) if "\\" in arg]
    assert not found, f"{path.name}: a backslash inside text mode shows literally: {found}"


def test_the_tex_check_catches_the_old_sentence():
    old = r"key $j$ may be attended to iff $j < \text{valid\_lens}[b]$"
    maths = [m.group(1) or m.group(2) for m in MATH.finditer(_without_code(old))]
    assert any("\\" in arg for m in maths for arg in TEXT_ARGUMENT.findall(m))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_assert_says_what_failed(path):
    """A bare AssertionError tells a learner nothing: every assert of a chapter carries a message."""
    bare = [ast.unparse(node.test)[:80] for cell in _cells(path) if cell["cell_type"] == "code"
            for node in ast.walk(ast.parse(_source(cell))) if isinstance(node, ast.Assert) and node.msg is None]
    assert not bare, f"{path.name}: asserts without a message: {bare}"


def test_python_version_is_the_projects_floor():
    """The intro and the README name the floor of pyproject.toml's requires-python, not less."""
    floor = re.search(r'requires-python\s*=\s*">=([\d.]+)"', (BOOK.parent / "pyproject.toml").read_text()).group(1)
    for path in (BOOK / "intro.md", BOOK.parent / "README.md"):
        for version in re.findall(r"Python (3\.\d+(?:\.\d+)?)", path.read_text()):
            assert version == floor, f"{path.name} says Python {version}; pyproject.toml requires >= {floor}"


EXERCISE_BLOCK = re.compile(r"^(`{3,}|:{3,})\{exercise\}[^\n]*\n:label:\s*(\S+)(.*?)^\1\s*$", re.M | re.S)
HINT_BLOCK = re.compile(r"^(`{3,}|:{3,})\{admonition\}\s*(Hint[^\n]*)\n(.*?)^\1\s*$", re.M | re.S)


def _exercises_and_hints(path):
    """[(label, difficulty in stars, [(hint title, hint body), ...])] in the chapter's order: the
    hints of an exercise are the Hint admonitions between it and the next exercise."""
    text = _markdown(path)
    starts = [(m.start(), m.group(2), m.group(3)) for m in EXERCISE_BLOCK.finditer(text)]
    out = []
    for n, (start, label, body) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(text)
        stars = re.search(r"\*\*Difficulty\*\*\s*(★*)", body)
        hints = [(m.group(2).strip(), m.group(3)) for m in HINT_BLOCK.finditer(text, start, end)]
        out.append((label, len(stars.group(1)) if stars else 0, hints))
    return out


def _code_level(title, body):
    return "the code" in title.lower() or "```" in body


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_hints_climb_in_tiers(path):
    """Every exercise has at least two hints, numbered in order (the idea, the API, then the code),
    each its own dropdown; a code-level hint, if any, comes last."""
    exercises = _exercises_and_hints(path)
    assert exercises, f"{path.name}: no exercise"
    for label, _, hints in exercises:
        titles = [title for title, _ in hints]
        assert len(hints) >= 2, f"{path.name} {label}: {len(hints)} hint(s): {titles}"
        assert [re.match(r"Hint (\d+)", t).group(1) for t in titles] == [str(i + 1) for i in range(len(hints))], (
            f"{path.name} {label}: hints not numbered 1, 2, ...: {titles}")
        for title, body in hints:
            assert ":class: dropdown" in body, f"{path.name} {label}: {title!r} is not a dropdown"
        levels = [_code_level(title, body) for title, body in hints]
        assert levels == sorted(levels), f"{path.name} {label}: a code-level hint before a conceptual one: {titles}"
        assert not levels[0], f"{path.name} {label}: the first hint is already code"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_chapter_has_a_hard_exercise_without_code_hints(path):
    hard = [label for label, stars, hints in _exercises_and_hints(path)
            if stars >= 3 and not any(_code_level(title, body) for title, body in hints)]
    assert hard, f"{path.name}: no exercise of ★★★ or more whose hints stop short of the code"


# Chapters 2-4: the learner's own code meets the chapter's pitfall before any demonstration of it:
# the exercise, then a cell that runs the learner's function, then the section that explains.
PITFALL_FIRST = {
    "02_masking.ipynb": ("ex-masked-softmax", "masking.masked_softmax(row_scores, row_mask)", "(ch2-before)="),
    "03_heads.ipynb": ("ex-split-heads", "heads.split_heads(x, H)", "(ch3-bug)="),
    "04_layer.ipynb": ("ex-multi-head-attention", "layer.multi_head_attention(query, key, value, params, H, mask)",
                       "(ch4-torch)="),
}


@pytest.mark.parametrize("name", sorted(PITFALL_FIRST))
def test_learners_meet_the_pitfall_with_their_own_code_first(name):
    label, own_call, demonstration = PITFALL_FIRST[name]
    cells = _cells(BOOK / name)

    def first(predicate, what):
        index = next((i for i, c in enumerate(cells) if predicate(c)), None)
        assert index is not None, f"{name}: no {what}"
        return index

    exercise = first(lambda c: c["cell_type"] == "markdown" and f":label: {label}" in _source(c), label)
    run = first(lambda c: c["cell_type"] == "code" and own_call in _source(c), own_call)
    shown = first(lambda c: c["cell_type"] == "markdown" and demonstration in _source(c), demonstration)
    assert exercise < run < shown, f"{name}: exercise at cell {exercise}, own run at {run}, demonstration at {shown}"
