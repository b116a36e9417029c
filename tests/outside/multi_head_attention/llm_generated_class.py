"""The NumPy `MultiHeadAttention` class GPT-4-Turbo wrote for a code-quality study: np.dot projections,
split_into_heads with np.transpose(x, perm=[0, 2, 1, 3]) (TensorFlow's keyword), a scaled_dot_product_attention
with np.dot(query, key.T).

Source: https://github.com/RasKrebs/llms4code_code_quality, multihead-attention/gpt-4-turbo/medium.py (commit
not recorded).
Licence: none stated in the file (reproduced for testing with attribution).
Adapter: the class's weights wq, wk, wv, wo taken from the course's params (biases have no place in it);
forward(q, k, v) called; mask accepted and unused; returns (output, None).
The forward after the projections is cut off in the index; only the lines shown (projections and
split_into_heads, which already raise) are reproduced.
"""
import numpy as np

OUTSIDE = {
    "exercise": "multi_head_attention",
    "source": "RasKrebs/llms4code_code_quality multihead-attention/gpt-4-turbo/medium.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "np.transpose is called with TensorFlow's perm= keyword, so every call raises TypeError in split_into_heads.",
    "named": [r"TypeError|perm"],
    "false": [r"fails (on|with) Lq != Lk|assumes Lq = Lk", r"float64 for float32"],
}


class _GeneratedMHA:
    def __init__(self, embedding_size, num_heads, wq, wk, wv, wo):
        self.embedding_size = embedding_size
        self.num_heads = num_heads
        assert embedding_size % num_heads == 0
        self.depth = embedding_size // num_heads
        self.wq, self.wk, self.wv, self.wo = wq, wk, wv, wo

    def split_into_heads(self, x):
        x = x.reshape(x.shape[0], x.shape[1], self.num_heads, self.depth)
        return np.transpose(x, perm=[0, 2, 1, 3])

    def forward(self, q, k, v):
        q = self.split_into_heads(np.dot(q, self.wq))
        k = self.split_into_heads(np.dot(k, self.wk))
        v = self.split_into_heads(np.dot(v, self.wv))
        raise NotImplementedError("the rest of the original's forward is not reproduced (never reached)")


def multi_head_attention(query, key, value, params, num_heads, mask=None):
    mha = _GeneratedMHA(params["W_q"].shape[1], num_heads, params["W_q"], params["W_k"], params["W_v"], params["W_o"])
    return mha.forward(np.asarray(query), np.asarray(key), np.asarray(value)), None
