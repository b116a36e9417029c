"""Chapter 7: beyond the layer (PyTorch): chunked attention, grouped-query attention, KV cache.

Shapes: ``(B, H, L, d)``; a mask is boolean, True means "may attend"; causal masks align the
queries to the end of the keys (``j <= i + (Lk - Lq)``), as ``masking.causal_mask`` does.
"""
import torch
from torch import nn


def chunked_attention(q, k, v, chunk_size, causal=False):
    """Exercise ``chunked_attention`` (chapter 7, section "Attention in chunks").

    Scaled dot-product attention computed over key chunks of ``chunk_size`` with an online
    softmax (running max, running denominator, accumulator rescaled by ``exp(m_old - m_new)``),
    never holding the full ``(Lq, Lk)`` score matrix. Equal to the plain computation.

    Args:
        q ``(..., Lq, d_k)``, k ``(..., Lk, d_k)``, v ``(..., Lk, d_v)``: tensors.
        chunk_size: keys per chunk (``Lk`` need not be a multiple of it).
        causal: apply the end-aligned causal mask (with ``Lq > Lk`` the first ``Lq - Lk``
            queries see no key at all: their output is zero, never NaN).

    Returns:
        ``out (..., Lq, d_v)`` in the dtype of ``q``. The inputs are not modified.
    """
    raise NotImplementedError("exercise `chunked_attention`: implement it in mha_exercises/efficient.py (chapter 7)")


def repeat_kv(x, n_rep):
    """Exercise ``repeat_kv`` (chapter 7, section "Grouped-query attention").

    ``(B, Hkv, L, d) -> (B, Hkv * n_rep, L, d)``: each key/value head repeated ``n_rep`` times
    *consecutively* (heads ``0,0,1,1,...`` for ``n_rep=2``), so query head ``h`` reads
    key/value head ``h // n_rep``. The result is in the dtype of ``x``.
    """
    raise NotImplementedError("exercise `repeat_kv`: implement it in mha_exercises/efficient.py (chapter 7)")


class GroupedQueryAttention(nn.Module):
    """Exercise ``GroupedQueryAttention`` (chapter 7, section "Grouped-query attention").

    ``GroupedQueryAttention(embed_dim, num_heads, num_kv_heads, bias=True)``: self-attention
    with ``num_heads`` query heads sharing ``num_kv_heads`` key/value heads (MHA when equal,
    multi-query attention when 1). Submodules ``W_q: E -> H*d``, ``W_k: E -> Hkv*d``,
    ``W_v: E -> Hkv*d``, ``W_o: H*d -> E`` (``nn.Linear``), attributes ``num_heads``,
    ``num_kv_heads``, ``head_dim = E // H``.

    ``forward(x, mask=None, causal=False, cache=None) -> out (B, L, E)``: ``mask`` boolean
    broadcastable to ``(B, H, Lq, Lk)``; ``causal`` applies the end-aligned causal mask;
    with a ``KVCache``, the new keys and values are appended to it first and the queries
    attend to everything cached (so ``causal=True`` with a cache lets a new token see every
    earlier one). Query rows with no allowed key give a zero output, never NaN.
    """

    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=True):
        super().__init__()
        raise NotImplementedError(
            "exercise `GroupedQueryAttention`: implement __init__ in mha_exercises/efficient.py (chapter 7)"
        )

    def forward(self, x, mask=None, causal=False, cache=None):
        raise NotImplementedError(
            "exercise `GroupedQueryAttention`: implement forward in mha_exercises/efficient.py (chapter 7)"
        )


class KVCache:
    """Exercise ``KVCache`` (chapter 7, section "Decoding with a KV cache").

    Holds the keys and values of the tokens decoded so far. ``update(k, v)`` appends
    ``k (B, Hkv, L_new, d)`` and ``v (B, Hkv, L_new, d_v)`` along the sequence axis and returns
    all cached ``(keys, values)``; ``len(cache)`` is the number of cached positions.
    Decoding one token at a time with a cache equals the full causal pass.
    """

    def __init__(self):
        raise NotImplementedError("exercise `KVCache`: implement __init__ in mha_exercises/efficient.py (chapter 7)")

    def update(self, k, v):
        raise NotImplementedError("exercise `KVCache`: implement update in mha_exercises/efficient.py (chapter 7)")

    def __len__(self):
        raise NotImplementedError("exercise `KVCache`: implement __len__ in mha_exercises/efficient.py (chapter 7)")
