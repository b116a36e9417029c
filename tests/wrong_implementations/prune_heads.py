"""`prune_heads`: classic bugs and correct alternatives, written the way learners write them."""
import torch
from torch import nn


def _rows(layer, keep):
    """Feature indices of the heads at positions ``keep``."""
    return torch.cat([torch.arange(i * layer.head_dim, (i + 1) * layer.head_dim) for i in keep])


def _cut(linear, idx, dim):
    linear.weight = nn.Parameter(linear.weight.detach().index_select(dim, idx))
    if dim == 0 and linear.bias is not None:
        linear.bias = nn.Parameter(linear.bias.detach()[idx])


def _positions(layer, heads):
    done = getattr(layer, "pruned_heads", set())
    alive = [h for h in range(layer.num_heads + len(done)) if h not in done]
    return [i for i, h in enumerate(alive) if h not in heads], done | (set(heads) & set(alive))


def o_rows(layer, heads):
    keep, removed = _positions(layer, set(heads))
    idx = _rows(layer, keep)
    for lin in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):  # W_o cut like the others: rows
        _cut(lin, idx, 0)
    layer.num_heads, layer.pruned_heads = len(keep), removed
    return layer


def only_w_q(layer, heads):
    keep, removed = _positions(layer, set(heads))
    _cut(layer.W_q, _rows(layer, keep), 0)
    layer.num_heads, layer.pruned_heads = len(keep), removed
    return layer


def num_heads_unchanged(layer, heads):
    keep, removed = _positions(layer, set(heads))
    idx = _rows(layer, keep)
    for lin in (layer.W_q, layer.W_k, layer.W_v):
        _cut(lin, idx, 0)
    _cut(layer.W_o, idx, 1)
    layer.pruned_heads = removed
    return layer


def current_numbering(layer, heads):
    keep = [h for h in range(layer.num_heads) if h not in heads]  # as if nothing had been pruned before
    idx = _rows(layer, keep)
    for lin in (layer.W_q, layer.W_k, layer.W_v):
        _cut(lin, idx, 0)
    _cut(layer.W_o, idx, 1)
    layer.num_heads = len(keep)
    layer.pruned_heads = getattr(layer, "pruned_heads", set()) | set(heads)
    return layer


def new_linears(layer, heads):
    """Hugging Face style: a boolean mask over features, new nn.Linear modules."""
    done = getattr(layer, "pruned_heads", set())
    heads = set(heads) - done
    alive = [h for h in range(layer.num_heads + len(done)) if h not in done]
    mask = torch.tensor([h not in heads for h in alive]).repeat_interleave(layer.head_dim)  # (H*d,)
    idx = mask.nonzero().flatten()

    def linear(old, dim):
        w = old.weight.index_select(dim, idx)
        new = nn.Linear(w.shape[1], w.shape[0], bias=old.bias is not None, dtype=w.dtype)
        with torch.no_grad():
            new.weight.copy_(w)
            if old.bias is not None:
                new.bias.copy_(old.bias[idx] if dim == 0 else old.bias)
        return new

    layer.W_q, layer.W_k, layer.W_v = (linear(m, 0) for m in (layer.W_q, layer.W_k, layer.W_v))
    layer.W_o = linear(layer.W_o, 1)
    layer.num_heads = sum(h not in heads for h in alive)
    layer.pruned_heads = done | (heads & set(alive))
    return layer


def reshaped(layer, heads):
    """Per-head views: (H*d, E) -> (H, d, E), keep the surviving heads, flatten back."""
    alive = getattr(layer, "_alive", list(range(layer.num_heads)))
    keep = [i for i, h in enumerate(alive) if h not in set(heads)]
    H, d = layer.num_heads, layer.head_dim
    with torch.no_grad():
        for lin in (layer.W_q, layer.W_k, layer.W_v):
            w = lin.weight.view(H, d, -1)[keep].reshape(len(keep) * d, -1)  # (H'*d, E_in)
            lin.weight = nn.Parameter(w.clone())
            if lin.bias is not None:
                lin.bias = nn.Parameter(lin.bias.view(H, d)[keep].reshape(-1).clone())
        w = layer.W_o.weight.view(layer.W_o.weight.shape[0], H, d)[:, keep].reshape(layer.W_o.weight.shape[0], -1)
        layer.W_o.weight = nn.Parameter(w.clone())  # (E_out, H'*d)
    layer._alive = [alive[i] for i in keep]
    layer.num_heads = len(keep)
    layer.pruned_heads = set(range(len(alive) + len(getattr(layer, "pruned_heads", ())))) - set(layer._alive)
    return layer


def fresh_default_linears(layer, heads):
    """huggingface/transformers' prune_linear_layer style: nn.Linear(...) in the default dtype."""
    done = getattr(layer, "pruned_heads", set())
    heads = set(heads) - done
    alive = [h for h in range(layer.num_heads + len(done)) if h not in done]
    idx = torch.tensor([h not in heads for h in alive]).repeat_interleave(layer.head_dim).nonzero().flatten()

    def linear(old, dim):
        w = old.weight.index_select(dim, idx)
        new = nn.Linear(w.shape[1], w.shape[0], bias=old.bias is not None)  # float32
        with torch.no_grad():
            new.weight.copy_(w)
            if old.bias is not None:
                new.bias.copy_(old.bias[idx] if dim == 0 else old.bias)
        return new

    layer.W_q, layer.W_k, layer.W_v = (linear(m, 0) for m in (layer.W_q, layer.W_k, layer.W_v))
    layer.W_o = linear(layer.W_o, 1)
    layer.num_heads = len(alive) - len(heads & set(alive))
    layer.pruned_heads = done | (heads & set(alive))
    return layer


WRONG = {
    o_rows: "W_o pruned by rows",
    only_w_q: "pruning W_q only",
    num_heads_unchanged: "num_heads not updated",
    current_numbering: "heads taken as positions in the already-pruned layer",
    fresh_default_linears: "float32 in a float64 layer",
}
CORRECT = [new_linears, reshaped]
