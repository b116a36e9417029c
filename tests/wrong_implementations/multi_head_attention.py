"""`multi_head_attention` (NumPy): classic bugs and correct alternatives."""
import math

import numpy as np

from solutions.attention import scaled_dot_product_attention
from solutions.heads import merge_heads, split_heads
from solutions.masking import masked_softmax


def _proj(x, params, n, bias=True):
    b = params.get(f"b_{n}")
    return x @ params[f"W_{n}"] + (b if bias and b is not None else 0)


def _mask(mask):
    if mask is None:
        return None
    mask = np.asarray(mask)
    return mask[:, None] if mask.ndim == 3 else mask


def _layer(query, key, value, params, num_heads, mask=None, *, bias=True, w_o=True, v_from_k=False):
    q = split_heads(_proj(query, params, "q", bias), num_heads)
    k = split_heads(_proj(key, params, "k", bias), num_heads)
    v = k if v_from_k else split_heads(_proj(value, params, "v", bias), num_heads)
    heads, weights = scaled_dot_product_attention(q, k, v, _mask(mask))
    merged = merge_heads(heads)
    return (_proj(merged, params, "o", bias) if w_o else merged), weights


def forgets_w_o(query, key, value, params, num_heads, mask=None):
    return _layer(query, key, value, params, num_heads, mask, w_o=False)


def attends_to_keys(query, key, value, params, num_heads, mask=None):
    return _layer(query, key, value, params, num_heads, mask, v_from_k=True)


def ignores_biases(query, key, value, params, num_heads, mask=None):
    return _layer(query, key, value, params, num_heads, mask, bias=False)


def plain_reshape(query, key, value, params, num_heads, mask=None):
    def split(x):
        B, L, F = x.shape
        return x.reshape(B, num_heads, L, F // num_heads)

    q, k, v = (split(_proj(x, params, n)) for x, n in ((query, "q"), (key, "k"), (value, "v")))
    heads, weights = scaled_dot_product_attention(q, k, v, _mask(mask))
    B, H, L, d = heads.shape
    return _proj(heads.reshape(B, L, H * d), params, "o"), weights


def model_width_scale(query, key, value, params, num_heads, mask=None):
    q = split_heads(_proj(query, params, "q"), num_heads)
    k = split_heads(_proj(key, params, "k"), num_heads)
    v = split_heads(_proj(value, params, "v"), num_heads)
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(params["W_q"].shape[1])
    weights = masked_softmax(scores, _mask(mask))
    return _proj(merge_heads(weights @ v), params, "o"), weights


def einsum(query, key, value, params, num_heads, mask=None):
    H = num_heads
    q = np.einsum("ble,ef->blf", query, params["W_q"]) + params.get("b_q", 0)
    k = np.einsum("ble,ef->blf", key, params["W_k"]) + params.get("b_k", 0)
    v = np.einsum("ble,ef->blf", value, params["W_v"]) + params.get("b_v", 0)
    q, k, v = (x.reshape(x.shape[0], x.shape[1], H, -1) for x in (q, k, v))  # (B, L, H, d)
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    weights = masked_softmax(scores, _mask(mask))
    heads = np.einsum("bhqk,bkhd->bqhd", weights, v)  # (B, Lq, H, d_v)
    merged = heads.reshape(heads.shape[0], heads.shape[1], -1)
    return merged @ params["W_o"] + params.get("b_o", 0), weights


def loop_over_heads(query, key, value, params, num_heads, mask=None):
    d_k = params["W_q"].shape[1] // num_heads
    d_v = params["W_v"].shape[1] // num_heads
    outs, weights = [], []
    for h in range(num_heads):
        sk, sv = slice(h * d_k, (h + 1) * d_k), slice(h * d_v, (h + 1) * d_v)
        q = query @ params["W_q"][:, sk] + (params["b_q"][sk] if "b_q" in params else 0)
        k = key @ params["W_k"][:, sk] + (params["b_k"][sk] if "b_k" in params else 0)
        v = value @ params["W_v"][:, sv] + (params["b_v"][sv] if "b_v" in params else 0)
        m = None if mask is None else (np.asarray(mask)[:, h] if np.ndim(mask) == 4 else mask)
        o, w = scaled_dot_product_attention(q, k, v, m)
        outs.append(o)
        weights.append(w)
    out = np.concatenate(outs, axis=-1) @ params["W_o"] + params.get("b_o", 0)
    return out, np.stack(weights, axis=1)


WRONG = {
    forgets_w_o: "missing the output projection W_o",
    attends_to_keys: "key projection for the values",
    ignores_biases: "ignores the biases",
    plain_reshape: "reshape but no transpose",
    model_width_scale: "1/sqrt(H*d_k)",
}
CORRECT = [einsum, loop_over_heads]
