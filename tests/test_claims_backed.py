"""Sentences of the book that no other test asserted, checked here (issue 44, item 3: support that runs).

Each ``check_*`` function takes what the sentence speaks of (a results file, a model, an
implementation, a chapter's cells) and asserts what the sentence says of it; ``test_*`` runs it on
what ships, and ``test_each_check_fails_on_its_negation`` runs it on a planted break of the
property (``PLANTED``), so that no check here passes whatever the code or the data do.
book/claims.yml names these tests as the support of the sentences they back (several each).
Everything here costs seconds: the six-seed results are read from the committed file, never
recomputed; the lab model is evaluated on its 450 test images a few dozen times at most.
"""
import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from lab import digits, removal
from solutions.layer import MultiHeadAttention
from solutions.pruning import head_importance

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PLANTED = {}


def _cells(name):
    return json.loads((BOOK / name).read_text())["cells"]


# ------------------------------------------------------------------ chapter 6: the six-seed numbers

def _results():
    return removal.load_results()[1]


def check_six_seed_numbers(results, across=removal.across_seeds):
    """Chapter 6's sentences on the six models quote numbers that ``across_seeds`` computes; each is
    recomputed here from the curves, from its words: "test accuracies with every head range from A
    to B"; "a quarter of the heads removed in static importance order costs from A to B points ...
    (at most one point on K of N); random orders lose A to B points on average"; "averaged over the
    points, static importance >= random mean >= reverse holds on K of N models" (and iterative, and
    per-layer); "holds at all 15 points on K of N"; "averaged over the points, the iterative order
    is ahead on K of N models"; "per-layer ... keeps less accuracy than the raw scores on K of N";
    "the raw importance summed per layer falls with depth on K of the models"; "at some points it
    falls as far as X points behind"."""
    curves = list(results.values())
    _, numbers = across(results, 4)
    n = len(curves)
    assert numbers["num_seeds"] == n == 6, "the text speaks of six models"
    full = [100 * c["static"][0] for c in curves]
    assert np.isclose(numbers["accuracy_min"], min(full)) and np.isclose(numbers["accuracy_max"], max(full))
    assert all(c[name][0] == c["static"][0] for c in curves for name in removal.ORDERS), "k = 0 is every head"

    def mean_random(c):
        return np.asarray(c["random"]).mean(0)

    drops = [100 * (c["static"][0] - c["static"][4]) for c in curves]
    random_drops = [100 * (mean_random(c)[0] - mean_random(c)[4]) for c in curves]
    assert len(curves[0]["static"]) == 17, "16 heads: a quarter is 4"
    assert np.isclose(numbers["quarter_drop_min"], min(drops)) and np.isclose(numbers["quarter_drop_max"], max(drops))
    assert numbers["quarter_drop_within_one"] == sum(d <= 1 + 1e-6 for d in drops)
    assert np.isclose(numbers["quarter_random_min"], min(random_drops))
    assert np.isclose(numbers["quarter_random_max"], max(random_drops))
    inner = slice(1, 16)
    for name in ("static", "iterative", "per-layer static", "per-layer iterative"):
        key = name.replace("-", "_").replace(" ", "_")
        average = sum(np.mean(c[name][inner]) >= np.mean(mean_random(c)[inner]) >= np.mean(c["reverse"][inner])
                      for c in curves)
        every = sum(all(c[name][k] >= mean_random(c)[k] >= c["reverse"][k] for k in range(1, 16)) for c in curves)
        assert numbers[f"on_average_{key}"] == average, name
        assert numbers[f"every_k_{key}"] == every, name
    assert numbers["iterative_ahead"] == sum(np.mean(c["iterative"][inner]) > np.mean(c["static"][inner]) for c in curves)
    assert numbers["per_layer_behind"] == sum(
        np.mean(c["per-layer static"][inner]) < np.mean(c["static"][inner]) for c in curves)
    assert numbers["depth_falls"] == sum(all(np.diff(np.asarray(c["importance"]).sum(1)) < 0) for c in curves)
    assert np.isclose(numbers["iterative_worst"], max(100 * np.max(np.asarray(c["static"]) - c["iterative"])
                                                      for c in curves))
    return numbers


