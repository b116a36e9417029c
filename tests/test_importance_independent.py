"""The reference ``head_importance`` (``solutions/pruning.py``) checked by two routes that share
none of its code: central finite differences of the loss in each gate, and every example's
gate gradient read off the activations at ``W_o``'s input (``removal.gate_gradients``, which
chapter 6 and ``bench/pruning.py`` use for speed).

The small model is the lab's architecture at another size (2 layers of 3 heads, d_model 12),
randomly initialised, in float64, so that the tolerances can be tight: central differences
with a step of 1e-6 err by about step² times the third derivative plus rounding of 1e-16/step,
far below the stated rtol of 1e-6.
"""
import copy

import pytest
import torch

from lab import digits, removal
from solutions.layer import MultiHeadAttention
from solutions.pruning import head_importance

FD_STEP = 1e-6
# head_importance returns float32 (its contract), whatever the model's dtype: 6e-8 relative rounding.
FD_TOLERANCE = {"rtol": 1e-6, "atol": 1e-12}  # float64 central differences vs the float32 reference
REFERENCE_TOLERANCE = {"rtol": 1e-6, "atol": 1e-12}  # float64 activation route vs the float32 reference
ROUTE_TOLERANCE = {"rtol": 1e-10, "atol": 1e-14}  # float64 both: the same derivative by two exact routes
LAB_TOLERANCE = {"rtol": 1e-4, "atol": 1e-7}  # float32 lab model: sums reordered (measured: 1e-6)


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(7)
    model = digits.DigitsTransformer(MultiHeadAttention, num_layers=2, num_heads=3, d_model=12, d_ff=20)
    with torch.no_grad():  # a non-zero class token and larger positions: gradients of every size
        model.cls.normal_()
        model.pos.normal_()
    return model.double().eval()


@pytest.fixture(scope="module")
def examples():
    x, y = digits.load_split("val")
    return x[:5].double(), y[:5]


def _finite_differences(model, x, y, head_mask=None):
    """``E_x |dL(x)/dxi_h|`` with each derivative by central differences: ``(L, H)`` float64."""
    shape = (model.num_layers, model.num_heads)
    base = torch.ones(shape, dtype=torch.float64) if head_mask is None else head_mask.double()
    total = torch.zeros(shape, dtype=torch.float64)
    with torch.no_grad():
        for i in range(len(y)):
            for l in range(shape[0]):
                for h in range(shape[1]):
                    if base[l, h] == 0:
                        continue  # a removed head scores 0
                    up, down = base.clone(), base.clone()
                    up[l, h] += FD_STEP
                    down[l, h] -= FD_STEP
                    loss_up = digits.loss_fn(model(x[i:i + 1], head_mask=up), y[i:i + 1])
                    loss_down = digits.loss_fn(model(x[i:i + 1], head_mask=down), y[i:i + 1])
                    total[l, h] += ((loss_up - loss_down) / (2 * FD_STEP)).abs()
    return total / len(y)


def _one_per_batch(x, y):
    return [(x[i:i + 1], y[i:i + 1]) for i in range(len(y))]


@pytest.mark.parametrize("removed", [[], [(0, 1), (1, 2)]])
def test_reference_equals_finite_differences(small, examples, removed):
    x, y = examples
    mask = digits.mask_without(removed, small.num_layers, small.num_heads).double()
    expected = _finite_differences(small, x, y, mask)
    assert (expected > 0).sum() == small.num_layers * small.num_heads - len(removed)  # a real check
    scores = head_importance(small, _one_per_batch(x, y), digits.loss_fn, normalize=False, head_mask=mask)
    torch.testing.assert_close(scores.double(), expected, **FD_TOLERANCE)
    normalised = head_importance(small, _one_per_batch(x, y), digits.loss_fn, normalize=True, head_mask=mask)
    torch.testing.assert_close(normalised.double(), expected / expected.norm(dim=1, keepdim=True), **FD_TOLERANCE)


@pytest.mark.parametrize("removed", [[], [(1, 0)]])
def test_activation_route_equals_the_reference(small, examples, removed):
    """Every example's gradient from one batched pass equals one backward pass per example."""
    x, y = examples
    mask = digits.mask_without(removed, small.num_layers, small.num_heads).double()
    reference = head_importance(small, _one_per_batch(x, y), digits.loss_fn, normalize=False, head_mask=mask)
    by_activations = removal.importance_from_activations(small, [(x[:2], y[:2]), (x[2:], y[2:])],
                                                        normalize=False, head_mask=mask)
    torch.testing.assert_close(by_activations, reference.double(), **REFERENCE_TOLERANCE)
    # Per example too, with the sign: the gradients themselves, not only their mean size.
    per_example = removal.gate_gradients(small, x, y, head_mask=mask)  # (N, L, H)
    assert per_example.shape == (5, small.num_layers, small.num_heads)
    for i in range(len(y)):
        gate = mask.clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(digits.loss_fn(small(x[i:i + 1], head_mask=gate), y[i:i + 1]), gate)
        torch.testing.assert_close(per_example[i], grad * mask, **ROUTE_TOLERANCE)


def test_activation_route_equals_the_reference_on_the_lab_model():
    model = digits.load_model(MultiHeadAttention)
    x, y = digits.load_split("val")
    x, y = x[:60], y[:60]
    reference = head_importance(model, _one_per_batch(x, y), digits.loss_fn, normalize=True)
    by_activations = removal.importance_from_activations(model, [(x, y)], normalize=True)
    torch.testing.assert_close(by_activations, reference, **LAB_TOLERANCE)
    assert removal.order_by_score(by_activations) == removal.order_by_score(reference)


def test_activation_route_leaves_the_model_alone_and_refuses_soft_gates(small, examples):
    x, y = examples
    before = copy.deepcopy(small.state_dict())
    removal.gate_gradients(small, x, y)
    assert all(torch.equal(before[k], v) for k, v in small.state_dict().items())
    assert all(p.grad is None for p in small.parameters())
    assert all(not a.W_o._forward_hooks for a in small.attention_layers)  # its hooks are gone
    with pytest.raises(ValueError, match="zeros and ones"):
        removal.gate_gradients(small, x, y, head_mask=torch.full((2, 3), 0.5, dtype=torch.float64))
