"""Chapter 4: the multi-head attention layer (NumPy function, then a PyTorch module).

Shapes: B batch, H heads, Lq/Lk query/key lengths, E_q/E_k/E_v input features,
d_k/d_v features per head. A mask is boolean, True means "may attend".
"""
import numpy as np
import torch
from torch import nn

from .attention import scaled_dot_product_attention  # noqa: F401  (chapter 1)
from .heads import merge_heads, split_heads  # noqa: F401  (chapter 3)


def multi_head_attention(query, key, value, params, num_heads, mask=None):
    """Exercise ``multi_head_attention`` (chapter 4, section "The layer in NumPy").

    Project, split into heads, attend, merge, project: ``x @ W`` with ``W (in, out)``.

    Args:
        query: ``(B, Lq, E_q)``; key: ``(B, Lk, E_k)``; value: ``(B, Lk, E_v)``.
        params: dict with ``W_q (E_q, H*d_k)``, ``W_k (E_k, H*d_k)``, ``W_v (E_v, H*d_v)``,
            ``W_o (H*d_v, E_out)`` and optional biases ``b_q (H*d_k,)``, ``b_k (H*d_k,)``,
            ``b_v (H*d_v,)``, ``b_o (E_out,)`` (a missing bias means no bias).
        num_heads: ``H``.
        mask: optional boolean, True = may attend. ``(Lq, Lk)`` or ``(B, Lq, Lk)`` masks are
            shared by all heads; a 4-D mask broadcasts against ``(B, H, Lq, Lk)``.

    Returns:
        ``(out, weights)``: ``out (B, Lq, E_out)``, ``weights (B, H, Lq, Lk)``.
    """
    raise NotImplementedError(
        "exercise `multi_head_attention`: implement it in mha_exercises/layer.py (chapter 4)"
    )


def parameter_count(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    """Exercise ``parameter_count`` (chapter 4, section "Counting parameters").

    Trainable parameters of a multi-head attention layer in the Keras convention: ``key_dim``
    and ``value_dim`` are *per head*, ``value_dim`` defaults to ``key_dim``, ``output_dim`` to
    ``query_dim``, and keys and values come in with ``query_dim`` features. A 4-head layer
    with ``key_dim=128`` on 100-dim inputs has 206,436.

    Returns:
        An ``int``.
    """
    raise NotImplementedError("exercise `parameter_count`: implement it in mha_exercises/layer.py (chapter 4)")


class MultiHeadAttention(nn.Module):
    """Exercise ``MultiHeadAttention`` (chapter 4, section "The layer in PyTorch").

    ``MultiHeadAttention(embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0)``
    with submodules ``W_q W_k W_v W_o`` (``nn.Linear``: ``W_q: E -> E``, ``W_k: kdim -> E``,
    ``W_v: vdim -> E``, ``W_o: E -> E``) and attributes ``num_heads`` and
    ``head_dim = embed_dim // num_heads``.

    ``forward(query, key, value, mask=None, head_mask=None) -> (out, weights)``:
    query ``(B, Lq, E)``, key ``(B, Lk, kdim)``, value ``(B, Lk, vdim)``; ``mask`` boolean,
    True = may attend, ``(Lq, Lk)`` / ``(B, Lq, Lk)`` shared by the heads or 4-D against
    ``(B, H, Lq, Lk)``; ``head_mask (H,)`` multiplies each head's output before ``W_o``
    (0 removes a head). Returns ``out (B, Lq, E)`` and ``weights (B, H, Lq, Lk)`` (before
    dropout). Dropout acts on the attention weights in training mode only. Fully masked
    query rows give zero weights, never NaN. Written in torch operations, so that gradients
    reach the inputs and every weight.

    ``MultiHeadAttention.from_torch(ref)`` builds a layer with identical outputs from a
    ``torch.nn.MultiheadAttention(..., batch_first=True)``.
    """

    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__()
        raise NotImplementedError(
            "exercise `MultiHeadAttention`: implement __init__ in mha_exercises/layer.py (chapter 4)"
        )

    def forward(self, query, key, value, mask=None, head_mask=None):
        raise NotImplementedError(
            "exercise `MultiHeadAttention`: implement forward in mha_exercises/layer.py (chapter 4)"
        )

    @classmethod
    def from_torch(cls, ref):
        raise NotImplementedError(
            "exercise `MultiHeadAttention`: implement from_torch in mha_exercises/layer.py (chapter 4)"
        )
