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
import importlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.profiler import profile

from autograder.grading.exercises.heads import split_cases
from lab import removal, sentences
from solutions import heads, layer

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
    # Issue 33: the refuting review from outside (26 sentences).
    "returns nan for the whole empty item, weights and output;":
        "only when it computes the weights or on its eval fast path: need_weights=False in training gives the bias",
    "`nn.multiheadattention` does not turn such rows into zeros (its handling":
        "with need_weights=False in training mode the row's output is finite",
    "unlike it in torch 2.13 on cpu, gives zero weights instead of nan":
        "nn.MultiheadAttention returns the bias with need_weights=False in training mode",
    "outputs are nan (in torch 2.13, see chapter 2)": "only when PyTorch computes the weights",
    "that never store the whole `(lq, lk)` weights": "with dropout_p > 0 SDPA on CPU falls back to the math kernel",
    "no order (nor the random mean) keeps more than": "single random orders keep more (50.9 % on seed 3)",
    "scores measured with all 16 heads present say little":
        "the iterative order re-measures with the survivors only and fails as often",
    "`digits.pruning_curves`": "pruning_curves is in lab.removal",
    "`digits.importance_from_activations`": "importance_from_activations is in lab.removal",
    "independent unit-variance components has variance": "needs mean 0: with mean 1 the variance is 3 d_k",
    "never holds more than one chunk's scores": "the chapter measures about 4 chunks' worth",
    "the two vectors point the same way *and* with their lengths": "length helps only when cos > 0",
    "score rewards length as well as alignment. a hard": "length helps only when cos > 0",
    "below it, the dot product of": "on the built page the printed lines come above the heat map",
    "`olsson2022` named them": "Elhage et al. (2021) named induction heads",
    "through a pair of heads found": "the circuits have 4 to 8 heads",
    "positions must come from outside.": "with a causal mask the layer is not equivariant",
    "but a model that must tell \"two words back\"": "a causal mask gives position (1/(t+1) after a start token)",
    "gpt-neox, and the hugging face port of llama, pair the": "GPT-NeoX rotates 25 % of the features (rotary_pct)",
    "in models of every size they studied": "one-layer models form none",
    "(it follows a random token: nothing announces it)": "its loss is 2.78 to 3.41, below chance, on every seed",
    "with the cut at 0.6 instead, the circuits are smaller:": "the same size on 5 of 10 seeds",
    "outside it now costs more, up to": "unchanged on 5 seeds, lower on seed 5: only the maximum rose",
    "the model still predicts confidently": "entropy 2.42 to 3.20 nats of 3.47",
    "so `reshape` copies here.": "merge_heads(split_heads(x)) shares memory with x",
    "on inputs with distinct sizes": "the cases repeat sizes (L = d = 5 in one)",
    "is the test of what a head is for": "it fails when heads are redundant",
    "on sentences it never saw,": "156 of the 400 were training sentences; the held-out set is now deduplicated",
    "from {glue:text}`uniform_loss:.2f` nats (a uniform guess": "the curve starts above the uniform loss",
    # Issue 44: the second outside review and the kept-back one (17 sentences; tests/test_claims_evidence.py).
    "a task that needs three heads": "two heads answer all three questions above 0.95 on 2 of 5 seeds",
    "overlapping groups of other widths when it does not": "with L dividing H each token is alone; L = 2, H = 3 is one group",
    "below chance on every seed ({glue": "on the chapter's batch only: on other batches one or two seeds are above chance",
    "learn positions this way": "Haviv et al. conjecture the mechanism",
    "the smallest model where attention": "chapter 5 names the heads of a one-layer model with fewer parameters",
    "$l > 1$ is no longer contiguous": "with d = 1 merge_heads returns a view",
    "removing one of them costs little": "removing the top induction head alone raises the repeat's loss 1.3 to 2.5 times",
    "the most common way to get them wrong": "not measured",
    "is computed by the cell above it": "bench/generation.py's sizes and target are not computed by a cell",
    "chunk sizes that do not divide": "the cell's chunks 1 and 64: 1 divides 50, 64 exceeds it",
    "only approximate": "nn.Linear's default init gives q, k variance about 1/3, scaled scores about 1/9",
    "best random orders come close": "on 4 of 6 models some random order does at least as well on average",
    "keeps only $m$ and $\\ell$": "FlashAttention's backward also keeps the output (and dropout's random state)",
    "comes from the cell above it": "256 MiB and 32 MiB were typed; sizes show their arithmetic now",
    # Issue 44's refuting review of the chapters.
    "given the positions in their input instead": "RoPE rotates inside the layer; biases on the scores (T5, ALiBi) are a third family",
    "of 1,000 further random draws (the cell checks it)": "on 2 of 20 other random streams a draw misses",
    "compute the same function in other ways, for speed and memory:": "grouped-query attention with H_kv < H is another function",
    "here your layer took {glue:text}`vs_fused_first": "one run's ratios, which move a lot between runs (0.6 to 9.7 at L = 64)",
    "it can {cite:p}`milakov2018`": "Milakov and Gimelshein keep m and l only; the running output is Rabe and Staats'",
    "this chapter reproduces these experiments": "Voita et al.'s trained gates are not reproduced",
    "into the layer used by every transformer": "GQA/MQA and RoPE models vary the layer (chapters 7 and 8)",
    "the layer at the heart of every transformer": "GQA/MQA and RoPE models vary the layer",
    "two heads are not always the circuit": "the circuit has 4 to 8 heads on every seed",
    "a single pair is not always the whole circuit": "on no seed is the pair the circuit",
    "the checks use a different size for each symbol": "split_heads is graded at L = d = 5",
    "its attention weights are all zero and its output is zero": "the layer outputs its bias b_o there",
    "through a few heads (previous-token": "the circuit holds 4 to 8 of the 8 heads",
    "and a zero output**: never nan": "the layer outputs b_o for a fully masked query (the intro)",
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
    "02_masking.ipynb": ["`-inf` gives nan in a fully masked row", "gives a fully masked row a uniform average"],
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
        "attention without a mask does not know the order",  # a causal mask breaks the symmetry
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


