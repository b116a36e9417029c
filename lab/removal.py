"""Chapter 6's experiment on the lab model of ``digits.py``: heads removed in an order, the test
accuracy after each removal (a pruning curve), the orders (importance, iterative, per-layer,
random, reverse), and what holds of them across the models trained with several seeds
(``bench/pruning.py`` computes them all; the chapter reads its file).
"""
import functools
import hashlib
import json
import platform
from pathlib import Path

import numpy as np
import torch

from .digits import RESULTS, accuracy, loss_fn, mask_without, weights_path


def order_by_score(scores):
    """Every ``(layer, head)`` pair, lowest score first (the order in which to remove heads)."""
    flat = torch.as_tensor(scores).flatten()
    num_heads = torch.as_tensor(scores).shape[1]
    # A stable sort: equal scores keep the (layer, head) order, so the order is reproducible.
    return [divmod(int(i), num_heads) for i in torch.argsort(flat, stable=True)]


def pruning_curves(model, orders, x, y):
    """Test accuracy after removing the first ``k`` heads of each order, ``k = 0 .. L*H``.

    Returns ``(len(orders), L*H + 1)``. Each set of removed heads is evaluated once (random
    orders share their first and last points), and the sets are evaluated sorted by their
    masks, layer by layer: consecutive sets then share the longest prefix of unchanged layers,
    whose states are reused, so a layer runs once per distinct mask of itself and the layers
    before it (all orders of a 16-head model share the 16 masks of layer 0).
    """
    shape = (model.num_layers, model.num_heads)
    sets = {frozenset(order[:k]) for order in orders for k in range(len(order) + 1)}
    masks = {removed: mask_without(removed, *shape) for removed in sets}
    schedule = sorted(sets, key=lambda removed: masks[removed].flatten().tolist())
    seen = {}
    with torch.no_grad():
        states = [model.tokens(x)]  # states[i]: the input of layer i under cached_mask
        cached_mask = None
        for removed in schedule:
            mask = masks[removed]
            same = 0  # the layers whose input is unchanged: masks equal up to there
            while cached_mask is not None and same < shape[0] and torch.equal(mask[same], cached_mask[same]):
                same += 1
            del states[same + 1:]
            for layer in range(same, shape[0]):
                states.append(model.layer(layer, states[layer], mask[layer]))
            cached_mask = mask
            seen[removed] = (model.classify(states[-1]).argmax(-1) == y).float().mean().item()
    return np.array([[seen[frozenset(order[:k])] for k in range(len(order) + 1)] for order in orders])


def pruning_curve(model, order, x, y):
    """Test accuracy after removing the first ``k`` heads of ``order``, for ``k = 0 .. len(order)``."""
    return pruning_curves(model, [order], x, y)[0]


def iterative_order(model, importance, data, loss=loss_fn):
    """Remove heads one at a time, each time the least important one given those already removed.

    ``importance(model, batches, loss_fn, head_mask=...)`` is a ``head_importance``; it is
    recomputed after every removal with the heads removed so far masked out.
    """
    shape = (model.num_layers, model.num_heads)
    removed = []
    for _ in range(shape[0] * shape[1] - 1):
        scores = importance(model, data, loss, head_mask=mask_without(removed, *shape)).clone()
        for layer, head in removed:
            scores[layer, head] = float("inf")  # already gone: never chosen again
        removed.append(order_by_score(scores)[0])
    # The last head needs no gradient: it is the only one left.
    return removed + [pair for pair in order_by_score(torch.zeros(shape)) if pair not in removed]


def gate_gradients(model, x, y, head_mask=None, loss=loss_fn):
    """Every example's ``dL(x_i)/dxi_h`` for every head: ``(N, num_layers, num_heads)``, one backward pass.

    A second route to the gate's gradient, without a gate: ``head_mask`` scales each head's
    output before ``W_o``, so with ``z`` the input of ``W_o`` (heads concatenated, masked),
    ``dL/dxi_h = sum over positions and head h's features of z * dL/dz`` when ``xi_h = 1``,
    and 0 for a removed head (``xi_h = 0``, ``z = 0``), the score ``head_importance`` gives it.
    The examples do not interact (layer norms act per token), so the gradient of the *summed*
    loss with respect to example ``i``'s ``z`` is that example's own: every example's gradient
    comes out of one batched pass. Gates other than 0 and 1 are refused.
    """
    if head_mask is not None and not ((head_mask == 0) | (head_mask == 1)).all():
        raise ValueError("gate_gradients needs a head_mask of zeros and ones")
    inputs = []  # W_o's input in every layer, (N, queries, H*d)
    hooks = [attention.W_o.register_forward_hook(lambda module, args, out: inputs.append(args[0]))
             for attention in model.attention_layers]
    try:
        with torch.enable_grad():
            total = loss(model(x, head_mask=head_mask), y) * len(y)  # a batch mean, back to a sum
            grads = torch.autograd.grad(total, inputs)
    finally:
        for hook in hooks:
            hook.remove()
    per_layer = [(z * g).reshape(len(y), z.shape[1], model.num_heads, -1).sum(dim=(1, 3))  # (N, H)
                 for z, g in zip(inputs, grads)]
    return torch.stack(per_layer, dim=1).detach()  # (N, L, H)