def test_six_seed_numbers_are_what_the_text_says_they_are():
    numbers = check_six_seed_numbers(_results())
    # What the conclusions say in words of these counts.
    n = numbers["num_seeds"]
    assert numbers["on_average_static"] == n, "the importance order beats random beats reverse on average on every model"
    assert n / 2 < numbers["every_k_static"] < n, "at every number of heads removed: on most models, not all"
    assert numbers["iterative_ahead"] < n, "the iterative order helps on average on some models, not at every point"


def _swapped_orders(results, across=removal.across_seeds):
    """A planted ``across_seeds`` that computes the quarter drop on the iterative order, not the static one."""
    def planted(res, quarter):
        res = {seed: dict(c, static=c["iterative"], iterative=c["static"]) for seed, c in res.items()}
        return across(res, quarter)
    return planted


PLANTED["six-seed numbers from the wrong order"] = lambda: check_six_seed_numbers(_results(), _swapped_orders(_results()))
PLANTED["six-seed numbers with a miscounted average"] = lambda: check_six_seed_numbers(
    _results(), lambda res, q: (lambda h, n: (h, n | {"on_average_static": n["on_average_static"] - 1}))(
        *removal.across_seeds(res, q)))


def check_shipped_accuracies_are_the_weights(results, seeds=digits.SEEDS):
    """"Their test accuracies with every head range from A to B %" and "test accuracy with every head,
    by seed": the file's curves at k = 0 are the accuracy of each seed's committed weights with no head
    removed, on the 450 test images (within two images of float rounding across machines)."""
    x, y = digits.load_split("test")
    for seed in seeds:
        model = digits.load_model(MultiHeadAttention, digits.weights_path(seed))
        here = digits.accuracy(model, x, y, torch.ones(model.num_layers, model.num_heads))
        assert abs(here - results[seed]["static"][0]) <= 2 / len(y) + 1e-9, seed


def test_shipped_accuracies_are_the_committed_weights_with_every_head():
    check_shipped_accuracies_are_the_weights(_results())


PLANTED["accuracies of another seed's weights"] = lambda: check_shipped_accuracies_are_the_weights(
    {seed: _results()[(seed + 1) % 6] for seed in digits.SEEDS}, seeds=[0, 1])


# ------------------------------------------------------------------ chapter 6: the seed-0 model

@pytest.fixture(scope="module")
def lab_model():
    return digits.load_model(MultiHeadAttention)


def check_the_lab_model_is_what_the_text_describes(model):
    """"The model is a small pre-norm transformer encoder: a linear patch embedding, learned positions,
    4 blocks of (your) multi-head self-attention with 4 heads each and an MLP, and a linear classifier
    that reads the class token"; "a model has H of them in every layer"; "the model's attention
    layers are *your* MultiHeadAttention ..., whose head_mask argument is exactly the gate xi": the
    layer's output minus its bias is linear in each gate, 0 removes the head, 1 keeps it."""
    assert isinstance(model.embed, torch.nn.Linear) and isinstance(model.head, torch.nn.Linear)
    assert isinstance(model.pos, torch.nn.Parameter) and model.pos.requires_grad
    assert model.num_layers == len(model.blocks) == 4 and model.num_heads == 4
    for block in model.blocks:
        assert isinstance(block.attn, MultiHeadAttention) and block.attn.num_heads == model.num_heads
        assert isinstance(block.norm1, torch.nn.LayerNorm) and isinstance(block.mlp, torch.nn.Sequential)
    # Pre-norm: the block's attention reads LN(x), and its output is added to x itself.
    block, x = model.blocks[0], torch.randn(2, 10, model.embed.out_features)
    with torch.no_grad():
        h = block.norm1(x)
        a = x + block.attn(h, h, h)[0]
        torch.testing.assert_close(block(x), a + block.mlp(block.norm2(a)))
    # The gate: the attention output is affine in xi_h, xi_h = 1 is the plain layer.
    attn, H = model.blocks[1].attn, model.num_heads
    with torch.no_grad():
        def out(xi):
            return attn(h, h, h, head_mask=xi)[0]
        ones = torch.ones(H)
        torch.testing.assert_close(out(ones), attn(h, h, h)[0])
        for head in range(H):
            zero, half = ones.clone(), ones.clone()
            zero[head], half[head] = 0.0, 0.5
            torch.testing.assert_close(out(half), (out(zero) + out(ones)) / 2, rtol=1e-5, atol=1e-5)
            assert not torch.allclose(out(zero), out(ones))


