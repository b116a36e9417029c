"""fairseq's `SinusoidalPositionalEmbedding.get_embedding`: frequencies exp(-i * log(10000) / (half_dim - 1)),
and the table laid out as [sin(all frequencies) | cos(all frequencies)] ("matches tensor2tensor, differs
slightly from Attention Is All You Need").

Source: https://github.com/facebookresearch/fairseq, fairseq/modules/sinusoidal_positional_embedding.py
`get_embedding(num_embeddings, embedding_dim, padding_idx)` (the same code in HF's FSMT,
modeling_fsmt.py; commit not recorded).
Licence: MIT.
Adapter: positions offset .. offset + length - 1 (fairseq's table rows), base in place of 10000,
no padding row (padding_idx None).
"""
import math

import torch

OUTSIDE = {
    "exercise": "sinusoidal_positions",
    "source": "facebookresearch/fairseq fairseq/modules/sinusoidal_positional_embedding.py get_embedding",
    "licence": "MIT",
    "verdict": "loses",
    "cause": "two convention differences: sines in the first half and cosines in the second (not interleaved), and the frequency exponent i / (dim/2 - 1) instead of 2i / dim.",
    "named": [r"\[sin\b.*\|.*cos|sin(es)? (in|first) .*half|not interleaved|halves|another order|column", r"half_dim - 1|dim/2 - 1|d/2 - 1|exponent"],
    "false": [r"(fails|wrong) (with|on|at) .*offset|offset (is )?ignored", r"is float64|dtype"],
}


def get_embedding(num_embeddings, embedding_dim, padding_idx=None, base=10000.0, offset=0):
    half_dim = embedding_dim // 2
    emb = math.log(base) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
    emb = torch.arange(offset, offset + num_embeddings, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
    if embedding_dim % 2 == 1:
        emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
    if padding_idx is not None:
        emb[padding_idx, :] = 0
    return emb


def sinusoidal_positions(length, dim, offset=0, base=10000.0):
    return get_embedding(length, dim, base=base, offset=offset)
