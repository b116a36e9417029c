"""Chapter 6 reference: head importance (Michel, Levy and Neubig 2019) and structural pruning."""
import torch
from torch import nn


def head_importance(model, batches, loss_fn, normalize=True, head_mask=None):
    shape = (model.num_layers, model.num_heads)
    mask = torch.ones(shape) if head_mask is None else head_mask.detach().to(torch.float32)
    # The gate starts at the mask: the gradient at a removed head (gate 0) would say what
    # putting it back is worth, which is not its importance, so it is zeroed below.
    gate = mask.clone().requires_grad_(True)
    total, count = torch.zeros(shape), 0
    for x, y in batches:
        (grad,) = torch.autograd.grad(loss_fn(model(x, head_mask=gate), y), gate)
        total += grad.abs() * len(y)  # the loss is a batch mean: weight it back to a sum
        count += len(y)
    scores = total / count * (mask != 0)
    if normalize:
        # Per layer, so that layers with larger gradients do not take all the top ranks.
        norm = scores.norm(dim=1, keepdim=True)  # (num_layers, 1)
        scores = scores / norm.clamp_min(torch.finfo(scores.dtype).tiny)  # an all-removed layer stays 0
    return scores.detach()


def _keep(linear, index, dim):
    """Keep the output rows (``dim=0``) or the input columns (``dim=1``) of ``linear`` at ``index``."""
    with torch.no_grad():
        linear.weight = nn.Parameter(linear.weight.index_select(dim, index).clone())
        if dim == 0 and linear.bias is not None:  # a bias belongs to the output rows
            linear.bias = nn.Parameter(linear.bias[index].clone())
    linear.out_features, linear.in_features = linear.weight.shape


def prune_heads(layer, heads):
    heads, removed = {int(h) for h in heads}, getattr(layer, "pruned_heads", set())
    # Original head numbers of the surviving heads, in the order they sit in the weights now.
    surviving = [h for h in range(layer.num_heads + len(removed)) if h not in removed]
    keep = [i for i, h in enumerate(surviving) if h not in heads]  # current positions
    d = layer.head_dim
    index = (torch.tensor(keep, dtype=torch.long)[:, None] * d + torch.arange(d)).flatten()  # (len(keep) * d,)
    for linear in (layer.W_q, layer.W_k, layer.W_v):
        _keep(linear, index, dim=0)
    _keep(layer.W_o, index, dim=1)
    layer.num_heads = len(keep)
    layer.pruned_heads = removed | (heads & set(surviving))
    return layer