def test_the_lab_model_is_what_the_text_describes(lab_model):
    check_the_lab_model_is_what_the_text_describes(lab_model)


class _GateIgnored(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.num_heads = inner, inner.num_heads

    def forward(self, q, k, v, head_mask=None):
        return self.inner(q, k, v)


def _model_ignoring_gates():
    model = copy.deepcopy(digits.load_model(MultiHeadAttention))
    for block in model.blocks:
        block.attn = _GateIgnored(block.attn)
    return model


PLANTED["a model whose layers ignore the gate"] = lambda: check_the_lab_model_is_what_the_text_describes(
    _model_ignoring_gates())


def check_test_set_arithmetic(y_test):
    """"On 450 test images one image is 0.22 points of accuracy"; "differences below a point are
    four images or fewer"; "forward pass, 450 images"."""
    n = len(y_test)
    assert n == 450
    assert round(100 / n, 2) == 0.22
    assert 4 * 100 / n < 1 < 5 * 100 / n


def test_test_set_arithmetic():
    check_test_set_arithmetic(digits.load_split("test")[1])


PLANTED["a test split of another size"] = lambda: check_test_set_arithmetic(digits.load_split("val")[1])


def check_single_head_ablation(model, table_fn=removal.ablation_table):
    """"accuracy drop (points) when one head is removed; rows = layers, columns = heads": entry
    (l, h) of the ablation table is the test accuracy with head h of layer l alone switched off;
    "Most heads can go alone at almost no cost ... a model trained with all its heads does not rely
    on most of them individually" and "Many heads are dispensable: K of the 16 heads of the seed-0
    model cost at most one test image when removed alone": more than half of the 16 do."""
    x, y = digits.load_split("test")
    L, H = model.num_layers, model.num_heads
    table = table_fn(model, x, y)
    assert table.shape == (L, H)
    for l, h in [(0, 0), (1, 2), (3, 3)]:
        assert table[l, h] == digits.accuracy(model, x, y, digits.mask_without([(l, h)], L, H))
    base = digits.accuracy(model, x, y)
    alone = int((100 * (base - table) <= 100 / len(y) + 1e-6).sum())
    assert alone > L * H / 2, alone


def test_single_head_ablation(lab_model):
    check_single_head_ablation(lab_model)


PLANTED["an ablation table transposed"] = lambda: check_single_head_ablation(
    digits.load_model(MultiHeadAttention), lambda m, x, y: removal.ablation_table(m, x, y).T[::-1])


def check_importance_is_the_mean_absolute_gate_gradient(model, importance=head_importance):
    """"one example per batch: E_x |dL(x)/dxi|"; "The absolute value, per batch: a head whose gate
    gradient is +0.3 on some examples and -0.3 on others matters on both; summed first, the signs
    cancel"; "For every (x, y) in batches, take the gradient of loss_fn(model(x, head_mask=xi), y)
    with respect to xi and add its absolute value times len(y); divide by the number of examples":
    the scores equal the per-example mean of |grad|, which differs from |mean grad| here."""
    x, y = digits.load_split("val")
    x, y = x[:6], y[:6]
    L, H = model.num_layers, model.num_heads
    grads = []
    for i in range(len(y)):
        xi = torch.ones(L, H, requires_grad=True)
        digits.loss_fn(model(x[i:i + 1], head_mask=xi), y[i:i + 1]).backward()
        grads.append(xi.grad.clone())
    grads = torch.stack(grads)
    batches = digits.batches(x, y, batch_size=1)
    assert all(len(b[1]) == 1 for b in batches)
    scores = importance(model, batches, digits.loss_fn, normalize=False)
    torch.testing.assert_close(scores, grads.abs().mean(0), rtol=1e-4, atol=1e-7)
    assert not torch.allclose(grads.abs().mean(0), grads.mean(0).abs(), rtol=1e-3), "signs never differ here"
    # Batches of 2 and 4: the mean of |grad of the batch mean|, weighted by batch size.
    two = importance(model, [(x[:2], y[:2]), (x[2:], y[2:])], digits.loss_fn, normalize=False)
    torch.testing.assert_close(two, (2 * grads[:2].mean(0).abs() + 4 * grads[2:].mean(0).abs()) / 6,
                               rtol=1e-4, atol=1e-7)


def test_importance_is_the_mean_absolute_gate_gradient(lab_model):
    check_importance_is_the_mean_absolute_gate_gradient(lab_model)


def _signed_importance(model, batches, loss_fn, normalize=True, head_mask=None):
    """Planted: sums the signed gradients (the signs cancel) and takes the absolute value at the end."""
    total, count = None, 0
    for x, y in batches:
        xi = torch.ones(model.num_layers, model.num_heads, requires_grad=True)
        loss_fn(model(x, head_mask=xi), y).backward()
        total = xi.grad * len(y) if total is None else total + xi.grad * len(y)
        count += len(y)
    return (total / count).abs()


PLANTED["importance summed with its signs"] = lambda: check_importance_is_the_mean_absolute_gate_gradient(
    digits.load_model(MultiHeadAttention), _signed_importance)


# ------------------------------------------------------------------ every chapter: "Check it with check(...) below"

CHECK_SENTENCE = re.compile(r"Check it with `check\(\"(\w+)\"\)` below, or `make grade`\.")


def check_sentences_are_followed_by_their_check(cells, makefile):
    """"Check it with `check("X")` below, or `make grade`.": the first code cell after the sentence
    calls ``check("X")``, and the Makefile has a ``grade`` target. Returns how many sentences."""
    assert re.search(r"^grade:", makefile, re.M), "no make grade"
    found = 0
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for exercise in CHECK_SENTENCE.findall(" ".join("".join(cell["source"]).split())):
            following = next(("".join(c["source"]) for c in cells[i + 1:] if c["cell_type"] == "code"), "")
            assert re.search(rf"check\(\s*[\"']{exercise}[\"']", following), (cell.get("id"), exercise)
            found += 1
    assert found, "no such sentence: nothing checked"
    return found


@pytest.mark.parametrize("name", sorted(p.name for p in BOOK.glob("0[1-8]_*.ipynb")))
def test_check_sentences_are_followed_by_their_check(name):
    check_sentences_are_followed_by_their_check(_cells(name), (ROOT / "Makefile").read_text())


def _check_cell_removed(name):
    cells = _cells(name)
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and CHECK_SENTENCE.search(" ".join("".join(cell["source"]).split())):
            following = next(j for j in range(i + 1, len(cells)) if cells[j]["cell_type"] == "code")
            cells = cells[:following] + cells[following + 1:]
            break
    return cells


PLANTED["a check sentence whose check cell is gone"] = lambda: check_sentences_are_followed_by_their_check(
    _check_cell_removed("06_pruning.ipynb"), (ROOT / "Makefile").read_text())


# Last in the file: every check planted above, whichever section added it.
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_check_fails_on_its_negation(name):
    with np.errstate(all="ignore"), pytest.raises(AssertionError):
        PLANTED[name]()
