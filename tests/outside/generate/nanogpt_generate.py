"""`GPT.generate` of Karpathy's nanoGPT: crop to block_size, logits[:, -1, :] / temperature, optional top-k,
softmax, torch.multinomial(probs, num_samples=1), append.

Source: https://github.com/karpathy/nanoGPT, model.py `GPT.generate(self, idx, max_new_tokens,
temperature=1.0, top_k=None)` (commit not recorded).
Licence: MIT.
Adapter: a function of the model (its `self`); the course's model returns logits (nanoGPT's returns
(logits, loss)); block_size large enough for every case; `generator` and `use_cache` accepted and
unused (the original has neither).
"""
import torch
from torch.nn import functional as F

OUTSIDE = {
    "exercise": "generate",
    "source": "karpathy/nanoGPT model.py GPT.generate",
    "licence": "MIT",
    "verdict": "loses",
    "cause": "temperature 0 is not greedy (logits / 0 gives inf/NaN and multinomial fails), sampling ignores the generator (torch.multinomial without generator=), and use_cache is ignored (no model.new_caches()).",
    "named": [r"temperature (0|zero)|not greedy|argmax|divid\w+ by (the )?temperature|/ 0", r"generator", r"new_caches|one new token per call"],
    "false": [r"float64|dtype"],
}

_BLOCK_SIZE = 1 << 20


@torch.no_grad()
def _nanogpt_generate(model, idx, max_new_tokens, temperature=1.0, top_k=None):
    for _ in range(max_new_tokens):
        idx_cond = idx if idx.size(1) <= _BLOCK_SIZE else idx[:, -_BLOCK_SIZE:]
        logits = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    return _nanogpt_generate(model, prompt, max_new_tokens, temperature=temperature)
