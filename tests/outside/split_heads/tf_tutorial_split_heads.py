"""`MultiHeadAttention.split_heads` of the TensorFlow Transformer tutorial: reshape to
(batch_size, -1, num_heads, depth), transpose perm=[0, 2, 1, 3].

Source: https://github.com/tensorflow/docs, site/en/tutorials/text/transformer.ipynb
(`def split_heads(self, x, batch_size)`, depth = d_model // num_heads; commit not recorded).
Licence: Apache-2.0.
Adapter: tf.reshape/tf.transpose written with NumPy's; batch_size = x.shape[0] and
depth = x.shape[-1] // num_heads, as the layer computes them.
"""
import numpy as np

OUTSIDE = {
    "exercise": "split_heads",
    "source": "tensorflow/docs transformer tutorial split_heads",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"leading ax",
    "cause": "it assumes exactly one batch axis: (B, C, L, H*d) has C folded into the sequence and (L, H*d) is read as a batch of L.",
    "named": [r"3-D|leading ax[ie]s|one batch axis|exactly one|batch_size, -1"],
    "false": [r"without the transpose|transpose (is )?missing", r"dtype|float64 for float32", r"must raise ValueError|instead of ValueError"],
}


def _tutorial_split_heads(x, batch_size, num_heads, depth):
    x = np.reshape(x, (batch_size, -1, num_heads, depth))
    return np.transpose(x, (0, 2, 1, 3))


def split_heads(x, num_heads):
    x = np.asarray(x)
    return _tutorial_split_heads(x, x.shape[0], num_heads, x.shape[-1] // num_heads)
