"""`generate(model, idx, max_new_tokens, block_size)` of a transformer study repository (the nanoGPT lecture's
bigram/GPT generate): crop to block_size, logits of the last step, softmax, torch.multinomial, append — no
temperature, no greedy branch.

Source: https://github.com/NicolasOng/TransformerStudy, generate.py (commit not recorded).
Licence: none stated in the file (reproduced for testing with attribution).
Adapter: the course's model returns logits (the original's returns (logits, loss)); block_size large enough for
every case; no progress bar; temperature, generator and use_cache accepted and unused (it has none).
"""
import torch
from torch.nn import functional as F

OUTSIDE = {
    "exercise": "generate",
    "source": "NicolasOng/TransformerStudy generate.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "it always samples (no greedy decoding at temperature 0, no temperature at all), without the caller's generator, and never uses the cache.",
    "named": [r"temperature (is )?ignored|not greedy|argmax|greedy (decoding|at temperature)", r"generator", r"new_caches|one new token per call"],
    "false": [r"float64|dtype"],
}

_BLOCK_SIZE = 1 << 20


@torch.no_grad()
def _study_generate(model, idx, max_new_tokens, block_size):
    for _ in range(max_new_tokens):
        idx_cond = idx[:, -block_size:]
        logits = model(idx_cond)
        logits = logits[:, -1, :]
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    return _study_generate(model, prompt, max_new_tokens, _BLOCK_SIZE)
