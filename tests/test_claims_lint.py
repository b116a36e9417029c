"""The claims lint (scripts/claims_lint.py) over every chapter, and checks that it can fail.

Every sentence of a chapter's prose with a number, a comparison word or a universal word is
glued, cites its source, or is listed in book/claims.yml with what supports it; a listed quote
that no longer appears in its chapter is stale. The counts per chapter are printed (``-s``).
"""
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("claims_lint", ROOT / "scripts" / "claims_lint.py")
claims_lint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(claims_lint)


def _chapter(tmp_path, name, *markdown):
    cells = [{"cell_type": "markdown", "id": f"m{i}", "metadata": {}, "source": text} for i, text in enumerate(markdown)]
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_every_claim_of_every_chapter_is_glued_cited_or_listed():
    unlisted, _, counts = claims_lint.check()
    for name, count in counts.items():
        print(f"{name}: {count['claims']} claims: {count['glue']} glued, {count['cite']} cited, "
              f"{count['test']} listed with a test, {count['cell']} with a cell, {count['unreviewed']} unreviewed")
    assert sum(count["claims"] for count in counts.values()) > 300, "the lint found almost no claims: is it reading the chapters?"
    assert not unlisted, (
        "sentences that claim (a number, a comparison, a universal word) with no glue, citation or entry in "
        "book/claims.yml; back each with a cell or test and list it:\n" + "\n".join(f"{c}: {s}" for c, s in unlisted))


def test_no_register_entry_is_stale():
    _, stale, _ = claims_lint.check()
    assert not stale, ("book/claims.yml quotes sentences no longer in their chapter (edited since checked): "
                       + "\n".join(f"{c}: {q}" for c, q in stale))


def test_the_lint_fails_on_an_unlisted_claim_and_a_stale_entry(tmp_path):
    path = _chapter(tmp_path, "09_new.ipynb", "Heads never disagree. It runs 3 times faster.\n\nA plain sentence.\n",
                    "Loss {glue:text}`loss:.2f` nats, as {cite:t}`vaswani2017` say in 2017.\n")
    register = [{"chapter": "09_new.ipynb", "quote": "It runs 3 times faster.", "support": "test tests/x.py::y"},
                {"chapter": "09_new.ipynb", "quote": "A sentence that was edited.", "support": "unreviewed"}]
    unlisted, stale, counts = claims_lint.check(register, [path])
    assert unlisted == [("09_new.ipynb", "Heads never disagree.")]
    assert stale == [("09_new.ipynb", "A sentence that was edited.")]
    assert (counts["09_new.ipynb"]["claims"], counts["09_new.ipynb"]["glue"], counts["09_new.ipynb"]["test"]) == (3, 1, 1)


@pytest.mark.parametrize("sentence, claims", [
    ("Every head sees every key.", True),
    ("The cache is at most twice the weights.", True),
    ("Chunked attention is faster here.", True),
    ("It takes 12 ms.", True),
    ("Inside code: `x[0:3]` is sliced.", False),  # digits in inline code are code
    ("A head attends to the keys.", False),
    ("The bound is $d_k = 64$.", True),  # a number in maths
])
def test_what_counts_as_a_claim(sentence, claims):
    assert bool(claims_lint.triggers(sentence)) == claims


def test_code_blocks_and_directive_options_are_not_prose():
    text = ("```{exercise} Title\n:label: ex-x\n\n**Difficulty** ★★☆ · **Time** ~10 min\n\nEvery row sums to 1.\n```\n\n"
            "```python\nassert all(x > 2 for x in y)\n```\n\nAfter the block.\n")
    assert claims_lint.sentences(text) == ["Every row sums to 1.", "After the block."]


CELL_ID = re.compile(r"\bcells? ([0-9a-f]{8}|[a-z0-9]+-[a-z0-9-]+)\b")  # "cell 01-003", "cell 8272b8ce"
TEST_NODE = re.compile(r"((?:tests|bench)/[\w/]+\.py)(?:::(\w+))?")  # a test, or a benchmark that exits non-zero


def test_every_support_names_a_cell_or_test_that_exists():
    """A register entry's support is what backs it: a cell id of a chapter, a test file and
    function, or a benchmark script, that exist; "unreviewed" is the only other word allowed."""
    ids = {cell.get("id") for path in claims_lint.chapters() for cell in json.loads(path.read_text())["cells"]}
    for entry in claims_lint.load_register():
        support = str(entry["support"])
        if support == claims_lint.UNREVIEWED:
            continue
        cells, tests = CELL_ID.findall(support), TEST_NODE.findall(support)
        assert cells or tests, f"{entry['chapter']}: a support that names no cell and no test: {support!r}"
        for cell in cells:
            assert cell in ids, f"{entry['chapter']}: support names a cell id no chapter has: {cell}"
        for file, function in tests:
            assert (ROOT / file).exists(), f"support names a missing file {file}"
            if function:
                assert re.search(rf"^def {function}\b", (ROOT / file).read_text(), re.M), f"no test {file}::{function}"
