"""The key/value repetition of a GQA study module: torch.repeat_interleave(K, num_q_heads // num_kv_groups, 1)
over the head axis (B, Hkv, L, d) — the operation Hugging Face's repeat_kv says it is equivalent to.

Source: https://github.com/HuichuanLI/play-with-instruct-model, big_model/GQA.py (`K = torch.repeat_interleave(K,
self.num_q_heads // self.num_kv_groups, 1)`; commit not recorded).
Licence: none stated in the file (reproduced for testing with attribution).
Adapter: the line as a function of (x, n_rep).
"""
import torch

OUTSIDE = {
    "exercise": "repeat_kv",
    "source": "HuichuanLI/play-with-instruct-model big_model/GQA.py (repeat_interleave line)",
    "licence": "none stated",
    "verdict": "full",
    "cause": "correct: each kv head repeated n_rep times consecutively.",
    "named": [],
    "false": [],
}


def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, n_rep, 1)
