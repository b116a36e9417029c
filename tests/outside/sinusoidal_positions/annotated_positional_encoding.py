"""The `PositionalEncoding` table of The Annotated Transformer: div_term = exp(arange(0, d, 2) * -(log(10000) / d)),
pe[:, 0::2] = sin(position * div_term), pe[:, 1::2] = cos(position * div_term), in float32.

Source: https://github.com/harvardnlp/annotated-transformer, the_annotated_transformer.py
`class PositionalEncoding` (__init__; commit not recorded).
Licence: MIT.
Adapter: the table's rows offset .. offset + length - 1 (the module slices pe[:, :x.size(1)] from 0);
base in place of 10000; no dropout, no batch axis.
"""
import math

import torch

OUTSIDE = {
    "exercise": "sinusoidal_positions",
    "source": "harvardnlp/annotated-transformer PositionalEncoding",
    "licence": "MIT",
    "verdict": "loses",
    "failing": r"odd dim",
    "cause": "correct layout and frequencies (float32 arithmetic within tolerance); an odd dim is not refused (pe[:, 1::2] gets one column too few and the assignment raises RuntimeError, not ValueError).",
    "named": [r"odd|ValueError"],
    "false": [r"interleav|halves|another order", r"(fails|wrong) (with|on|at) .*offset|offset (is )?ignored", r"wrong frequenc|exponent"],
}


def _annotated_table(max_len, d_model, base=10000.0, offset=0):
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(offset, offset + max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(base) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def sinusoidal_positions(length, dim, offset=0, base=10000.0):
    return _annotated_table(length, dim, base=base, offset=offset)
