"""`repeat_kv` (PyTorch): classic bugs and correct alternatives."""
import torch


def tiled_with_repeat(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)


def tiled_with_cat(x, n_rep):
    return torch.cat([x] * n_rep, dim=1)


def new_axis_before_heads(x, n_rep):
    B, Hkv, L, d = x.shape
    return x[:, None].expand(B, n_rep, Hkv, L, d).reshape(B, n_rep * Hkv, L, d)  # tiles too


def repeated_positions(x, n_rep):
    return x.repeat_interleave(n_rep, dim=-2)


def with_repeat_interleave(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=1)


def with_stack(x, n_rep):
    B, Hkv, L, d = x.shape
    return torch.stack([x] * n_rep, dim=2).reshape(B, Hkv * n_rep, L, d)


def with_index(x, n_rep):
    return x[:, torch.arange(x.shape[1] * n_rep) // n_rep].clone()


WRONG = {
    tiled_with_repeat: "tiled",
    tiled_with_cat: "tiled",
    new_axis_before_heads: "tiled",
    repeated_positions: "sequence axis",
}
CORRECT = [with_repeat_interleave, with_stack, with_index]
