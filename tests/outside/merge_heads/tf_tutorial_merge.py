"""The head merge of the TensorFlow Transformer tutorial's MultiHeadAttention.call:
transpose perm=[0, 2, 1, 3], reshape (batch_size, -1, d_model).

Source: https://github.com/tensorflow/docs, site/en/tutorials/text/transformer.ipynb
(`scaled_attention = tf.transpose(scaled_attention, perm=[0, 2, 1, 3])`; `concat_attention =
tf.reshape(scaled_attention, (batch_size, -1, self.d_model))`; commit not recorded).
Licence: Apache-2.0.
Adapter: NumPy's transpose/reshape; batch_size = x.shape[0], d_model = H * d.
"""
import numpy as np

OUTSIDE = {
    "exercise": "merge_heads",
    "source": "tensorflow/docs transformer tutorial MultiHeadAttention.call merge",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"leading ax",
    "cause": "it assumes exactly 4-D input (B, H, L, d): a fixed perm=[0, 2, 1, 3] fails on other ranks.",
    "named": [r"4-D|leading ax[ie]s|exactly one batch|perm|rank"],
    "false": [r"without the transpose|transpose (is )?missing", r"dtype|float64 for float32"],
}


def merge_heads(x):
    x = np.asarray(x)
    batch_size, heads, d = x.shape[0], x.shape[-3], x.shape[-1]
    scaled_attention = np.transpose(x, (0, 2, 1, 3))
    concat_attention = np.reshape(scaled_attention, (batch_size, -1, heads * d))
    return concat_attention
