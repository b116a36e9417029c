"""Chapter 6's harness layer (``autograder/isolation/drivers/harness.py``), built on PyTorch's own
multi-head attention so that the learner release holds no answer, against the reference layer:
masks in the course's convention, head gates (and their gradient, which ``head_importance``
takes), no bias, unbatched input, and a layer with heads removed.

(``tests/test_grader_pruning.py`` checks the harness model against the lab model.)"""
import pytest
import torch

from autograder.isolation.drivers.harness import HarnessAttention
from solutions.layer import MultiHeadAttention
from solutions.pruning import prune_heads


def _pair(bias=True):
    torch.manual_seed(0)
    reference = MultiHeadAttention(24, 6, kdim=10, vdim=14, bias=bias).double()
    layer = HarnessAttention(24, 6, kdim=10, vdim=14, bias=bias).double()
    layer.load_state_dict(reference.state_dict())
    q, k, v = torch.randn(2, 3, 24).double(), torch.randn(2, 5, 10).double(), torch.randn(2, 5, 14).double()
    return reference.eval(), layer, (q, k, v)


def _masks():
    torch.manual_seed(1)
    shared, batched, per_head = torch.rand(3, 5) > 0.4, torch.rand(2, 3, 5) > 0.4, torch.rand(2, 6, 3, 5) > 0.4
    shared[:, 0] = batched[..., 1] = per_head[..., 2] = True  # no fully masked row
    return [None, shared, batched, per_head]


@pytest.mark.parametrize("bias", [True, False])
def test_harness_layer_equals_the_reference_with_masks_and_gates(bias):
    reference, layer, (q, k, v) = _pair(bias)
    gate = torch.tensor([1, 0, 1, 0.5, 0, 2]).double()
    with torch.no_grad():
        for mask in _masks():
            for head_mask in (None, gate):
                torch.testing.assert_close(layer(q, k, v, mask=mask, head_mask=head_mask)[0],
                                           reference(q, k, v, mask=mask, head_mask=head_mask)[0],
                                           rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(layer(q[0], k[0], v[0])[0], reference(q[:1], k[:1], v[:1])[0][0])


def test_gradient_with_respect_to_the_head_gate_is_the_references():
    reference, layer, (q, k, v) = _pair()
    grads = []
    for model in (layer, reference):
        gate = torch.tensor([1, 0, 1, 1, 0.5, 1]).double().requires_grad_(True)
        model(q, k, v, head_mask=gate)[0].square().sum().backward()
        grads.append(gate.grad)
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_a_pruned_harness_layer_equals_the_unpruned_one_with_those_heads_masked():
    _, layer, (q, k, v) = _pair()
    gate = torch.tensor([1, 0, 1, 1, 0, 1]).double()
    with torch.no_grad():
        masked = layer(q, k, v, head_mask=gate)[0]
        prune_heads(layer, [1, 4])
        torch.testing.assert_close(layer(q, k, v)[0], masked, rtol=1e-12, atol=1e-12)


def test_a_fully_masked_row_is_refused_with_a_clear_error():
    _, layer, (q, k, v) = _pair()
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[0, 1] = False
    with pytest.raises(ValueError, match="fully masked query row"):
        layer(q, k, v, mask=mask)
