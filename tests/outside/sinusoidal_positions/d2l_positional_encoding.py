"""The table of Dive into Deep Learning's `PositionalEncoding`: X = arange(max_len)[:, None] /
pow(10000, arange(0, d, 2) / d); P[:, :, 0::2] = sin(X); P[:, :, 1::2] = cos(X), float32.

Source: https://github.com/d2l-ai/d2l-en, d2l/torch.py `class PositionalEncoding` (__init__; commit not recorded).
Licence: MIT-0 (code).
Adapter: rows offset .. offset + length - 1; base in place of 10000; the batch axis of 1 dropped; no dropout.
"""
import torch

OUTSIDE = {
    "exercise": "sinusoidal_positions",
    "source": "d2l-ai/d2l-en d2l/torch.py PositionalEncoding",
    "licence": "MIT-0",
    "verdict": "loses",
    "failing": r"odd dim",
    "cause": "correct table (float32 arithmetic within tolerance); an odd dim is not refused with ValueError (the 1::2 assignment raises RuntimeError).",
    "named": [r"odd|ValueError"],
    "false": [r"interleav|halves|another order", r"(fails|wrong) (with|on|at) .*offset|offset (is )?ignored", r"wrong frequenc|exponent"],
}


def _d2l_table(max_len, num_hiddens, base=10000.0, offset=0):
    P = torch.zeros((1, max_len, num_hiddens))
    X = torch.arange(offset, offset + max_len, dtype=torch.float32).reshape(
        -1, 1) / torch.pow(base, torch.arange(
        0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
    P[:, :, 0::2] = torch.sin(X)
    P[:, :, 1::2] = torch.cos(X)
    return P


def sinusoidal_positions(length, dim, offset=0, base=10000.0):
    return _d2l_table(length, dim, base=base, offset=offset)[0]