def importance_from_activations(model, batches, loss_fn=loss_fn, normalize=True, head_mask=None):
    """Michel et al.'s ``E_x |dL(x)/dxi_h|`` by ``gate_gradients``: the signature of ``head_importance``.

    Every example's gradient separately, whatever the batches (``head_importance`` with one
    example per batch gives the same numbers), in one pass per batch instead of one per example.
    """
    grads = torch.cat([gate_gradients(model, x, y, head_mask, loss_fn) for x, y in batches])  # (N, L, H)
    scores = grads.abs().mean(0)
    if normalize:
        scores = scores / scores.norm(dim=1, keepdim=True).clamp_min(torch.finfo(scores.dtype).tiny)
    return scores


def ablation_table(model, x, y):
    """Test accuracy with each single head removed: ``(num_layers, num_heads)``."""
    shape = (model.num_layers, model.num_heads)
    return np.array([[accuracy(model, x, y, mask_without([(l, h)], *shape)) for h in range(shape[1])]
                     for l in range(shape[0])])


def random_orders(num_layers, num_heads, num_orders=50, seed=0):
    """``num_orders`` random removal orders of every ``(layer, head)`` pair, reproducibly."""
    rng = np.random.default_rng(seed)
    pairs = [(layer, head) for layer in range(num_layers) for head in range(num_heads)]
    return [[pairs[i] for i in rng.permutation(len(pairs))] for _ in range(num_orders)]


def random_curves(model, x, y, num_orders=50, seed=0):
    """Pruning curves for ``num_orders`` random removal orders: ``(num_orders, L*H + 1)``."""
    return pruning_curves(model, random_orders(model.num_layers, model.num_heads, num_orders, seed), x, y)


# --- the lab across training seeds ---------------------------------------------------------------

NUM_RANDOM = 50  # random removal orders per model
# The orders compared with the random ones, each built from the importance measured on the validation split.
ORDERS = ("static", "iterative", "per-layer static", "per-layer iterative", "reverse")


def lab_orders(model, importance, val_batches):
    """``{name: order}`` for ``ORDERS``, and the raw importance ``(L, H)``.

    ``importance`` has ``head_importance``'s signature. "static" ranks the raw scores across the
    whole model; "per-layer" divides each layer's scores by their L2 norm first (Michel et al.'s
    default); "iterative" recomputes the scores after every removal; "reverse" is the static
    order backwards (the most important head first).
    """
    raw = importance(model, val_batches, loss_fn, normalize=False)
    per_layer = raw / raw.norm(dim=1, keepdim=True)
    orders = {
        "static": order_by_score(raw),
        "iterative": iterative_order(model, functools.partial(importance, normalize=False), val_batches),
        "per-layer static": order_by_score(per_layer),
        "per-layer iterative": iterative_order(model, functools.partial(importance, normalize=True), val_batches),
    }
    orders["reverse"] = orders["static"][::-1]
    return orders, raw


def lab_curves(model, importance, val_batches, x, y, num_random=NUM_RANDOM):
    """Every curve of the lab on one model: ``{name: (L*H + 1,)}`` for ``ORDERS``, and
    ``"random": (num_random, L*H + 1)``, test accuracies; with the orders and the raw importance."""
    orders, raw = lab_orders(model, importance, val_batches)
    randoms = random_orders(model.num_layers, model.num_heads, num_random, seed=0)
    curves = pruning_curves(model, list(orders.values()) + randoms, x, y)
    out = dict(zip(orders, curves))
    out["random"] = curves[len(orders):]
    return out, orders, raw


def random_band(random, level=0.9):
    """Mean, and the band holding the central ``level`` of the random orders at each point: 3 arrays."""
    tail = (1 - level) / 2
    return random.mean(0), np.quantile(random, tail, axis=0), np.quantile(random, 1 - tail, axis=0)


def ordering_holds(curves, name):
    """At each ``k = 1 .. L*H - 1`` heads removed: is ``name``'s accuracy >= the random mean >= reverse's?

    Ties count as holding. ``k = 0`` and ``k = L*H`` are left out: every order agrees there.
    """
    k = slice(1, len(curves[name]) - 1)
    mean = curves["random"].mean(0)
    return (curves[name][k] >= mean[k]) & (mean[k] >= curves["reverse"][k])