# ------------------------------------------------------------------ issue 33: what the sentences rest on
# Each test below reruns, outside the chapter, the behaviour a corrected sentence now states, so that
# the old sentence's evidence (and a regression of the code it relies on) fails here.

# Code comments the review found false: they are read as prose too.
REFUTED_IN_CODE = {
    "like PyTorch's default init": "nn.Linear draws U(+-1/sqrt(fan_in)); nn.MultiheadAttention uses Xavier",
    "works on any weights": "cross-attention and more than views.MAX_TOKENS tokens are refused",
    "fewer heads in each circuit": "the same size on some seeds",
    "comes close to 4": "the cached step's growth from t = 256 to 1024 measured 1 to 1.6",
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_refuted_comments_stay_out(path):
    code = "\n".join(_source(cell) for cell in _cells(path) if cell["cell_type"] == "code")
    found = {phrase: why for phrase, why in REFUTED_IN_CODE.items() if phrase in code}
    assert not found, f"{path.name}: a code comment says again what the review refuted: {found}"


def _torch_mha(num_heads, train):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, num_heads, batch_first=True, dtype=torch.float64)
    return mha.train(train)


@pytest.mark.parametrize("num_heads", [2, 4])
def test_mha_empty_item_is_nan_only_when_weights_are_computed_or_on_the_fast_path(num_heads):
    """Chapters 2 and 4: nn.MultiheadAttention gives a fully masked item NaN with need_weights=True
    and on its eval fast path; with need_weights=False otherwise its output is out_proj.bias."""
    mha = _torch_mha(num_heads, train=True)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    ignore = torch.zeros(2, 5, dtype=torch.bool)
    ignore[1] = True  # item 1: every key is padding
    bias = mha.out_proj.bias.expand(5, 8)
    with torch.no_grad():
        with_weights, weights = mha(x, x, x, key_padding_mask=ignore)
        fused, _ = mha(x, x, x, key_padding_mask=ignore, need_weights=False)
        cross, _ = mha.eval()(x, x.flip(1), x.flip(1), key_padding_mask=ignore, need_weights=False)
        fast, _ = mha.eval()(x, x, x, key_padding_mask=ignore, need_weights=False)  # self-attention, no grad
    assert with_weights[1].isnan().all() and weights[1].isnan().all()
    assert torch.allclose(fused[1], bias) and torch.allclose(cross[1], bias)
    assert fast[1].isnan().all(), "the eval fast path (even heads, no grad, self-attention) gives NaN"


