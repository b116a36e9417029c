"""`multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads)` of a TensorTonic solutions repository (NumPy):
projections without biases, Q, K and V all reshaped with Q's (batch, seq_len), no mask, returns the output only.

Source: https://github.com/PTSown0222/TensorTonic-Solutions,
transformers-multi-head-attention/transformers-multi-head-attention.py (commit not recorded).
Licence: none stated in the file (reproduced for testing with attribution).
Adapter: the course's params dict unpacked into W_q, W_k, W_v, W_o (biases have no place in the original);
mask accepted and unused (it has none); returns (output, None): the original keeps no weights.
"""
import numpy as np

OUTSIDE = {
    "exercise": "multi_head_attention",
    "source": "PTSown0222/TensorTonic-Solutions transformers-multi-head-attention.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "K and V are reshaped with the query's seq_len (Lq != Lk raises) and d_model of the query (E_k, d_v differ fail), biases and the mask are ignored, and no weights are returned.",
    "named": [r"assumes Lq = Lk|with Lq != Lk it raises|query('s)? length|seq_len", r"bias(es)? (is |are )?(ignored|missing|not added)|without (the )?bias",
              r"mask (is )?ignored|ignor\w+ the mask", r"weights (is|are) None|no weights|NoneType"],
    "false": [r"without the 1/sqrt|not scaled", r"float64 for float32"],
}


def _tt_softmax(x, axis=-1):
    e_x = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e_x / np.sum(e_x, axis=axis, keepdims=True)


def _tensortonic_mha(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch_size, seq_len, d_model = Q.shape
    d_k = d_model // num_heads
    Q_proj = Q @ W_q
    K_proj = K @ W_k
    V_proj = V @ W_v
    Q_split = Q_proj.reshape(batch_size, seq_len, num_heads, d_k).transpose(0, 2, 1, 3)
    K_split = K_proj.reshape(batch_size, seq_len, num_heads, d_k).transpose(0, 2, 1, 3)
    V_split = V_proj.reshape(batch_size, seq_len, num_heads, d_k).transpose(0, 2, 1, 3)
    K_transposed = K_split.transpose(0, 1, 3, 2)
    attn_score = (Q_split @ K_transposed) / np.sqrt(d_k)
    attn_prob = _tt_softmax(attn_score)
    context = attn_prob @ V_split
    context_concat = context.transpose(0, 2, 1, 3).reshape(batch_size, seq_len, d_model)
    return context_concat @ W_o


def multi_head_attention(query, key, value, params, num_heads, mask=None):
    out = _tensortonic_mha(np.asarray(query), np.asarray(key), np.asarray(value), params["W_q"], params["W_k"],
                           params["W_v"], params["W_o"], num_heads)
    return out, None
