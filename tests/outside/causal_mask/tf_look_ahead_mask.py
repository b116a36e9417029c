"""`create_look_ahead_mask` of the TensorFlow Transformer tutorial: 1 - band_part(ones((size, size)), -1, 0),
a float mask where 1 means *masked*.

Source: https://github.com/tensorflow/docs, site/en/tutorials/text/transformer.ipynb
`create_look_ahead_mask(size)` (commit not recorded).
Licence: Apache-2.0.
Adapter: band_part(-1, 0) written as np.tril; one size (the number of queries); returned as the
tutorial returns it (float32, 1 = masked): which value means what is the function's own output.
"""
import numpy as np

OUTSIDE = {
    "exercise": "causal_mask",
    "source": "tensorflow/docs transformer tutorial create_look_ahead_mask",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "cause": "it returns a float mask with 1 where attending is *forbidden* (the inverse of True = may attend), and a square one from one size.",
    "named": [r"invert|invers|negat|opposite|flipped|True where .*(forbid|not)|1 (means|where) .*mask",
              r"dtype float32, expected a boolean|not (a )?bool|\(Lq, Lq\)"],
    "false": [r"off by one"],
}


def create_look_ahead_mask(size):
    mask = 1 - np.tril(np.ones((size, size), dtype=np.float32))
    return mask


def causal_mask(num_queries, num_keys=None):
    return create_look_ahead_mask(num_queries)