def test_mha_fast_path_is_not_taken_with_an_odd_number_of_heads():
    """Chapter 4's layer has 3 heads: the text says its fast path's conditions fail there."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(12, 3, batch_first=True, dtype=torch.float64).eval()
    x = torch.randn(2, 4, 12, dtype=torch.float64)
    ignore = torch.zeros(2, 4, dtype=torch.bool)
    ignore[1] = True
    with torch.no_grad():
        out, _ = mha(x, x, x, key_padding_mask=ignore, need_weights=False)
    assert torch.allclose(out[1], mha.out_proj.bias.expand(4, 12))


def _sdpa_kernels(dropout_p):
    q = torch.randn(1, 2, 16, 8)
    with profile() as prof:
        torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=dropout_p)
    return {event.name for event in prof.events()}


def test_sdpa_with_dropout_on_cpu_falls_back_to_the_math_kernel():
    """Chapter 4: the fused kernels do not store the (Lq, Lk) weights, except with dropout on a CPU."""
    without, with_dropout = _sdpa_kernels(0.0), _sdpa_kernels(0.1)
    assert "aten::_scaled_dot_product_attention_math" not in without
    assert "aten::_scaled_dot_product_attention_math" in with_dropout and "aten::_softmax" in with_dropout


def test_pytorch_default_inits_are_not_unit_normal_over_fan_in():
    """Chapter 4's comment: nn.Linear draws U(+-1/sqrt(fan_in)) (std 1/sqrt(3 fan_in)), and
    nn.MultiheadAttention draws in_proj with Xavier and zero biases."""
    torch.manual_seed(0)
    fan_in = 400
    linear = torch.nn.Linear(fan_in, 300)
    assert linear.weight.abs().max() <= fan_in ** -0.5
    assert abs(linear.weight.std().item() * (3 * fan_in) ** 0.5 - 1) < 0.02
    mha = torch.nn.MultiheadAttention(fan_in, 4)
    assert not mha.in_proj_bias.any() and not mha.out_proj.bias.any()
    xavier_bound = (6 / (fan_in + 3 * fan_in)) ** 0.5  # in_proj is (3E, E)
    assert abs(mha.in_proj_weight.abs().max().item() / xavier_bound - 1) < 0.01


def test_dot_product_variance_is_d_k_only_for_mean_zero_components():
    """Chapter 1's summary: mean 0 and variance 1 give Var(q.k) = d_k; mean 1 gives about 3 d_k."""
    rng = np.random.default_rng(0)
    d = 64
    for mean, ratio in ((0.0, 1.0), (1.0, 3.0)):
        q, k = mean + rng.standard_normal((20000, d)), mean + rng.standard_normal((20000, d))
        assert abs(np.var((q * k).sum(-1)) / d / ratio - 1) < 0.05


def test_length_raises_a_score_only_when_the_key_points_the_query_s_way():
    """Chapter 1: length rewards a key only while cos > 0; against query (3, 1), key (-2, 0)
    scores -6, below (-1, 0)'s -3."""
    query = np.array([3.0, 1.0])
    assert query @ np.array([-2.0, 0.0]) == -6 < query @ np.array([-1.0, 0.0]) == -3
    assert query @ np.array([2.0, 0.0]) > query @ np.array([1.0, 0.0])


