"""`sinusoidal_positions` (PyTorch): classic bugs and correct alternatives."""
import math

import torch


def halves_like_tensor2tensor(length, dim, offset=0, base=10000.0):
    # tensor2tensor's get_timing_signal_1d concatenates [sin, cos] instead of interleaving them
    pos = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(base) * torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return torch.cat([torch.sin(pos * freq), torch.cos(pos * freq)], dim=-1).float()


def no_offset(length, dim, offset=0, base=10000.0):
    pe = torch.zeros(length, dim, dtype=torch.float64)
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(base) / dim))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()


def cos_first(length, dim, offset=0, base=10000.0):
    pe = torch.zeros(length, dim, dtype=torch.float64)
    pos = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
    div = base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    pe[:, 0::2] = torch.cos(pos / div)
    pe[:, 1::2] = torch.sin(pos / div)
    return pe.float()


def exponent_per_feature(length, dim, offset=0, base=10000.0):
    pe = torch.zeros(length, dim, dtype=torch.float64)
    pos = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
    div = base ** (torch.arange(dim // 2, dtype=torch.float64) / dim)  # i/dim, not 2i/dim
    pe[:, 0::2] = torch.sin(pos / div)
    pe[:, 1::2] = torch.cos(pos / div)
    return pe.float()


def annotated_transformer_float32(length, dim, offset=0, base=10000.0):
    """Correct: The Annotated Transformer's PositionalEncoding, all in float32 (at the positions
    a model of this size sees, float32's angles are close enough)."""
    if dim % 2 == 1:
        raise ValueError("dim must be even")
    pe = torch.zeros(length, dim)
    position = torch.arange(offset, offset + length).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, dim, 2).float() * -(math.log(base) / dim))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def unchecked_loop(length, dim, offset=0, base=10000.0):
    # right on every even dim, but an odd one gives dim + 1 features instead of a ValueError
    rows = []
    for t in range(length):
        row = []
        for i in range((dim + 1) // 2):
            angle = (offset + t) / base ** (2 * i / dim)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).float()


def loop(length, dim, offset=0, base=10000.0):
    """Correct: the paper's formula, entry by entry."""
    if dim % 2:
        raise ValueError(f"odd dim {dim}")
    rows = []
    for t in range(length):
        row = []
        for i in range(dim // 2):
            angle = (offset + t) / base ** (2 * i / dim)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).float()


def stacked(length, dim, offset=0, base=10000.0):
    """Correct: sin and cos stacked on a new last axis, then flattened into pairs."""
    if dim % 2 != 0:
        raise ValueError("sinusoidal positions need an even dim")
    pos = torch.arange(length, dtype=torch.float64)[:, None] + offset
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = pos * inv
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(length, dim).to(torch.float32)


WRONG = {
    halves_like_tensor2tensor: "all the sines first",
    no_offset: "ignore the offset",
    cos_first: "sines and cosines are swapped",
    exponent_per_feature: "exponent i/dim",
    unchecked_loop: "where it must raise ValueError",
}
CORRECT = [loop, stacked, annotated_transformer_float32]
