"""`entropy(p)` of Hugging Face's bertology example: plogp = p * log(p); plogp[p == 0] = 0; -plogp.sum(-1).

Source: https://github.com/huggingface/transformers, examples/research_projects/bertology/run_bertology.py
`def entropy(p)` (commit not recorded).
Licence: Apache-2.0.
Adapter: NumPy in and out through torch.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "attention_entropy",
    "source": "huggingface/transformers examples/research_projects/bertology/run_bertology.py entropy",
    "licence": "Apache-2.0",
    "verdict": "full",
    "cause": "correct: 0 log 0 set to 0, nats, the dtype kept.",
    "named": [],
    "false": [],
}


def entropy(p):
    plogp = p * torch.log(p)
    plogp[p == 0] = 0
    return -plogp.sum(dim=-1)


def attention_entropy(weights):
    return entropy(torch.from_numpy(np.asarray(weights))).numpy()
