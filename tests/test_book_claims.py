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
    "01_attention.ipynb": (5, 6),
    "02_masking.ipynb": (0, 9),
    "03_heads.ipynb": (0, 6),
    "04_layer.ipynb": (0, 13),
    "05_looking_at_heads.ipynb": (9, 9),
    "07_beyond.ipynb": (24, 16),
    "08_language_model.ipynb": (36, 9),
}


@pytest.mark.parametrize("name", sorted(MINIMUM_TIES))
def test_chapters_keep_their_ties(name):
    path = BOOK / name
    pasted, asserts = len(_references(path)), _asserts(path)
    min_pasted, min_asserts = MINIMUM_TIES[name]
    print(f"{name}: {pasted} glued numbers in the text, {asserts} asserts")
    assert pasted >= min_pasted and asserts >= min_asserts, (
        f"{name}: {pasted} glued numbers (at least {min_pasted}) and {asserts} asserts (at least {min_asserts})")
