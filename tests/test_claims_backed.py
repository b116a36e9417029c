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


def check_the_timing_cell(source):
    """Chapter 6's cell ch6-23 run on two recording stand-ins: "The time, as medians of 15 forward
    passes over the 450 test images each, the two models taking turns so that a burst of load on the
    machine hits both"."""
    import time as time_module
    calls = []

    class _Timed:
        def __init__(self, name):
            self.name = name

        def __call__(self, x):
            calls.append((self.name, len(x)))
            return x

    namespace = {"time": time_module, "np": np, "torch": torch, "model": _Timed("all"), "pruned": _Timed("pruned"),
                 "x_test": torch.zeros(450, 9, 16), "print": lambda *a, **k: None}
    exec(compile(source, "<ch6-23>", "exec"), namespace)
    assert calls == [("all", 450), ("pruned", 450)] * 15, calls[:4]
    assert np.isclose(namespace["full_ms"], 1e3 * np.median(namespace["times"]["all heads"]))
    assert np.isclose(namespace["pruned_ms"], 1e3 * np.median(namespace["times"]["half pruned"]))


def _cell_source(name, cell_id):
    return "".join(next(c for c in _cells(name) if c.get("id") == cell_id)["source"])


def test_the_timing_cell():
    check_the_timing_cell(_cell_source("06_pruning.ipynb", "ch6-23"))


PLANTED["timings one model after the other"] = lambda: check_the_timing_cell(
    _cell_source("06_pruning.ipynb", "ch6-23").replace(
        'for _ in range(15):\n    times["all heads"].append(forward_seconds(model))\n    times["half pruned"].append(forward_seconds(pruned))',
        'for _ in range(15):\n    times["all heads"].append(forward_seconds(model))\nfor _ in range(15):\n    times["half pruned"].append(forward_seconds(pruned))'))