LAB_NAME = re.compile(r"`(digits|removal|induction|sentences|heads_task|measure|plots)\.(\w+)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_lab_names_in_the_prose_exist(path):
    """Chapter 6 named `digits.pruning_curves`, which lives in lab.removal: every `module.name` of
    lab/ a chapter's prose names is defined there."""
    missing = [f"{module}.{name}" for module, name in LAB_NAME.findall(_markdown(path))
               if not hasattr(importlib.import_module(f"lab.{module}"), name)]
    assert not missing, f"{path.name} names what lab/ does not define: {missing}"


def test_merge_of_split_heads_is_a_view_of_the_input():
    """Chapter 3's solution note: reshape copies a swapped contiguous input, but the round trip
    merge_heads(split_heads(x)) shares memory with x, for H = 1 too."""
    x = np.arange(2 * 5 * 12, dtype=float).reshape(2, 5, 12)
    for num_heads in (1, 3):
        assert np.shares_memory(heads.merge_heads(heads.split_heads(x, num_heads)), x)
    contiguous = np.arange(2 * 3 * 5 * 4, dtype=float).reshape(2, 3, 5, 4)  # (B, H, L, d), H > 1, L > 1
    assert not np.shares_memory(heads.merge_heads(contiguous), contiguous)


def _split_case_shapes():
    cases = [(case.name, np.shape(case.inputs["args"][0])) for case in split_cases(np.random.default_rng(0))]
    assert len(cases) > 5, "no split_heads case found: the test would check nothing"
    return cases


def test_split_heads_case_names_match_their_shapes():
    """Chapter 3 promises checks on inputs of several shapes; a case named for a shape must have it."""
    named = re.compile(r"\(B, L, H\*d\) = \((\d+), (\d+), (\d+)\*(\d+)\)")
    for name, shape in _split_case_shapes():
        match = named.search(name)
        if match:
            b, length, h, d = map(int, match.groups())
            assert shape == (b, length, h * d), f"case {name!r} has the shape {shape}"


def test_agrees_with_the_wrong_noun_compares_the_verb_with_the_phrase_s_noun():
    """Chapter 8 counts sentences whose verb agrees with the phrase's noun instead of the subject:
    the verb must agree with that noun, not merely make the sentence valid when flipped."""
    assert sentences.agrees_with_the_wrong_noun("the cat near the dogs run.")
    assert sentences.agrees_with_the_wrong_noun("two cats with a dog sees a bird.")
    assert not sentences.agrees_with_the_wrong_noun("two dogs behind two foxes sings.")  # agrees with neither
    assert not sentences.agrees_with_the_wrong_noun("the cat near the dog run.")
    assert not sentences.agrees_with_the_wrong_noun("the cat runs.")
    # Generated: flip the verb of every valid sentence with a phrase; it is this mistake exactly
    # when the phrase's noun has the other number than the subject's.
    rng = np.random.default_rng(0)
    swap = {**sentences.INTRANSITIVE, **sentences.TRANSITIVE}
    swap |= {plural: singular for singular, plural in list(swap.items())}
    checked = 0
    for _ in range(2000):
        words = sentences.sentence(rng)[:-1].split(" ")
        if not any(w in sentences.PREPOSITIONS for w in words):
            continue
        subject, inner = sentences._parse_np(words, 0), sentences._parse_np(words, sentences._parse_np(words, 0)[1] + 1)
        i = inner[1]
        flipped = " ".join(words[:i] + [swap[words[i]]] + words[i + 1:]) + "."
        assert sentences.agrees_with_the_wrong_noun(flipped) == (subject[0] != inner[0]), flipped
        checked += 1
    assert checked > 500


def test_held_out_sentences_are_unseen_and_a_plain_draw_is_not():
    """Chapter 8: the held-out set has no training sentence; a plain second draw repeats many."""
    seen = sentences.sentence_set(20000, 1)
    plain = sentences.complete_sentences(sentences.text(400, seed=11))
    assert sum(s in seen for s in plain) > 100  # 156: why the plain draw is not "never seen"
    unseen = sentences.complete_sentences(sentences.unseen_text(400, seed=11, seen=seen))
    assert len(unseen) == 400 and not any(s in seen for s in unseen)


def test_uniform_causal_attention_carries_the_position():
    """Chapter 8: a head with equal scores over the t + 1 tokens it sees gives a start token's value
    the weight 1/(t+1) at position t: a causal mask alone gives a signal of position."""
    L, E = 6, 4
    mha = layer.MultiHeadAttention(E, 1).double()
    with torch.no_grad():
        for linear in (mha.W_q, mha.W_k):
            linear.weight.zero_()
        mha.W_v.weight.copy_(torch.eye(E, dtype=torch.float64))
        mha.W_o.weight.copy_(torch.eye(E, dtype=torch.float64))
        for linear in (mha.W_q, mha.W_k, mha.W_v, mha.W_o):
            linear.bias.zero_()
        x = torch.zeros(1, L, E, dtype=torch.float64)
        x[0, 0, 0] = 1.0  # a start token, the others blank in feature 0
        out, _ = mha(x, x, x, mask=torch.ones(L, L, dtype=torch.bool).tril())
    assert torch.allclose(out[0, :, 0], 1 / torch.arange(1, L + 1, dtype=torch.float64))


def test_chapter_6_failure_point_numbers():
    """Chapter 6: where the static order fails, single random orders keep more than the named
    orders and the random mean; the iterative order fails as often, once where static holds."""
    _, results = removal.load_results()
    holding, numbers = removal.across_seeds(results, 4)
    assert numbers["random_order_left_at_failures"] > numbers["accuracy_left_at_failures"]
    assert numbers["every_k_iterative"] <= numbers["every_k_static"]
    assert numbers["iterative_fails_where_static_holds"] >= 1


def test_induction_heads_are_cited_to_the_paper_that_named_them():
    """Elhage et al. (2021) named induction heads; Olsson et al. (2022) built on it, and their
    sudden phase is in models of two layers or more."""
    text = " ".join(_markdown(BOOK / "08_language_model.ipynb").split())
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if "named them" in sentence:
            assert "elhage2021" in sentence and "olsson2022" not in sentence, sentence
        if "sudden phase" in sentence:
            assert "two layers or more" in sentence, sentence
    assert "named them" in text