def ordering_holds_on_average(curves, name):
    """Averaged over ``k = 1 .. L*H - 1``: ``name``'s accuracy >= the random mean's >= reverse's."""
    k = slice(1, len(curves[name]) - 1)
    mean = curves["random"].mean(0)
    return bool(curves[name][k].mean() >= mean[k].mean() >= curves["reverse"][k].mean())


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def machine():
    """What the weights and curves were computed with: torch, the CPU and its vector capability.

    The capability decides which vectorised kernels torch runs, hence how float32 sums round.
    """
    name = platform.processor() or platform.machine()
    try:  # Linux names the model; platform.processor() often says only "x86_64"
        name = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"torch": torch.__version__, "cpu": name, "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def load_results(path=RESULTS):
    """The curves ``bench/pruning.py --write`` computed on every seed: ``(meta, {seed: curves})``.

    ``curves`` is as ``lab_curves`` returns it (test accuracies), plus ``"importance"`` and
    ``"orders"``. Refuses a file computed on other weights than the committed ones.
    """
    data = json.loads(Path(path).read_text())
    results = {}
    for seed, entry in data["seeds"].items():
        seed = int(seed)
        if entry["sha256"] != sha256(weights_path(seed)):
            raise ValueError(f"{path} was computed on other weights than {weights_path(seed).name}: "
                             "rerun bench/pruning.py --write")
        n = data["test_images"]
        curves = {name: np.array(correct) / n for name, correct in entry["correct"].items()}
        curves["importance"] = np.array(entry["importance"])
        curves["orders"] = {name: [tuple(pair) for pair in order] for name, order in entry["orders"].items()}
        results[seed] = curves
    meta = {k: v for k, v in data.items() if k != "seeds"}
    return meta, results


def across_seeds(results, quarter):
    """What chapter 6 states about the models of ``results = {seed: curves}``, computed in one place.

    Returns ``(holding, numbers)``: ``holding[name]`` is a ``(seeds, L*H - 1)`` boolean array, where
    ``ordering_holds`` for each order but reverse; ``numbers`` maps a name to a number (points of
    accuracy, counts of models), the ones the chapter's text quotes.
    """
    curves = list(results.values())
    names = [name for name in ORDERS if name != "reverse"]
    holding = {name: np.array([ordering_holds(c, name) for c in curves]) for name in names}
    numbers = {"num_seeds": len(curves)}
    for name in names:
        key = name.replace("-", "_").replace(" ", "_")
        numbers[f"every_k_{key}"] = int(holding[name].all(1).sum())
        numbers[f"on_average_{key}"] = sum(ordering_holds_on_average(c, name) for c in curves)
    # Where the static ordering fails, and the most accuracy any order (or the random mean) keeps there.
    num_heads = holding["static"].shape[1] + 1
    failing = sorted({k for row in holding["static"] for k, h in enumerate(row, start=1) if not h})
    numbers["static_failing_k"] = failing
    numbers["most_heads_left_at_failures"] = max((num_heads - k for k in failing), default=0)
    numbers["accuracy_left_at_failures"] = max(
        (100 * float(max(max(c[name][k] for name in ORDERS), c["random"].mean(0)[k])) for c in curves for k in failing),
        default=float("nan"))
    # ... and what single random orders keep there: one lucky draw can keep more than any named order.
    numbers["random_order_left_at_failures"] = max(
        (100 * float(c["random"][:, k].max()) for c in curves for k in failing), default=float("nan"))
    # Re-measuring the scores with only the survivors present (the iterative order) does not save the
    # last heads: the models on which it fails at a point where the static order holds.
    numbers["iterative_fails_where_static_holds"] = int(
        (~holding["iterative"] & holding["static"]).any(1).sum())
    drops = np.array([100 * (c["static"][0] - c["static"][quarter]) for c in curves])
    random_drops = np.array([100 * (c["random"].mean(0)[0] - c["random"].mean(0)[quarter]) for c in curves])
    numbers |= {"quarter_drops": drops.round(2).tolist(), "quarter_drop_min": float(drops.min()),
                "quarter_drop_max": float(drops.max()), "quarter_drop_within_one": int((drops <= 1 + 1e-6).sum()),
                "quarter_random_min": float(random_drops.min()), "quarter_random_max": float(random_drops.max())}
    # One or two heads removed: how far the random mean falls below the importance order at most.
    numbers["early_random_gap"] = max(100 * float(c["static"][k] - c["random"].mean(0)[k]) for c in curves for k in (1, 2))

    def mean_over_k(c, name):
        return c[name][1:-1].mean()

    numbers["iterative_ahead"] = sum(bool(mean_over_k(c, "iterative") > mean_over_k(c, "static")) for c in curves)
    numbers["iterative_worst"] = max(100 * float((c["static"] - c["iterative"]).max()) for c in curves)
    numbers["per_layer_behind"] = sum(bool(mean_over_k(c, "per-layer static") < mean_over_k(c, "static")) for c in curves)
    numbers["depth_falls"] = sum(bool(np.all(np.diff(c["importance"].sum(1)) < 0)) for c in curves)
    numbers["accuracy_min"] = min(100 * float(c["static"][0]) for c in curves)
    numbers["accuracy_max"] = max(100 * float(c["static"][0]) for c in curves)
    return holding, numbers
