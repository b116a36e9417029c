"""Checks of chapter 6's ``head_importance`` (``pruning.py``); its ``prune_heads``: ``pruning.py`` here.

It runs on harness code (``autograder/isolation/drivers/pruning.py``): the lab model rebuilt with a
fused-kernel attention layer, so that neither the reference nor the learner's chapter-4 layer
is involved, and is compared with the reference on the lab's committed weights and on a small
random model of another shape.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from lab import digits
from solutions import pruning as reference

from ...isolation.drivers.harness import harness_digits
from ...spec import Case, Exercise


# head_importance runs in float32 through a 4-layer network, one gradient per batch. Correct
# alternatives (the loss as a sum instead of a batch mean, loss.backward() instead of
# autograd.grad, a float64 accumulator, an einsum over the batches) reorder float32 sums, and a
# gradient's rounding is relative to the largest gradients of its layer, not to each head's: a
# head scoring a hundredth of its layer's best carries the layer's rounding (~1e-7 of the row).
# Normalised rows have unit norm, so atol 1e-5 there is that rounding with a wide margin; raw
# scores (normalize=False) are gradients of 1e-5..1e-3, where atol 1e-7 is already as loose.
# Measured on the grading draws of seeds 0..99 (`bench/checks.py --margins 100 --only
# head_importance`), the correct alternatives of tests/wrong_implementations/head_importance.py
# use at most 8% of these tolerances, and the known bugs' scores miss them by 1000 times or more
# (the caller's head_mask changed is caught by its flag, not by the scores).
IMPORTANCE_TOLERANCE = {"rtol": 1e-4, "atol": 1e-7}
NORMALISED_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def _arrays(state):
    return {k: v.detach().numpy().copy() for k, v in state.items()}


def _lab_state():
    return _arrays(torch.load(digits.WEIGHTS, weights_only=True))


@functools.lru_cache(maxsize=8)
def _state_shapes(config: tuple) -> dict:
    """Parameter name -> shape of the lab-shaped harness model of ``config`` (building the
    model, with torch's initialisation, costs more than drawing its weights: done once)."""
    return {k: tuple(v.shape) for k, v in harness_digits(dict(config)).state_dict().items()}


def _random_state(rng, config):
    """Weights for a lab-shaped model of another size: N(0, 1/fan_in), LayerNorms near 1."""
    state = {}
    for name, shape in _state_shapes(tuple(sorted(config.items()))).items():
        if "norm" in name and name.endswith("weight"):
            state[name] = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            fan_in = shape[-1] if len(shape) > 1 else 1
            state[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    return state


# --- head_importance ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _lab_data():
    """The lab's committed weights and validation split, read once per process (every draw uses them)."""
    x, y = digits.load_split("val")
    return _lab_state(), x.numpy(), y.numpy()


def importance_cases(rng):
    """Seven cases, all but one of two batches (a forward and backward pass per batch is what
    these checks cost the learner's process): a bigger batch then a smaller one, so that
    weighting by batch size, a gate's .grad never reset and |sum| instead of sum of |.| all
    show, and few examples per batch, which cost less than many (a pass is mostly
    per-operation overhead)."""
    state, x, y = _lab_data()
    L, H = digits.CONFIG["num_layers"], digits.CONFIG["num_heads"]
    lab = {"config": dict(digits.CONFIG), "state": state}

    def case(name, n, batch_size, rung, model=lab, data=None, **inputs):
        sizes = {"layers": model["config"]["num_layers"], "heads": model["config"]["num_heads"]}
        if data is None:  # n validation examples drawn from the stream
            pick = rng.choice(len(y), n, replace=False)
            data = x[pick], y[pick]
        tolerance = NORMALISED_TOLERANCE if inputs.get("normalize", True) else IMPORTANCE_TOLERANCE
        mask = inputs.get("head_mask")
        features = {"model": "the lab model" if model is lab else "another model shape (2 layers x 5 heads)",
                    "normalize": f"normalize={inputs.get('normalize', True)}",
                    "batches": ("one example per batch" if batch_size == 1 else
                                "one batch" if n <= batch_size else "two batches of different sizes"),
                    "head_mask": ("no head_mask" if mask is None else
                                  "a layer with every head removed" if (mask == 0).all(-1).any() else
                                  "a head_mask with removed heads"),
                    "mode": "training mode" if inputs.get("train_mode") else "eval mode"}
        return Case(name=name, driver="importance_run", rung=rung,
                    inputs={**model, "x": data[0][:n], "y": data[1][:n], "batch_size": batch_size,
                            "sizes": sizes, **inputs}, features=features, **tolerance)

    removed = np.ones((L, H), np.float32)
    removed[tuple(np.array([(layer, rng.integers(H)) for layer in rng.choice(L - 1, 2, replace=False)]).T)] = 0.0
    emptied = removed.copy()
    emptied[L - 1] = 0.0  # a layer with every head removed: its scores stay 0, never NaN
    small_config = dict(num_layers=2, num_heads=5, d_model=20, d_ff=24, patch_dim=6, num_patches=7, num_classes=4)
    small = {"config": small_config, "state": _random_state(rng, small_config)}
    size = int(rng.integers(2, 4))  # the first batch; the second is 1 to size - 1 examples
    small_data = (rng.standard_normal((2 * size - 1, 7, 6)).astype(np.float32),
                  rng.integers(0, 4, 2 * size - 1).astype(np.int64))

    def two(name, rung, **inputs):  # batches of size and 1..size-1 examples
        last = int(rng.integers(1, size))
        return case(f"{name}, batches of {size} and {last}", size + last, size, rung, **inputs)

    return [
        two("lab model, normalize=False", 0, normalize=False),
        case("lab model, one example per batch (as in the lab), normalize=False", 2, 1, 0, normalize=False),
        two("lab model (committed weights), normalize=True", 1),
        two("lab model, head_mask with two heads removed", 2, head_mask=removed),
        # A row of zeros must stay zeros, never NaN: one batch shows it (the batches' weights, the
        # gate's .grad and the mask across batches are the previous case's).
        case(f"lab model, head_mask removing every head of the last layer, one batch of {size}",
             size, size, 2, head_mask=emptied),
        case(f"a random model of 2 layers x 5 heads, batches of {size} and {size - 1}", 2 * size - 1, size, 3,
             model=small, data=small_data),
        case("a random model left in training mode, normalize=False", 2 * size - 1, size, 3, model=small,
             data=small_data, normalize=False, train_mode=True),
    ]


def _importance(model, batches, loss_fn, normalize=True, head_mask=None, *, signed=False, axis=1,
                masked_in_norm=False, weighted=True, abs_after_sum=False, ignore_mask=False, not_reset=False,
                per_token=None, min_max=False, always_normalise=False, global_norm=False, in_place=False):
    """The reference with one step changed; each bug below is one setting of these knobs.
    ``weighted``: True (each batch's |gradient| times its size, over the examples), False (a mean
    over batches), "in_loss" (the loss scaled by the batch size) or "sum" (|gradients| summed, over
    the examples or tokens)."""
    shape = (model.num_layers, model.num_heads)
    mask = torch.ones(shape) if head_mask is None or ignore_mask else head_mask.detach().float()
    gate = head_mask.requires_grad_(True) if in_place and head_mask is not None else mask.clone().requires_grad_(True)
    total, count, num_batches, running = torch.zeros(shape), 0, 0, torch.zeros(shape)
    for x, y in batches:
        (grad,) = torch.autograd.grad(loss_fn(model(x, head_mask=gate), y), gate)
        grad = grad * len(y) if weighted == "in_loss" else grad  # (loss * len(y)).backward()
        running = running + grad if not_reset else grad  # .grad accumulates unless zeroed
        grad = running if signed or abs_after_sum else running.abs()
        total += grad * (len(y) if weighted is True else 1)
        tokens = 1 if per_token is None else x.shape[1] + per_token  # per example: patches (+ the class token)
        count, num_batches = count + len(y) * tokens, num_batches + 1
    scores = (total / (count if weighted else num_batches)).detach()
    scores = scores.abs() if abs_after_sum else scores
    if head_mask is not None and not masked_in_norm:
        scores = scores * (mask != 0)
    if normalize or always_normalise:
        norm = scores.norm() if global_norm else scores.norm(dim=axis, keepdim=True)
        scores = scores / norm.clamp_min(1e-30)
    if min_max and (normalize or min_max == "always"):
        scores = (scores - scores.min()) / (scores.max() - scores.min())
    if head_mask is not None and masked_in_norm == "zeroed after":
        scores = scores * (mask != 0)
    return scores.detach()


def _importance_bug(name, **knobs):
    def bug(model, batches, loss_fn, normalize=True, head_mask=None):
        return _importance(model, batches, loss_fn, normalize, head_mask, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


def importance_signed(model, batches, loss_fn, normalize=True, head_mask=None):
    return _importance(model, batches, loss_fn, normalize, head_mask, signed=True)


def importance_abs_after_sum(model, batches, loss_fn, normalize=True, head_mask=None):
    return _importance(model, batches, loss_fn, normalize, head_mask, abs_after_sum=True)


def importance_wrong_axis(model, batches, loss_fn, normalize=True, head_mask=None):
    return _importance(model, batches, loss_fn, normalize, head_mask, axis=0)


def importance_masked_in_norm(model, batches, loss_fn, normalize=True, head_mask=None):
    return _importance(model, batches, loss_fn, normalize, head_mask, masked_in_norm=True)


def importance_masked_zeroed_after_norm(model, batches, loss_fn, normalize=True, head_mask=None):
    return _importance(model, batches, loss_fn, normalize, head_mask, masked_in_norm="zeroed after")


def importance_unweighted(model, batches, loss_fn, normalize=True, head_mask=None):
    return _importance(model, batches, loss_fn, normalize, head_mask, weighted=False)


def importance_mask_ignored(model, batches, loss_fn, normalize=True, head_mask=None):
    return _importance(model, batches, loss_fn, normalize, head_mask, ignore_mask=True)


HEAD_IMPORTANCE = Exercise(
    id="head_importance",
    cases=importance_cases,
    hints={"normalize=True": "divide each layer's row of scores by its own L2 norm",
           "a head_mask with removed heads": "start the gate from head_mask; removed heads score exactly 0",
           "another model shape (2 layers x 5 heads)": "use model.num_layers and model.num_heads",
           "one example per batch": "weight each batch's |gradient| by its size, and reset the gate's gradient "
                                    "between batches"},
    ladder=(("the lab model with normalize=False", ""),
            ("normalize=True", "divide each layer's row of scores by its own L2 norm"),
            ("a head_mask with removed heads", "start the gate from head_mask; removed heads score exactly 0"),
            ("another model shape, or a model left in training mode", "use model.num_layers and model.num_heads, "
             "and leave the model as it came")),
    bugs={
        "your scores match signed gradients: take the absolute value of each batch's gradient "
        "(a head that helps and a head that hurts both matter)": importance_signed,
        "your scores match |sum of the gradients|: take the absolute value per batch, then average "
        "(signs cancel across batches otherwise)": importance_abs_after_sum,
        "your scores match a normalisation over the wrong axis: divide each layer's row by its L2 norm "
        "(norm over the heads, dim=1), not each head's column": importance_wrong_axis,
        "your scores match masked heads left in the score: a removed head (head_mask 0) has importance 0 and "
        "must not count in its layer's norm (zero it before normalising)": (
            importance_masked_in_norm, importance_masked_zeroed_after_norm),
        "your scores match an unweighted mean over batches: weight each batch's |gradient| by its size "
        "(the last batch is smaller)": importance_unweighted,
        "your scores match a gate of ones: start the gate from head_mask, so that the removed heads "
        "stay off": importance_mask_ignored,
        # The next four are in the Bertology example of huggingface/transformers
        # (examples/research_projects/bertology/run_bertology.py, compute_heads_importance):
        # head_mask.grad never zeroed between batches, importance divided by the number of
        # tokens, a global min-max rescaling, and head_mask.requires_grad_() on the caller's tensor.
        "your scores match gradients accumulated across batches: the gate's .grad keeps adding up "
        "unless it is reset (gate.grad = None, or torch.autograd.grad) before each batch": (
            _importance_bug("grad_not_reset", not_reset=True),
            _importance_bug("grad_not_reset_unweighted", not_reset=True, weighted=False),
            # huggingface/transformers' run_bertology.py: (loss * len(y)).backward(), |.grad| summed
            _importance_bug("grad_not_reset_weighted_in_loss", not_reset=True, weighted="in_loss")),
        # run_bertology.py as it stands: all three of its departures at once (a learner who copies
        # it matches none of the single bugs above on every case).
        "your scores match |head_mask.grad| summed over the batches with the gate's .grad never reset, so the "
        "gradients accumulate (each batch adds the running sum of the earlier gradients: reset it, gate.grad = None, or use "
        "torch.autograd.grad), divided by the number of tokens (examples x patches) instead of examples, "
        "with the removed heads' scores kept (they must be 0)": (
            _importance_bug("bertology", not_reset=True, weighted="sum", per_token=0, masked_in_norm=True),
            _importance_bug("bertology_with_class_token", not_reset=True, weighted="sum", per_token=1,
                            masked_in_norm=True)),
        "your scores match a mean over tokens instead of examples: divide by the number of examples, "
        "not examples x sequence length": (_importance_bug("per_token", per_token=1),
                                           _importance_bug("per_patch", per_token=0)),
        "your scores are rescaled to [0, 1] by the global min and max: the contract asks for each layer's "
        "scores divided by their L2 norm only": (_importance_bug("min_max", min_max=True),
                                                 _importance_bug("min_max_always", min_max="always")),
        "your function changes the caller's head_mask (requires_grad_ or a write on it): make the gate a new "
        "tensor, head_mask.detach().clone().requires_grad_(True)": _importance_bug("in_place", in_place=True),
        "your scores are normalised even with normalize=False: normalise only when asked":
            _importance_bug("always_normalised", always_normalise=True),
        "your scores are normalised over all layers at once: divide each layer's row by its own L2 norm":
            _importance_bug("global_norm", global_norm=True),
    },
    timeout=30.0,
    case_cpu=10.0,  # a case runs a model forward and backward; a learner may loop over heads
)


EXERCISES = (HEAD_IMPORTANCE,)
