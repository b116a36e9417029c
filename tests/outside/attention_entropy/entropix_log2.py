"""The attention entropy of entropix (xjdr-alt), as quoted in a public write-up:
-sum(p * log2(clip(p, 1e-10, 1.0)), axis=-1) — in bits.

Source: https://github.com/xjdr-alt/entropix (jax sampler, `attn_entropy = -jnp.sum(attention_probs *
jnp.log2(jnp.clip(attention_probs, 1e-10, 1.0)), axis=-1)`), as quoted in a public blog post found
through the public-code index; commit not recorded.
Licence: Apache-2.0 (entropix).
Adapter: jnp written as np.
"""
import numpy as np

OUTSIDE = {
    "exercise": "attention_entropy",
    "source": "xjdr-alt/entropix attention entropy (log2)",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "cause": "it uses log2 (bits), not the natural log (nats): every entropy is 1/ln 2 = 1.44 times the contract's.",
    "named": [r"log2|bits|base 2|ln ?\(?2|1\.44|constant factor|factor of 1\.4"],
    "false": [r"(gives|produces|has) NaN|NaN at", r"wrong axis|over axis 0"],
}


def attention_entropy(weights):
    attention_probs = np.asarray(weights)
    return -np.sum(attention_probs * np.log2(np.clip(attention_probs, 1e-10, 1.0)), axis=-1)