def check_the_pruning_cell(namespace):
    """Chapter 6's cell ch6-20 run on the seed-0 model and its stored static order: "Prune the lab model
    for real: the half of its heads that come first in the importance order, in two rounds per layer (to
    exercise the original numbering), then compare with masking"; "round 2: already-removed ones
    ignored"."""
    model, pruned, half = namespace["model"], namespace["pruned"], namespace["half"]
    L, H = model.num_layers, model.num_heads
    assert half == namespace["static"][:L * H // 2]
    for l, attention in enumerate(pruned.attention_layers):
        assert attention.pruned_heads == {h for layer, h in half if layer == l}
        assert attention.num_heads == H - len(attention.pruned_heads)
    assert (namespace["pruned_logits"] - namespace["masked_logits"]).abs().max() < 1e-4


def _pruning_namespace(prune=None):
    from solutions import pruning

    class _Pruning:
        prune_heads = staticmethod(prune or pruning.prune_heads)
    model = digits.load_model(MultiHeadAttention)
    x_test, y_test = digits.load_split("test")
    static = [tuple(p) for p in _results()[0]["orders"]["static"]]
    namespace = {"copy": copy, "torch": torch, "digits": digits, "pruning": _Pruning, "model": model,
                 "static": static, "L": model.num_layers, "H": model.num_heads, "x_test": x_test[:120],
                 "y_test": y_test[:120], "print": lambda *a, **k: None}
    exec(compile(_cell_source("06_pruning.ipynb", "ch6-20"), "<ch6-20>", "exec"), namespace)
    return namespace


def test_the_pruning_cell():
    check_the_pruning_cell(_pruning_namespace())


def _prune_once(layer, heads):
    """Planted: a second round on a pruned layer does nothing."""
    from solutions.pruning import prune_heads
    return layer if getattr(layer, "pruned_heads", None) else prune_heads(layer, heads)


PLANTED["pruning that ignores a second round"] = lambda: check_the_pruning_cell(_pruning_namespace(_prune_once))


def check_the_removal_orders(iterative_order, results, num_random, band):
    """Chapter 6's orders: "by importance, iterative: after each removal recompute the importance, with
    the removed heads masked (head_mask), and remove the least important of the rest"; "The iterative
    orders need the importance fifteen times over"; "random: 50 random orders, their mean and the band
    that holds the central 90 % of them"; "reverse: the most important head first (the static order
    backwards)"."""
    class _Model:
        num_layers, num_heads = 4, 4

    rng = np.random.default_rng(2)
    base = torch.from_numpy(rng.random((4, 4)))
    calls = []

    def importance(model, data, loss, head_mask=None):
        calls.append(head_mask.clone())
        # the scores move with what was removed: the order must come from each new call
        return base + 0.3 * (1 - head_mask).sum() * torch.from_numpy(rng.random((4, 4)))

    order = iterative_order(_Model(), importance, None)
    assert len(calls) == 15 and len(order) == 16 == len(set(order))
    for i, mask in enumerate(calls):
        assert {(l, h) for l in range(4) for h in range(4) if mask[l, h] == 0} == set(order[:i])
    assert num_random == 50
    random = rng.random((50, 17))
    mean, low, high = band(random)
    assert np.allclose(mean, random.mean(0))
    assert np.allclose((random >= low).mean(0), 0.95, atol=0.021) and np.allclose((random <= high).mean(0), 0.95, atol=0.021)
    for seed, curves in results.items():
        assert curves["orders"]["reverse"] == curves["orders"]["static"][::-1], seed


def test_the_removal_orders():
    check_the_removal_orders(removal.iterative_order, _results(), removal.NUM_RANDOM, removal.random_band)


def _static_order(model, importance, data, loss=None):
    """Planted: computes the scores once and never again."""
    scores = importance(model, data, loss, head_mask=torch.ones(model.num_layers, model.num_heads))
    return removal.order_by_score(scores)


PLANTED["an 'iterative' order scored once"] = lambda: check_the_removal_orders(
    _static_order, _results(), removal.NUM_RANDOM, removal.random_band)
PLANTED["a band of the central 50 %"] = lambda: check_the_removal_orders(
    removal.iterative_order, _results(), removal.NUM_RANDOM, lambda r: removal.random_band(r, level=0.5))


def check_pruning_keeps_each_head_s_rows(prune):
    """"Head h owns the features h*d to (h+1)*d - 1 of the projections: the output rows of W_q, W_k, W_v
    (nn.Linear stores its weight as (out, in)) and their biases, and the input columns of W_o": after
    pruning, the layer holds exactly the kept heads' rows and columns, in order."""
    torch.manual_seed(8)
    layer = MultiHeadAttention(12, 4).double()
    original = copy.deepcopy(layer)
    prune(layer, [1, 3])
    d, kept = 3, [0, 2]
    rows = torch.cat([torch.arange(h * d, (h + 1) * d) for h in kept])
    for name in ("W_q", "W_k", "W_v"):
        assert torch.equal(getattr(layer, name).weight, getattr(original, name).weight[rows])
        assert torch.equal(getattr(layer, name).bias, getattr(original, name).bias[rows])
    assert torch.equal(layer.W_o.weight, original.W_o.weight[:, rows])
    assert torch.equal(layer.W_o.bias, original.W_o.bias)


def test_pruning_keeps_each_head_s_rows():
    from solutions.pruning import prune_heads
    check_pruning_keeps_each_head_s_rows(prune_heads)


def _prune_the_other_heads(layer, heads):
    from solutions.pruning import prune_heads
    return prune_heads(layer, [h for h in range(layer.num_heads) if h not in heads][:len(heads)])


PLANTED["pruning the wrong heads"] = lambda: check_pruning_keeps_each_head_s_rows(_prune_the_other_heads)


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


# ------------------------------------------------------------------ chapter 8: positions, generation, data

def check_sinusoidal_positions_formula(sinusoidal):
    """The contract of ``sinusoidal_positions(length, dim, offset=0, base=10000.0)``: "a float32
    tensor (length, dim) whose row t is PE_p at position p = offset + t, with base in place of 10000;
    sines in the even features, cosines in the odd ones", and the hint's angles "positions * inv_freq,
    shape (length, dim / 2), by broadcasting", inv_freq = base ** (-arange(0, dim, 2) / dim)."""
    for length, dim, offset, base in ((5, 2, 0, 10000.0), (7, 8, 3, 10000.0), (4, 6, 11, 100.0)):
        pe = sinusoidal(length, dim, offset=offset, base=base)
        assert pe.shape == (length, dim) and pe.dtype == torch.float32
        positions = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
        inv_freq = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        angles = positions * inv_freq
        assert angles.shape == (length, dim // 2)
        for t in range(length):
            for i in range(dim // 2):
                p = offset + t
                theta = p / base ** (2 * i / dim)
                assert abs(pe[t, 2 * i].item() - np.sin(theta)) < 1e-6, (t, i)
                assert abs(pe[t, 2 * i + 1].item() - np.cos(theta)) < 1e-6, (t, i)
                assert abs(angles[t, i].item() - theta) < 1e-9


def check_rope_formula(rope):
    """The contract of ``apply_rope(x, offset=0, base=10000.0)`` and "This course uses the half-split
    convention": for x (..., L, d), d even (ValueError otherwise), the pair (feature i, feature
    i + d/2) of the vector at position offset + t turns by (offset + t) * base ** (-2i/d)."""
    torch.manual_seed(0)
    for lead, length, d, offset, base in (((), 3, 2, 0, 10000.0), ((2,), 5, 8, 4, 10000.0), ((2, 3), 4, 6, 7, 50.0)):
        x = torch.randn(*lead, length, d, dtype=torch.float64)
        out = rope(x, offset=offset, base=base)
        assert out.shape == x.shape and out.dtype == x.dtype
        for t in range(length):
            for i in range(d // 2):
                a = (offset + t) * base ** (-2 * i / d)
                x1, x2 = x[..., t, i], x[..., t, i + d // 2]
                torch.testing.assert_close(out[..., t, i], x1 * np.cos(a) - x2 * np.sin(a))
                torch.testing.assert_close(out[..., t, i + d // 2], x2 * np.cos(a) + x1 * np.sin(a))
    with pytest.raises(ValueError):
        rope(torch.zeros(2, 3, 5))
    # "the new token then gets position 0's rotation, which is no rotation at all"
    x = torch.randn(3, 1, 8, dtype=torch.float64)
    torch.testing.assert_close(rope(x, offset=0), x)
    assert not torch.allclose(rope(x, offset=5), x)


def test_position_formulas():
    from solutions.language_model import apply_rope, sinusoidal_positions
    check_sinusoidal_positions_formula(sinusoidal_positions)
    check_rope_formula(apply_rope)


def check_a_convention_mismatch_is_silent_nonsense(rope, other):
    """"A model trained with one [pairing] and run with the other ... computes nonsense without any
    error": the rotated scores under the two conventions differ, and neither raises."""
    torch.manual_seed(3)
    q, k = torch.randn(2, 6, 8, dtype=torch.float64), torch.randn(2, 6, 8, dtype=torch.float64)
    ours = rope(q) @ rope(k).transpose(-1, -2)
    theirs = other(q) @ other(k).transpose(-1, -2)
    assert (ours - theirs).abs().max() > 0.1


def test_a_convention_mismatch_is_silent_nonsense():
    from solutions.language_model import apply_rope
    check_a_convention_mismatch_is_silent_nonsense(apply_rope, _adjacent_rope)


PLANTED["the same convention twice"] = lambda: check_a_convention_mismatch_is_silent_nonsense(
    _adjacent_rope, _adjacent_rope)


def check_temperature_sharpens_and_flattens(distribution):
    """"drawing it from softmax(logits / T) is sampling at temperature T (low T sharpens the
    distribution toward greedy, high T flattens it)": as T falls the top probability rises toward 1
    at the argmax; as T rises the entropy rises toward log V."""
    torch.manual_seed(4)
    logits = torch.randn(5, 32, dtype=torch.float64)
    temperatures = [0.01, 0.3, 1.0, 3.0, 100.0]
    probs = [distribution(logits, t) for t in temperatures]
    top = [p.max(-1).values for p in probs]
    entropy = [-(p * p.log()).sum(-1) for p in probs]
    for a, b in zip(top, top[1:]):
        assert (a > b).all()
    for a, b in zip(entropy, entropy[1:]):
        assert (a < b).all()
    assert (probs[0].argmax(-1) == logits.argmax(-1)).all() and (top[0] > 0.99).all()
    assert (entropy[-1] > np.log(32) - 0.01).all()


def test_temperature_sharpens_and_flattens():
    check_temperature_sharpens_and_flattens(lambda logits, t: torch.softmax(logits / t, dim=-1))


PLANTED["logits times the temperature"] = lambda: check_temperature_sharpens_and_flattens(
    lambda logits, t: torch.softmax(logits * t, dim=-1))


def _adjacent_rope(x, offset=0, base=10000.0):
    """Planted: the paper's adjacent pairs (2i, 2i + 1), not the course's halves."""
    from solutions.language_model import apply_rope
    d = x.shape[-1]
    order = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
    return apply_rope(x[..., order], offset, base)[..., torch.argsort(order)]


def _halves_sinusoidal(length, dim, offset=0, base=10000.0):
    """Planted: sines in the first half, cosines in the second."""
    from solutions.language_model import sinusoidal_positions
    pe = sinusoidal_positions(length, dim, offset, base)
    return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)


PLANTED["rope with adjacent pairs"] = lambda: check_rope_formula(_adjacent_rope)
PLANTED["sinusoids in halves"] = lambda: check_sinusoidal_positions_formula(_halves_sinusoidal)


def _sentence_model():
    from lab import induction
    from lab import language_model as lab_lm
    provenance = json.loads((induction.WEIGHTS_DIR / "provenance.json").read_text())["sentences.pt"]
    model = lab_lm.CausalLM(**provenance["config"]).eval()
    model.load_state_dict(torch.load(induction.WEIGHTS_DIR / "sentences.pt", weights_only=True))
    return model, provenance


def check_generate_is_the_loop_the_text_describes(generate, model):
    """"Each new token comes from the logits of the last position: argmax at temperature == 0, else
    one call of torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=generator)
    per step"; "A loop of max_new_tokens steps, each of which chooses one token per row from the
    scores of the last position, appends it, and asks the model for the next scores": generate
    equals that loop written out with full passes, greedy and sampled (same generator seed)."""
    from lab import sentences
    prompt = sentences.encode("the ")[None].repeat(3, 1)
    steps = 9
    for temperature in (0.0, 0.8, 2.0):
        with torch.no_grad():
            got = generate(model, prompt, steps, temperature=temperature,
                           generator=torch.Generator().manual_seed(5))
            tokens, g = prompt, torch.Generator().manual_seed(5)
            for _ in range(steps):
                last = model(tokens)[:, -1, :]
                if temperature == 0:
                    nxt = last.argmax(dim=-1, keepdim=True)
                else:
                    nxt = torch.multinomial(torch.softmax(last / temperature, dim=-1), 1, generator=g)
                tokens = torch.cat([tokens, nxt], dim=1)
        assert got.shape == (3, prompt.shape[1] + steps)
        assert torch.equal(got, tokens), temperature


def test_generate_is_the_loop_the_text_describes():
    from solutions.language_model import generate
    check_generate_is_the_loop_the_text_describes(generate, _sentence_model()[0])


class _Spy(torch.nn.Module):
    """A model that records what each call gets: the number of positions, and whether caches came."""

    def __init__(self, model):
        super().__init__()
        self.model, self.calls = model, []

    def new_caches(self):
        return self.model.new_caches()

    def forward(self, tokens, caches=None):
        self.calls.append((tokens.shape[1], caches is not None))
        return self.model(tokens, caches=caches)


def check_generate_calls_the_model_as_the_text_says(generate, model):
    """"With use_cache, call model(prompt, caches=caches) once with caches = model.new_caches(), then
    model(next_token, caches=caches) with only the new token; without, call model(tokens) on the
    whole sequence at every step." """
    from lab import sentences
    prompt, steps = sentences.encode("the ")[None], 6
    length = prompt.shape[1]
    for use_cache in (True, False):
        spy = _Spy(model)
        with torch.no_grad():
            generate(spy, prompt, steps, use_cache=use_cache)
        if use_cache:
            assert spy.calls[0] == (length, True) and all(c == (1, True) for c in spy.calls[1:]), spy.calls
        else:
            assert spy.calls == [(length + k, False) for k in range(len(spy.calls))], spy.calls
        assert steps - 1 <= len(spy.calls) <= steps, spy.calls


def test_generate_calls_the_model_as_the_text_says():
    from solutions.language_model import generate
    check_generate_calls_the_model_as_the_text_says(generate, _sentence_model()[0])


def _generate_cache_ignored(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    """Planted: never uses the cache."""
    from solutions.language_model import generate
    return generate(model, prompt, max_new_tokens, temperature, generator, use_cache=False)


PLANTED["generate that ignores use_cache"] = lambda: check_generate_calls_the_model_as_the_text_says(
    _generate_cache_ignored, _sentence_model()[0])


def _generate_times_temperature(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    """Planted: multiplies the logits by the temperature (flattens where it should sharpen)."""
    from solutions.language_model import generate
    return generate(model, prompt, max_new_tokens, 1 / temperature if temperature else 0.0, generator, use_cache)


PLANTED["generate that multiplies by the temperature"] = lambda: check_generate_is_the_loop_the_text_describes(
    _generate_times_temperature, _sentence_model()[0])


def check_validation_sets_and_training_sentences(seen, provenance):
    """"400 sentences the model never saw"; "a plain second draw of 400 sentences repeats K training
    sentences word for word, and the curve's validation set repeats K of its N; the curve's
    'validation' is therefore partly text the model trained on": the held-out draw has 400 sentences
    none of which is a training sentence; a plain draw and the curve's validation set repeat some."""
    from lab import sentences
    recipe = provenance["recipe"]
    plain = sentences.complete_sentences(sentences.text(400, seed=11))
    curve_val = sentences.complete_sentences(sentences.text(recipe["val_sentences"], provenance["data_seeds"]["val"]))
    unseen = sentences.complete_sentences(sentences.unseen_text(400, seed=11, seen=seen))
    assert len(unseen) == 400 and not any(s in seen for s in unseen)
    assert sum(s in seen for s in plain) > 0 and sum(s in seen for s in curve_val) > 0
    assert len(curve_val) == recipe["val_sentences"]


def test_validation_sets_and_training_sentences():
    from lab import sentences
    _, provenance = _sentence_model()
    seen = sentences.sentence_set(provenance["recipe"]["train_sentences"], provenance["data_seeds"]["train"])
    check_validation_sets_and_training_sentences(seen, provenance)


PLANTED["no training sentence known"] = lambda: check_validation_sets_and_training_sentences(
    frozenset(), _sentence_model()[1])


# ------------------------------------------------------------------ chapter 8: the ten induction models

def _induction_record():
    from lab import induction
    return json.loads((induction.WEIGHTS_DIR / "induction_results.json").read_text())


def check_induction_record_says_what_the_text_says(record):
    """The ten-seed table of chapter 8 (recomputed on the page; its record equals the committed
    weights' analysis, tests/test_language_model_lab.py::test_induction_record_is_what_the_committed_weights_give):
    "The same on the ten seeds"; "Ten seeds: heads found (score) and the repeat's loss in nats
    (chance X)"; "The heads are there on every seed: on K of N seeds, layer 0 has at least one
    previous-token head and layer 1 at least one induction head; the best of them score ...";
    "The cut at 0.3 that defines the circuit": the circuit is every layer-0 head whose previous-token
    score and every layer-1 head whose induction score is above 0.3; "analyse compares the top pair
    with the pairs that share no head with it" and "without another pair at most X": the max over
    the 9 pairs of one other head of each layer; "Removing only the top pair raised the repeat's loss"."""
    from lab import induction
    assert sorted(map(int, record)) == list(range(10)) and induction.SEEDS == tuple(range(10))
    assert induction.THRESHOLD == 0.3
    for seed, r in record.items():
        assert np.isclose(r["chance"], induction.CHANCE), seed
        prev, ind = np.array(r["previous_token_scores"]), np.array(r["induction_scores"])
        circuit = {tuple(h) for h in r["circuit"]}
        assert circuit == ({(0, h) for h in range(4) if prev[0, h] > 0.3} | {(1, h) for h in range(4) if ind[1, h] > 0.3})
        assert any(l == 0 for l, _ in circuit) and any(l == 1 for l, _ in circuit), f"seed {seed}: a layer has no head"
        assert tuple(r["previous_token_head"]) == (0, int(prev[0].argmax())) and np.isclose(r["previous_token_score"], prev[0].max())
        assert tuple(r["induction_head"]) == (1, int(ind[1].argmax())) and np.isclose(r["induction_score"], ind[1].max())
        top = (r["previous_token_head"][1], r["induction_head"][1])
        pairs = {tuple(map(int, k.split(","))) for k in r["loss_repeat_without_other_pairs"]}
        assert pairs == {(a, b) for a in range(4) for b in range(4) if a != top[0] and b != top[1]}, seed
        assert np.isclose(r["loss_repeat_without_other_pairs_max"], max(r["loss_repeat_without_other_pairs"].values()))
        assert r["loss_repeat_without_pair"] > r["loss_repeat"], f"seed {seed}: removing the pair lowered the loss"


def test_induction_record_says_what_the_text_says():
    check_induction_record_says_what_the_text_says(_induction_record())


def _record_with_a_seed_without_induction_heads():
    record = copy.deepcopy(_induction_record())
    scores = np.array(record["3"]["induction_scores"])
    scores[1] = 0.1
    record["3"]["induction_scores"] = scores.tolist()
    return record


PLANTED["a seed without an induction head"] = lambda: check_induction_record_says_what_the_text_says(
    _record_with_a_seed_without_induction_heads())
PLANTED["nine seeds"] = lambda: check_induction_record_says_what_the_text_says(
    {k: v for k, v in _induction_record().items() if k != "9"})


def check_induction_models_are_what_the_text_says(model):
    """"What these models are not. They are two layers without MLPs, on a task made to need copying,
    with positions from a learned table.\""""
    assert model.num_layers == len(model.blocks) == 2
    assert all(block.mlp is None for block in model.blocks)
    assert isinstance(model.pos, torch.nn.Embedding)
    tokens = torch.zeros(1, 5, dtype=torch.long)
    with torch.no_grad():
        moved = copy.deepcopy(model)
        moved.pos.weight.add_(1.0)
        assert not torch.allclose(model(tokens), moved(tokens)), "the table is not what gives the positions"


def test_induction_models_are_what_the_text_says():
    from lab import induction
    for seed in (0, 9):
        check_induction_models_are_what_the_text_says(induction.load_model(seed, MultiHeadAttention))


def _induction_model_with_sinusoids():
    from lab import induction
    from lab import language_model as lab_lm
    from solutions.language_model import sinusoidal_positions
    config = dict(induction.CONFIG, learned_positions=0)
    return lab_lm.CausalLM(**config, attention_class=MultiHeadAttention, positions=sinusoidal_positions).eval()


PLANTED["an induction model with sinusoids"] = lambda: check_induction_models_are_what_the_text_says(
    _induction_model_with_sinusoids())


# ------------------------------------------------------------------ every chapter: the hosted-install cell

def check_hosted_cell_fails_in_place(source, monkeypatch):
    """The hosted-install cell's comment "fails here, not three cells down, if the install did not
    take": on a hosted kernel without the course, an install that runs but leaves no package makes
    the cell itself raise ModuleNotFoundError, at its own last line."""
    import subprocess
    import sys
    import traceback
    source = source.replace("COURSE_PACKAGE_URL = None", "COURSE_PACKAGE_URL = 'file:///nowhere/course.whl'")
    monkeypatch.setenv("COLAB_RELEASE_TAG", "test")
    monkeypatch.setitem(sys.modules, "mha_exercises", None)  # this kernel lacks the course
    monkeypatch.setattr(sys, "path", list(sys.path))  # the cell adds the user site directory
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: None)  # pip ran; nothing was installed
    code = compile(source, "<hosted-install>", "exec")
    try:
        exec(code, {"__name__": "__main__"})
    except ModuleNotFoundError as error:
        raised = error
    else:
        raise AssertionError("the cell ran to its end without the package")
    line = traceback.extract_tb(raised.__traceback__)[-1]
    assert line.filename == "<hosted-install>" and source.splitlines()[line.lineno - 1].strip().startswith(
        "import mha_exercises"), line


def _hosted_source(name):
    (cell,) = [c for c in _cells(name) if c.get("id") == "hosted-install"]
    return "".join(cell["source"])


@pytest.mark.parametrize("name", sorted(p.name for p in BOOK.glob("0[1-8]_*.ipynb")))
def test_hosted_cell_fails_in_place(name, monkeypatch):
    check_hosted_cell_fails_in_place(_hosted_source(name), monkeypatch)


def _without_the_last_import(monkeypatch):
    source = "\n".join(l for l in _hosted_source("01_attention.ipynb").splitlines() if not l.strip().startswith("import mha_exercises"))
    check_hosted_cell_fails_in_place(source, monkeypatch)


def _planted_hosted():
    with pytest.MonkeyPatch.context() as monkeypatch:
        _without_the_last_import(monkeypatch)


PLANTED["a hosted cell without its import"] = _planted_hosted


# ------------------------------------------------------------------ chapter 2: masks

def _chapter_cell(name, cell_id, namespace):
    (cell,) = [c for c in _cells(name) if c.get("id") == cell_id]
    exec(compile("".join(cell["source"]), f"<{cell_id}>", "exec"), namespace)
    return namespace


def check_the_batch_of_three_sentences(namespace):
    """"Here is a batch of three sentences of lengths 4, 2 and 5, padded to five tokens" (cell 02-003)."""
    assert namespace["valid_lens"].tolist() == [4, 2, 5] and namespace["Lk"] == 5
    assert all(len(row) == 5 for row in namespace["padded"])


def test_the_batch_of_three_sentences(capsys):
    check_the_batch_of_three_sentences(_chapter_cell("02_masking.ipynb", "02-003", {"np": np}))


PLANTED["a batch of other lengths"] = lambda: check_the_batch_of_three_sentences(
    {"valid_lens": np.array([4, 2, 4]), "Lk": 5, "padded": [[0] * 5] * 3})


def check_masks_of_the_three_sentences(sdpa, padding_mask, causal_mask):
    """On the chapter's lengths 4, 2, 5 padded to 5: "Attention as written in the previous chapter lets
    every query look at every key" (no mask: every weight positive); "Every query row above still has
    at least one allowed key" (right padding AND causal); "Self-attention on the left-padded batch,
    with padding and look-ahead combined: in the heatmap of sentence 1 (two real tokens after three
    padding positions), the rows of the three queries with nothing to see are zero, and so are their
    outputs"."""
    rng = np.random.default_rng(0)
    lens, L = np.array([4, 2, 5]), 5
    x, v = rng.standard_normal((3, L, 8)), rng.standard_normal((3, L, 4))
    _, w = sdpa(x, x, v)
    assert (w > 0).all()
    right = padding_mask(lens, L) & causal_mask(L)
    assert right.shape == (3, L, L) and right.any(-1).all()
    left = padding_mask(lens, L)[..., ::-1] & causal_mask(L)
    assert left[1].any(-1).tolist() == [False, False, False, True, True]
    out, w = sdpa(x, x, v, left)
    assert not w[1, :3].any() and not out[1, :3].any()
    assert np.allclose(w[1, 3:].sum(-1), 1) and out[1, 3:].any()


def test_masks_of_the_three_sentences():
    from solutions import attention, masking
    check_masks_of_the_three_sentences(attention.scaled_dot_product_attention, masking.padding_mask, masking.causal_mask)


def _sdpa_ignoring_the_mask(q, k, v, mask=None):
    from solutions import attention
    return attention.scaled_dot_product_attention(q, k, v)


PLANTED["attention that ignores its mask, on the three sentences"] = lambda: check_masks_of_the_three_sentences(
    _sdpa_ignoring_the_mask, __import__("solutions.masking", fromlist=["x"]).padding_mask,
    __import__("solutions.masking", fromlist=["x"]).causal_mask)
PLANTED["a start-aligned padding"] = lambda: check_masks_of_the_three_sentences(
    __import__("solutions.attention", fromlist=["x"]).scaled_dot_product_attention,
    lambda lens, n: np.ones((len(lens), 1, n), dtype=bool),
    __import__("solutions.masking", fromlist=["x"]).causal_mask)


def check_a_large_fill_averages_the_padding(fill_softmax):
    """Chapter 2 on d2l's fill: with every key of a row masked and the scores filled with -1e6, the
    row's weights are uniform, so "That output is not zero, and it depends on whatever the padding
    positions happen to hold: change only the values at the masked positions, and it changes" (the
    printed "mean of all value rows" is that output)."""
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((2, 4))
    mask = np.array([[True, True, False, False], [False, False, False, False]])
    w = fill_softmax(scores, mask)
    values = rng.standard_normal((4, 3))
    other = values.copy()
    other[2:] = rng.standard_normal((2, 3))
    assert (w @ values)[1].any() and np.allclose((w @ values)[1], values.mean(0))
    assert not np.allclose((w @ values)[1], (w @ other)[1])
    assert np.allclose((w @ values)[0], (w @ other)[0]), "a row with allowed keys should not see the padding"


def _fill(fill):
    def fill_softmax(scores, mask):
        filled = np.where(mask, scores, fill)
        e = np.exp(filled - filled.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return fill_softmax


def test_a_large_fill_averages_the_padding():
    check_a_large_fill_averages_the_padding(_fill(-1e6))


PLANTED["a masked softmax that zeroes the masked row"] = lambda: check_a_large_fill_averages_the_padding(
    __import__("solutions.masking", fromlist=["x"]).masked_softmax)


def check_float16_range(dtype):
    """"Half precision ... has a much smaller range": its largest number is 65504 (float32's is about
    3.4e38), so a fill of -1e9 becomes -inf in it while -1e4 stays finite."""
    assert int(np.finfo(dtype).max) == 65504 and np.finfo(np.float32).max > 1e38
    with np.errstate(over="ignore"):
        assert np.isneginf(dtype(-1e9)) and np.isfinite(dtype(-1e4))


def test_float16_range():
    check_float16_range(np.float16)


PLANTED["float32 taken for half precision"] = lambda: check_float16_range(np.float32)


def check_pytorch_layer_takes_the_inverted_mask(invert):
    """"So convert at the boundary, once: key_padding_mask = ~mask and attn_mask = ~mask going into
    nn.MultiheadAttention": with the course's mask (True = may attend) inverted, the layer's weights
    are zero exactly on the forbidden pairs, and its output is the course's attention of the same
    projections."""
    from solutions import masking
    torch.manual_seed(0)
    lens, L, E = np.array([4, 2, 5]), 5, 8
    keep = masking.padding_mask(lens, L)[:, 0]  # (B, Lk)
    causal = masking.causal_mask(L)
    layer = torch.nn.MultiheadAttention(E, 2, batch_first=True).double().eval()
    x = torch.randn(3, L, E, dtype=torch.float64)
    with torch.no_grad():
        _, w = layer(x, x, x, key_padding_mask=torch.from_numpy(invert(keep)),
                     attn_mask=torch.from_numpy(invert(causal)), average_attn_weights=False)
    allowed = torch.from_numpy(keep[:, None, None, :] & causal[None, None])
    assert not torch.isnan(w).any() and (w[~allowed.expand_as(w)] == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))


def test_pytorch_layer_takes_the_inverted_mask():
    check_pytorch_layer_takes_the_inverted_mask(lambda m: ~m)


PLANTED["the course's mask passed as is"] = lambda: check_pytorch_layer_takes_the_inverted_mask(lambda m: m)


def check_the_first_try_rows(namespace):
    """Chapter 2's cell f9f0281f: "the fully masked row (query 1) is ..." and, of the same rows in cell
    02-033, "keys 2 and 3 are masked in every row"."""
    mask = namespace["row_mask"]
    assert mask.shape == (2, 4) and not mask[1].any() and mask[0].any()
    assert not mask[:, 2:].any()


def test_the_first_try_rows():
    from solutions import masking
    check_the_first_try_rows(_chapter_cell("02_masking.ipynb", "f9f0281f",
                                           {"np": np, "masking": masking, "print": lambda *a, **k: None}))


PLANTED["rows with key 2 allowed"] = lambda: check_the_first_try_rows(
    {"row_mask": np.array([[True, True, True, False], [False] * 4])})


# ------------------------------------------------------------------ chapter 4: the layer

def check_a_missing_bias_is_no_bias(mha):
    """The contract of multi_head_attention: "Project with x @ W + b (a bias missing from params means
    no bias), split into heads ..., and apply W_o, b_o": leaving a bias out equals a zero bias, and a
    given bias is used."""
    rng = np.random.default_rng(5)
    E, H, d = 6, 2, 3
    p = {n: rng.standard_normal((E, H * d)) for n in ("W_q", "W_k", "W_v")} | {"W_o": rng.standard_normal((H * d, E))}
    biases = {"b_q": rng.standard_normal(H * d), "b_k": rng.standard_normal(H * d), "b_v": rng.standard_normal(H * d),
              "b_o": rng.standard_normal(E)}
    x = rng.standard_normal((2, 4, E))
    out = mha(x, x, x, p, H)[0]
    zeros = mha(x, x, x, p | {k: np.zeros_like(v) for k, v in biases.items()}, H)[0]
    assert np.allclose(out, zeros)
    for name, b in biases.items():
        # b_k adds q . b_k to every score of a query's row: the softmax does not see it
        assert np.allclose(mha(x, x, x, p | {name: b}, H)[0], out) == (name == "b_k"), f"{name}"


def test_a_missing_bias_is_no_bias():
    from solutions import layer
    check_a_missing_bias_is_no_bias(layer.multi_head_attention)


def _ignores_b_v(query, key, value, params, num_heads, mask=None):
    from solutions import layer
    return layer.multi_head_attention(query, key, value, {k: v for k, v in params.items() if k != "b_v"}, num_heads, mask)


PLANTED["a layer that drops the value bias"] = lambda: check_a_missing_bias_is_no_bias(_ignores_b_v)


def check_an_empty_item_beside_a_full_one(layer_cls):
    """Chapter 4's cell on an item with no valid key beside one with all 6: "item 0 (6 valid keys) still
    agrees with torch" (with the mask converted), while ours gives item 1 zero weights and the output
    bias b_o; and F.scaled_dot_product_attention "does not return the weights" (one tensor)."""
    torch.manual_seed(6)
    B, Lq, Lk, E, H = 2, 4, 6, 12, 3
    ref = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64).eval()
    ours = layer_cls.from_torch(ref).eval()
    query, key = torch.randn(B, Lq, E, dtype=torch.float64), torch.randn(B, Lk, E, dtype=torch.float64)
    allowed = torch.zeros(B, 1, Lk, dtype=torch.bool)
    allowed[0] = True
    with torch.no_grad():
        out, w = ours(query, key, key, mask=allowed)
        ref_out, _ = ref(query, key, key, key_padding_mask=~allowed[:, 0])
    assert (out[0] - ref_out[0]).abs().max() < 1e-12
    assert (w[1] == 0).all() and torch.allclose(out[1], ours.W_o.bias.expand_as(out[1]))
    fused = torch.nn.functional.scaled_dot_product_attention(query[:, None], key[:, None], key[:, None])
    assert isinstance(fused, torch.Tensor) and fused.shape == (B, 1, Lq, E)


def test_an_empty_item_beside_a_full_one():
    check_an_empty_item_beside_a_full_one(MultiHeadAttention)


class _MaskAsIs(MultiHeadAttention):
    """Planted: reads the mask with PyTorch's convention (True = ignore)."""

    def forward(self, query, key, value, mask=None, **kwargs):
        return super().forward(query, key, value, mask=None if mask is None else ~mask, **kwargs)


PLANTED["a layer reading True as ignore"] = lambda: check_an_empty_item_beside_a_full_one(_MaskAsIs)


def check_a_mask_is_shared_by_the_heads(layer_cls):
    """Chapter 4's layer: "mask is boolean, True = may attend; (Lq, Lk) and (B, Lq, Lk) masks are shared
    by all heads": every head's weights are zero exactly where the mask is False, and an (Lq, Lk) mask
    is the (B, Lq, Lk) one repeated over the batch."""
    torch.manual_seed(9)
    layer = layer_cls(12, 3).double().eval()
    q, kv = torch.randn(2, 4, 12, dtype=torch.float64), torch.randn(2, 5, 12, dtype=torch.float64)
    mask = torch.rand(4, 5) < 0.6
    mask[:, 0] = True
    with torch.no_grad():
        out2, w2 = layer(q, kv, kv, mask=mask)
        out3, w3 = layer(q, kv, kv, mask=mask.expand(2, 4, 5))
    torch.testing.assert_close(out2, out3)
    torch.testing.assert_close(w2, w3)
    assert (w2[:, :, ~mask] == 0).all() and (w2[:, :, mask] > 0).all()
    torch.testing.assert_close(w2.sum(-1), torch.ones(2, 3, 4, dtype=torch.float64))


def test_a_mask_is_shared_by_the_heads():
    check_a_mask_is_shared_by_the_heads(MultiHeadAttention)


PLANTED["a layer reading True as ignore, shared mask"] = lambda: check_a_mask_is_shared_by_the_heads(_MaskAsIs)


class _NoPlots:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def check_the_three_hand_set_heads(namespace):
    """Chapter 4's hand-set heads (cell c04-36, run here): "head 0's query projection maps position i to
    i - 1 (previous token), head 1's maps every position to 0 (first token)" with "row i -> one-hot of
    i-1" and "token 0 has no previous token: itself"; the block-diagonal matrix "(H*d, H*d): head h's
    block acts on head h's features only"."""
    w = namespace["demo_w"][0].numpy()  # (H, L, L)
    L = w.shape[-1]
    previous, block = namespace["previous"], namespace["block_diagonal"]
    assert all(previous[i].argmax() == max(i - 1, 0) and previous[i].sum() == 1 for i in range(L))
    assert w[0, 0].argmax() == 0 and all(w[0, i].argmax() == i - 1 for i in range(1, L))
    assert all(w[1, i].argmax() == 0 for i in range(L))
    assert all(w[0, i, i - 1] > 0.9 for i in range(2, L)) and all(w[1, i, 0] > 0.9 for i in range(L))
    d = previous.shape[0]
    m = block([np.full((d, d), h + 1.0) for h in range(3)])
    for h in range(3):
        x = np.zeros(3 * d)
        x[h * d:(h + 1) * d] = 1.0
        y = x @ m
        assert not y[:h * d].any() and not y[(h + 1) * d:].any() and y[h * d:(h + 1) * d].any()


def _three_heads_namespace(layer_cls=MultiHeadAttention):
    from solutions import masking

    class _Layer:
        MultiHeadAttention = layer_cls
    namespace = {"np": np, "torch": torch, "rng": np.random.default_rng(0), "masking": masking,
                 "layer": _Layer, "plots": _NoPlots()}
    return _chapter_cell("04_layer.ipynb", "c04-36", namespace)


def test_the_three_hand_set_heads():
    check_the_three_hand_set_heads(_three_heads_namespace())


class _HeadsReversed(MultiHeadAttention):
    """Planted: returns the heads' weights in reverse order."""

    def forward(self, *args, **kwargs):
        out, w = super().forward(*args, **kwargs)
        return out, w.flip(1)


PLANTED["heads' weights in another order"] = lambda: check_the_three_hand_set_heads(_three_heads_namespace(_HeadsReversed))


# ------------------------------------------------------------------ chapter 5: the red/blue/majority model

class _Recording(MultiHeadAttention):
    """The chapter-4 layer, recording its input and adding noise to every output row but the last
    (the query ``?``), to see what the loss reads."""
    noise = 0.0

    def forward(self, query, key, value, **kwargs):
        self.seen = query.detach().clone()
        out, weights = super().forward(query, key, value, **kwargs)
        if self.noise:
            out = out.clone()
            out[:, :-1] += self.noise * torch.randn_like(out[:, :-1])
        return out, weights


def check_the_heads_task_model(model, make_batch, reads_last_row_only=True):
    """Chapter 5: "Because W_V is linear, W_V x_j = W_V(digit_j) + W_V(colour_j): the digit part of a red 3
    and of a blue 3 is the same vector"; "A head that put half its weight on the red digit and half on
    the blue one would output half the sum of the two digits' vectors, which says which two digits
    they are but not which one is red"; "Only the last row, the query ?, is read by the loss"; "The
    task of this chapter has no mask and no padding: the ? row always has all 13 keys"; "the majority
    digit's uncoloured copies (up to four) outnumber the one red and the one blue digit"."""
    from lab import heads_task as ht
    tokens, colours, targets = make_batch(300, np.random.default_rng(7))
    for n in range(len(tokens)):
        digits, marks = tokens[n, :-1], colours[n, :-1]
        uncoloured_majority = int(((digits == targets[n, 2]) & (marks == ht.PLAIN)).sum())
        assert 2 <= uncoloured_majority <= 4, n
        assert int((marks == ht.RED).sum()) == 1 == int((marks == ht.BLUE).sum())
    attn = model.attention
    with torch.no_grad():
        pair = torch.tensor([[3, 3, ht.QUERY]]), torch.tensor([[ht.RED, ht.BLUE, ht.PLAIN]])
        model(*pair)
        x = attn.seen[0]
        torch.testing.assert_close(x[0] - model.colour.weight[ht.RED], x[1] - model.colour.weight[ht.BLUE])
        v = attn.W_v(x)
        torch.testing.assert_close(v[0] - v[1], attn.W_v.weight @ (model.colour.weight[ht.RED] - model.colour.weight[ht.BLUE]))
        # half on the red digit, half on the blue: swapping which digit is red changes only the colour part
        one, _ = model(torch.tensor([[3, 5, ht.QUERY]]), torch.tensor([[ht.RED, ht.BLUE, ht.PLAIN]]))
        x35 = attn.seen[0]
        model(torch.tensor([[5, 3, ht.QUERY]]), torch.tensor([[ht.RED, ht.BLUE, ht.PLAIN]]))
        x53 = attn.seen[0]
        half35, half53 = attn.W_v(x35[:2]).mean(0), attn.W_v(x53[:2]).mean(0)
        torch.testing.assert_close(half35, half53)
        logits, weights = model(tokens[:50], colours[:50])
        assert weights.shape[-1] == 13 and (weights[:, :, -1] > 0).all()
        if reads_last_row_only:
            attn.noise = 1.0
            try:
                noisy, _ = model(tokens[:50], colours[:50])
            finally:
                attn.noise = 0.0
            for task in logits:
                torch.testing.assert_close(noisy[task], logits[task])


def check_where_each_head_looks(at_query, test_cell):
    """Chapter 5: "here is where each head looks from ? on average over the 2,000 test examples: the
    weight on the red digit, on the blue digit, and on the uncoloured copies of the majority digit
    together"; "the last row is what a head spreading its weight evenly over the 13 keys would give"."""
    from lab import heads_task as ht
    assert re.search(r"^test = task\.make_batch\(2000,", test_cell, re.M)
    tokens, colours, targets = ht.make_batch(200, np.random.default_rng(3))
    weights = torch.rand(200, 2, 13, 13)
    weights = weights / weights.sum(-1, keepdim=True)
    looks = at_query(None, tokens, colours, weights=weights)
    assert looks.shape == (2, 3)
    q = weights[:, :, -1].numpy()
    d, c = tokens[:, :-1].numpy(), colours[:, :-1].numpy()
    red = np.array([q[n, :, :-1][:, c[n] == ht.RED].sum(-1) for n in range(200)]).mean(0)
    blue = np.array([q[n, :, :-1][:, c[n] == ht.BLUE].sum(-1) for n in range(200)]).mean(0)
    majority = np.array([q[n, :, :-1][:, (d[n] == int(targets[n, 2])) & (c[n] == ht.PLAIN)].sum(-1)
                         for n in range(200)]).mean(0)
    assert np.allclose(looks, np.stack([red, blue, majority], -1), atol=1e-6)
    uniform = at_query(None, tokens, colours, weights=torch.full((200, 1, 13, 13), 1 / 13))[0]
    uncoloured = np.mean([((d[n] == int(targets[n, 2])) & (c[n] == ht.PLAIN)).sum() for n in range(200)])
    assert np.allclose(uniform, [1 / 13, 1 / 13, uncoloured / 13], atol=1e-6)


def test_where_each_head_looks():
    from lab import heads_task as ht
    check_where_each_head_looks(ht.attention_at_query, _cell_source("05_looking_at_heads.ipynb", "15b7e44a"))


def _looks_with_the_coloured_majority(model, tokens, colours, weights=None):
    """Planted: the majority column counts every copy of the majority digit, coloured ones included."""
    from lab import heads_task as ht
    at_query = weights[:, :, -1, :-1]
    digits = tokens[:, :-1]
    majority = torch.stack([(digits == d).sum(-1) for d in range(ht.NUM_DIGITS)], dim=-1).argmax(-1)
    targets = [colours[:, :-1] == ht.RED, colours[:, :-1] == ht.BLUE, digits == majority[:, None]]
    return torch.stack([(at_query * t[:, None]).sum(-1).mean(0) for t in targets], dim=-1).numpy()


PLANTED["a majority column that counts coloured copies"] = lambda: check_where_each_head_looks(
    _looks_with_the_coloured_majority, _cell_source("05_looking_at_heads.ipynb", "15b7e44a"))


def _heads_model():
    from lab import heads_task as ht
    torch.manual_seed(0)
    return ht.HeadsModel(_Recording)


def test_the_heads_task_model():
    from lab import heads_task as ht
    check_the_heads_task_model(_heads_model(), ht.make_batch)


class _ReadsEveryRow(torch.nn.Module):
    """Planted: a model reading the mean of every row, not the query's."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.attention, self.colour = inner, inner.attention, inner.colour

    def forward(self, tokens, colours, head_mask=None):
        x = self.inner.digit(tokens) + self.inner.colour(colours)
        out, weights = self.attention(x, x, x, head_mask=head_mask)
        return {t: self.inner.readout[t](out.mean(1)) for t in self.inner.readout}, weights


def _majority_of_two(num, rng):
    from lab import heads_task as ht
    tokens, colours, targets = ht.make_batch(num, rng)
    for n in range(num):  # colour two of the majority's copies: only two uncoloured left at most
        where = np.flatnonzero(tokens[n, :-1].numpy() == int(targets[n, 2]))
        colours[n, :-1] = ht.PLAIN
        colours[n, where[0]], colours[n, where[1]] = ht.RED, ht.BLUE
        colours[n, where[2]] = ht.RED
    return tokens, colours, targets


PLANTED["a model that reads every row"] = lambda: check_the_heads_task_model(
    _ReadsEveryRow(_heads_model()), __import__("lab.heads_task", fromlist=["x"]).make_batch)
PLANTED["a batch with fewer uncoloured majority copies"] = lambda: check_the_heads_task_model(
    _heads_model(), _majority_of_two)


def check_attention_times_take_turns(attention_times, monkeypatch):
    """Chapter 7: "The times (measure.attention_times) are five repeats of each, the two versions taking
    turns" (after one warm-up round that is not kept)."""
    from lab import measure
    order = []
    monkeypatch.setattr(measure, "_attention_call", lambda kind, *a: (lambda: order.append(kind)))
    samples = attention_times(64, 16, 8)
    assert len(samples["plain"]) == len(samples["chunked"]) == 5
    assert order == ["plain", "chunked"] * 6, order


def test_attention_times_take_turns(monkeypatch):
    from lab import measure
    check_attention_times_take_turns(measure.attention_times, monkeypatch)


def _one_after_the_other(length, chunk_size=256, head_dim=64, repeats=5):
    from lab import measure
    calls = {kind: measure._attention_call(kind, length, chunk_size, head_dim) for kind in ("plain", "chunked")}
    out = {}
    for kind, call in calls.items():
        out[kind] = []
        for _ in range(repeats):
            call()
            out[kind].append(0.0)
    return out


def _planted_times():
    with pytest.MonkeyPatch.context() as monkeypatch:
        check_attention_times_take_turns(_one_after_the_other, monkeypatch)


PLANTED["timings one version after the other"] = _planted_times


def check_saved_tensors_are_counted_once(saved_mib, monkeypatch):
    """Chapter 7: "measure.saved_for_backward_mib counts, exactly, the tensors that autograd keeps from
    the forward pass for the backward pass (through saved_tensors_hooks, each storage once)": a forward
    pass q * q keeps q twice, one storage of L * d float32."""
    from lab import measure
    monkeypatch.setattr(measure, "_plain_attention", lambda q, k, v: q * q)
    assert saved_mib("plain", 256, head_dim=64) == 256 * 64 * 4 / 2**20
    monkeypatch.setattr(measure, "_plain_attention", lambda q, k, v: q * k)
    assert saved_mib("plain", 256, head_dim=64) == 2 * 256 * 64 * 4 / 2**20


def test_saved_tensors_are_counted_once(monkeypatch):
    from lab import measure
    check_saved_tensors_are_counted_once(measure.saved_for_backward_mib, monkeypatch)


def _every_tensor_counted(kind, length, chunk_size=256, head_dim=64):
    """Planted: counts every saved tensor, the same storage as often as it is saved."""
    from lab import measure
    q, k, v = (torch.randn(1, 1, length, head_dim, requires_grad=True) for _ in range(3))
    total = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: total.append(t.nbytes) or t, lambda t: t):
        measure._plain_attention(q, k, v)
    return sum(total) / 2**20


def _planted_saved():
    with pytest.MonkeyPatch.context() as monkeypatch:
        check_saved_tensors_are_counted_once(_every_tensor_counted, monkeypatch)


PLANTED["saved tensors counted every time"] = _planted_saved


# ------------------------------------------------------------------ chapter 7: the cache against the weights

def check_cache_against_weights(namespace):
    """Chapter 7's cell 0e3c41bf, run here: "KV cache of one 4096-token sequence, 32 layers of 32 query
    heads of dimension 128" in float16 is keys and values at every layer, head and position; "for one
    sequence of 4096 tokens the MHA cache is X GiB against Y GiB of weights, and it overtakes them only
    once the batch times the context exceeds about Z tokens": Z is where the two are equal, and the
    cache grows linearly in the tokens."""
    n = namespace
    assert (n["layers"], n["heads"], n["d"], n["context"], n["bytes_per"]) == (32, 32, 128, 4096, 2)
    per_token = n["mha_bytes_per_token"]
    assert per_token == 2 * 32 * 32 * 128 * 2  # keys and values, every layer and head, float16
    cache = per_token * n["context"]
    assert cache / 2**30 == 2.0 and round(n["weight_bytes"] / 2**30, 1) == 12.5
    equal = n["weight_bytes"] / per_token
    assert cache < n["weight_bytes"] and per_token * equal == pytest.approx(n["weight_bytes"])
    assert per_token * (equal - 1) < n["weight_bytes"] < per_token * (equal + 1)


def _cache_namespace(patch=None):
    from solutions import efficient

    namespace = {"efficient": efficient, "print": lambda *a, **k: None}
    source = "".join(next(c for c in _cells("07_beyond.ipynb") if c.get("id") == "0e3c41bf")["source"])
    if patch:
        source = source.replace(*patch)
    exec(compile(source, "<0e3c41bf>", "exec"), namespace)
    return namespace


def test_cache_against_weights():
    check_cache_against_weights(_cache_namespace())


PLANTED["a cache of keys only"] = lambda: check_cache_against_weights(
    _cache_namespace(("mha_bytes_per_token = 2 * layers", "mha_bytes_per_token = 1 * layers")))


# ------------------------------------------------------------------ chapters 1 and 3: cells run here

def check_the_first_lookup(namespace):
    """Chapter 1's cell 01-003: "(Lk, d_v) = (3, 3): value j is the j-th unit vector"; "Key 2 gets the
    largest score and X of the weight, but keys 0 and 1 still contribute: the output is a blend, not a
    copy"."""
    values, weights = namespace["values"], namespace["weights"]
    assert values.shape == (3, 3) and all(np.array_equal(values[j], np.eye(3)[j]) for j in range(3))
    assert namespace["scores"].argmax() == 2 and weights.argmax() == 2 and weights[2] < 1
    assert (weights[:2] > 0.01).all()
    output = weights @ values
    assert np.allclose(output, weights) and np.count_nonzero(output > 0.01) == 3


def test_the_first_lookup():
    check_the_first_lookup(_chapter_cell("01_attention.ipynb", "01-003", {"np": np, "print": lambda *a, **k: None}))


PLANTED["a lookup that copies one value"] = lambda: check_the_first_lookup(
    {"values": np.eye(3), "scores": np.array([0.0, 1.0, 9.0]), "weights": np.array([0.0, 0.0, 1.0])})


def check_the_scale_measurement(source):
    """Chapter 1's cell 01-017 run here on two widths: "The next cell measures both effects for one query
    against 16 random keys, 1,000 trials per width, with and without the scale: the mean largest
    weight, and the mean (Frobenius) norm of the Jacobian"; "The Jacobian above is Lk x Lk per query"
    (its entry [i, j] is d p_i / d s_j, checked against finite differences)."""
    from solutions import attention
    namespace = {"np": np, "math": __import__("math"), "attention": attention, "rng": np.random.default_rng(0),
                 "dims": [4, 64]}
    exec(compile(source, "<01-017>", "exec"), namespace)
    assert (namespace["num_keys"], namespace["trials"]) == (16, 1000)
    for name in ("unscaled", "scaled"):
        assert len(namespace["max_weight"][name]) == len(namespace["jacobian_norm"][name]) == 2
    s = np.random.default_rng(1).standard_normal(16)
    p = attention.softmax(s)
    jacobian = namespace["softmax_jacobian"](p)
    assert jacobian.shape == (16, 16)
    eps = 1e-6
    numeric = np.stack([(attention.softmax(s + eps * np.eye(16)[j]) - attention.softmax(s - eps * np.eye(16)[j])) / (2 * eps)
                        for j in range(16)], axis=1)
    assert np.allclose(jacobian, numeric, atol=1e-8)
    assert namespace["max_weight"]["unscaled"][1] > namespace["max_weight"]["scaled"][1]


def test_the_scale_measurement():
    check_the_scale_measurement(_cell_source("01_attention.ipynb", "01-017"))


PLANTED["a Jacobian without its diagonal term"] = lambda: check_the_scale_measurement(
    _cell_source("01_attention.ipynb", "01-017").replace("(np.eye(p.shape[-1]) - p[..., None, :])", "(0 - p[..., None, :])"))


def check_the_two_hand_built_heads(namespace):
    """Chapter 3's cell c03-03: "L = 6 tokens, H = 2 heads of d = 6 features"; "In head 0 the query of
    token i is the one-hot vector of position i-1, in head 1 it is the one-hot vector of position 0;
    the keys are scaled one-hot vectors of their own position"; "token 0 has no previous token: let
    head 0 look at itself" (so head 0 weighs the previous token, head 1 the first)."""
    n = namespace
    L, H, d = n["L"], n["H"], n["d"]
    q, k = n["q"][0], n["k"][0]
    assert (L, H, d) == (6, 2, 6) and q.shape == k.shape == (L, H * d)
    eye = np.eye(L)
    for i in range(L):
        assert np.array_equal(q[i, :d], eye[max(i - 1, 0)]) and np.array_equal(q[i, d:], eye[0])
        assert np.array_equal(k[i, :d] / k[i, :d].max(), eye[i]) and np.array_equal(k[i, d:] / k[i, d:].max(), eye[i])
    w = n["per_head"][0]
    assert [int(w[0, i].argmax()) for i in range(L)] == [0, 0, 1, 2, 3, 4]
    assert all(int(w[1, i].argmax()) == 0 for i in range(L))


def _two_heads_namespace(sdpa=None):
    from solutions import attention

    class _Attention:
        scaled_dot_product_attention = staticmethod(sdpa or attention.scaled_dot_product_attention)
    return _chapter_cell("03_heads.ipynb", "c03-03", {"np": np, "attention": _Attention, "plots": _NoPlots()})


def test_the_two_hand_built_heads():
    check_the_two_hand_built_heads(_two_heads_namespace())


def _keys_as_queries(q, k, v, mask=None):
    from solutions import attention
    return attention.scaled_dot_product_attention(k, q, v, mask)


PLANTED["queries and keys swapped"] = lambda: check_the_two_hand_built_heads(_two_heads_namespace(_keys_as_queries))


def check_the_numbered_input(namespace):
    """Chapter 3's cell c03-15: "L = 4 positions, H = 2 heads, d = 3 ... whose entry at position p and
    feature f is 10*p + f"; "(1, H, L, d) too, without the transpose" (the wrong split has the right
    shape and other entries)."""
    x, right, wrong = namespace["x"], namespace["right"], namespace["wrong"]
    assert (namespace["L"], namespace["H"], namespace["d"]) == (4, 2, 3)
    assert all(x[0, p, f] == 10 * p + f for p in range(4) for f in range(6))
    assert right.shape == wrong.shape == (1, 2, 4, 3) and not np.array_equal(right, wrong)
    assert all(right[0, h, p, j] == 10 * p + h * 3 + j for h in range(2) for p in range(4) for j in range(3))


def _numbered_namespace(split=None):
    from solutions import heads

    class _Heads:
        split_heads = staticmethod(split or heads.split_heads)
    return _chapter_cell("03_heads.ipynb", "c03-15", {"np": np, "heads": _Heads, "print": lambda *a, **k: None})


def test_the_numbered_input():
    check_the_numbered_input(_numbered_namespace())


PLANTED["split_heads as a plain reshape"] = lambda: check_the_numbered_input(
    _numbered_namespace(lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1)))


def check_the_plain_reshape_bug(namespace):
    """Chapter 3's cells c03-20 and c03-22 run here: "We use the split input as queries, keys and values
    (self-attention without projections, enough to expose the bug) on random data, L = 8, H = 4, d = 2":
    the plain reshape's round trip is exact, yet the attention it gives differs from the right one."""
    n = namespace
    assert (n["L"], n["H"], n["d"]) == (8, 4, 2) and n["x"].shape == (2, 8, 8)
    assert np.array_equal(n["merge_wrong"](n["split_wrong"](n["x"], n["H"])), n["x"])
    assert np.abs(n["correct"] - n["buggy"]).max() > 0.1


def _plain_reshape_namespace(split=None, merge=None):
    from solutions import attention, heads

    class _Heads:
        split_heads = staticmethod(split or heads.split_heads)
        merge_heads = staticmethod(merge or heads.merge_heads)
    namespace = {"np": np, "attention": attention, "heads": _Heads, "rng": np.random.default_rng(0),
                 "x": np.zeros((1, 4, 6)), "H": 2, "right": heads.split_heads(np.zeros((1, 4, 6)), 2),
                 "print": lambda *a, **k: None}
    for cell_id in ("c03-20", "c03-22"):
        exec(compile(_cell_source("03_heads.ipynb", cell_id), f"<{cell_id}>", "exec"), namespace)
    return namespace


def test_the_plain_reshape_bug():
    check_the_plain_reshape_bug(_plain_reshape_namespace())


PLANTED["a 'right' split that is the plain reshape too"] = lambda: check_the_plain_reshape_bug(_plain_reshape_namespace(
    lambda x, h: x.reshape(*x.shape[:-2], h, x.shape[-2], x.shape[-1] // h),
    lambda x: x.reshape(*x.shape[:-3], x.shape[-2], x.shape[-3] * x.shape[-1])))


# ------------------------------------------------------------------ every chapter: the chapters it uses

USES = re.compile(r"The chapter also uses your ([^.]+)\.")
MODULE_OF_CHAPTER = {"1": "attention", "2": "masking", "3": "heads", "4": "layer", "5": "analysis",
                     "6": "pruning", "7": "efficient"}


def check_the_chapters_it_uses(cells):
    """"The chapter also uses your `softmax` and `scaled_dot_product_attention` from chapter 1" and the
    like: each name the sentence gives is loaded by the chapter's first code cell with
    prerequisite(<that chapter's module>, ...). Returns how many names."""
    text = " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    first = next("".join(c["source"]) for c in cells if c["cell_type"] == "code" and "prerequisite(" in "".join(c["source"]))
    loaded = {}
    for module, names in re.findall(r"prerequisite\(\s*\"(\w+)\"((?:\s*,\s*\"\w+\")*)\s*\)", first):
        for name in re.findall(r"\"(\w+)\"", names):
            loaded[name] = module
    found = 0
    for sentence in USES.findall(text):
        for part in re.split(r"\),? and |; ", sentence):
            chapters = re.findall(r"chapter (\d)", part)
            for name in re.findall(r"`(\w+)`", part):
                assert name in loaded, (name, sorted(loaded))
                if chapters:
                    assert loaded[name] == MODULE_OF_CHAPTER[chapters[-1]], (name, loaded[name], chapters)
                found += 1
    assert found, "no such sentence"
    return found


@pytest.mark.parametrize("name", ["02_masking.ipynb", "03_heads.ipynb"])
def test_the_chapters_it_uses(name):
    check_the_chapters_it_uses(_cells(name))


def _without_prerequisite(name, module):
    cells = copy.deepcopy(_cells(name))
    for c in cells:
        source = "".join(c["source"])
        if "prerequisite(" in source:
            c["source"] = re.sub(rf"prerequisite\(\"{module}\"[^)]*\)", "load(\"x\")", source)
            break
    return cells


PLANTED["a chapter that does not load masking"] = lambda: check_the_chapters_it_uses(
    _without_prerequisite("03_heads.ipynb", "masking"))


def check_attention_imports_masked_softmax(source):
    """Chapter 1: masked_softmax, "which attention.py already imports from masking.py": the learner's
    stub module imports it from .masking."""
    import ast
    tree = ast.parse(source)
    assert any(isinstance(node, ast.ImportFrom) and node.module == "masking" and node.level == 1
               and "masked_softmax" in [a.name for a in node.names] for node in ast.walk(tree))


def test_attention_imports_masked_softmax():
    check_attention_imports_masked_softmax((ROOT / "mha_exercises" / "attention.py").read_text())


PLANTED["a stub without the import"] = lambda: check_attention_imports_masked_softmax("import numpy as np\n")


# ------------------------------------------------------------------ the learner guide: which code a notebook runs

def check_the_build_and_the_tests_run_the_references(makefile, conftest, pyproject):
    """"make book and make test set MHA_BACKEND=solutions (the Makefile and the root conftest.py), so
    the published book shows every cell executed against the reference solutions in solutions/, and
    nbval checks that every chapter runs cleanly against them"."""
    book = re.search(r"^book:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert book and "MHA_BACKEND=solutions" in book.group(1) and "jupyter-book build" in book.group(1)
    assert re.search(r"^os\.environ\[\"MHA_BACKEND\"\] = \"solutions\"", conftest, re.M)
    test = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert test and "pytest" in test.group(1)
    assert re.search(r"^addopts = .*--nbval", pyproject, re.M)


def test_the_build_and_the_tests_run_the_references():
    check_the_build_and_the_tests_run_the_references(
        (ROOT / "Makefile").read_text(), (ROOT / "conftest.py").read_text(), (ROOT / "pyproject.toml").read_text())


PLANTED["a conftest that leaves the backend alone"] = lambda: check_the_build_and_the_tests_run_the_references(
    (ROOT / "Makefile").read_text(), "import os\n", (ROOT / "pyproject.toml").read_text())


# ------------------------------------------------------------------ the guides: how a chapter is made

EXERCISE_MODULES = ("attention", "masking", "heads", "layer", "analysis", "pruning", "efficient", "language_model")


def check_a_chapter_is_made_as_the_guides_say(name, cells, toc):
    """"Every chapter notebook imports the exercise modules through mha_exercises.backend.load" (the
    learner guide) and "Add a chapter: a notebook in book/ (outputs cleared; it imports the exercise
    modules through mha_exercises.backend.load), one line under Chapters in _toc.yml" (the contributor
    guide): no cell imports an exercise module or the solutions directly, some cell loads through
    backend, no code cell keeps an output, and the chapter is a line under Chapters."""
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    direct = re.compile(rf"^\s*(?:from|import)\s+(?:mha_exercises\.(?:{'|'.join(EXERCISE_MODULES)})\b|solutions\b)"
                        rf"|^\s*from\s+mha_exercises\s+import\s+(?:{'|'.join(EXERCISE_MODULES)})\b", re.M)
    assert not any(direct.search(source) for source in code), name
    assert any(re.search(r"^from mha_exercises\.backend import .*\bload\b", source, re.M) for source in code), name
    assert any(re.search(r"\b(?:load|prerequisite)\(\"\w+\"", source) for source in code), name
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in cells if c["cell_type"] == "code"), name
    chapters = toc.split("- caption: Chapters", 1)[1].split("- caption:", 1)[0]
    assert f"- file: book/{name.removesuffix('.ipynb')}" in chapters, name


@pytest.mark.parametrize("name", sorted(p.name for p in BOOK.glob("0[1-8]_*.ipynb")))
def test_a_chapter_is_made_as_the_guides_say(name):
    check_a_chapter_is_made_as_the_guides_say(name, _cells(name), (ROOT / "_toc.yml").read_text())


def _importing_directly():
    cells = copy.deepcopy(_cells("01_attention.ipynb"))
    first = next(c for c in cells if c["cell_type"] == "code" and "load(" in "".join(c["source"]))
    first["source"] = "".join(first["source"]) + "\nfrom mha_exercises import attention\n"
    return cells


PLANTED["a chapter importing its module directly"] = lambda: check_a_chapter_is_made_as_the_guides_say(
    "01_attention.ipynb", _importing_directly(), (ROOT / "_toc.yml").read_text())


# Last in the file: every check planted above, whichever section added it.
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_check_fails_on_its_negation(name):
    with np.errstate(all="ignore"), pytest.raises(AssertionError):
        PLANTED[name]()
