"""`scaled_dot_product_attention` of the TensorFlow tutorial "Transformer model for language
understanding" (2019-2022): logits += mask * -1e9 with 1 meaning *masked*, softmax over the last axis.

Source: https://github.com/tensorflow/docs, site/en/tutorials/text/transformer.ipynb
(`def scaled_dot_product_attention(q, k, v, mask)`); commit not recorded.
Licence: Apache-2.0.
Adapter: TF ops written with NumPy equivalents (matmul, cast, softmax along -1, float32 `dk`);
the course's mask (True = may attend) converted to the tutorial's (1.0 = masked).
"""
import numpy as np

OUTSIDE = {
    "exercise": "scaled_dot_product_attention",
    "source": "tensorflow/docs site/en/tutorials/text/transformer.ipynb scaled_dot_product_attention",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"fully masked|all masked|padding|no key",
    "cause": "the mask adds -1e9 instead of excluding keys (a fully masked row gets uniform weights, the mean of the values, not zeros), and the scale is sqrt of d_k cast to float32 (tf.cast(..., tf.float32)), off by ~1e-8 relative for float64 inputs whose d_k has no exact float32 square root.",
    "named": [r"fully masked", r"-1e9|large negative|uniform", r"float32 .*scale|scale .*float32|sqrt\(d_k\) .*float32"],
    "false": [r"without the 1/sqrt", r"transpos", r"fails on scores of a few units"],
}


def _tf_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _tutorial_sdpa(q, k, v, mask):
    matmul_qk = np.matmul(q, np.swapaxes(k, -1, -2))
    dk = np.float32(k.shape[-1])
    scaled_attention_logits = matmul_qk / np.sqrt(dk)
    if mask is not None:
        scaled_attention_logits += (mask * -1e9)
    attention_weights = _tf_softmax(scaled_attention_logits, axis=-1)
    output = np.matmul(attention_weights, v)
    return output, attention_weights


def scaled_dot_product_attention(q, k, v, mask=None):
    tf_mask = None if mask is None else (~np.asarray(mask, dtype=bool)).astype(np.float32)
    return _tutorial_sdpa(np.asarray(q), np.asarray(k), np.asarray(v), tf_mask)
