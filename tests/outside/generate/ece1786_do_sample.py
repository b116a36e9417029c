"""`generate0` of a University of Toronto ECE1786 assignment (minGPT-style): logits / temperature,
optional top-k, softmax, then torch.multinomial if do_sample else topk(probs, k=1); also returns the
chosen tokens' probabilities.

Source: https://github.com/zwxv6/ECE1786, A3/A3_2_5.py `generate0(self, idx, device, max_new_tokens,
temperature=1.0, do_sample=False, top_k=None)` (commit not recorded).
Licence: none stated in the repository (coursework; reproduced for testing with attribution).
Adapter: a function of the model; the course's model returns logits (minGPT's returns (logits, loss));
temperature 0 means do_sample=False (its greedy branch, temperature left at its default 1.0),
otherwise do_sample=True with that temperature; the token ids returned, the probabilities dropped;
`generator` and `use_cache` unused (it has neither).
"""
import torch
from torch.nn import functional as F

OUTSIDE = {
    "exercise": "generate",
    "source": "zwxv6/ECE1786 A3/A3_2_5.py generate0",
    "licence": "none stated",
    "verdict": "loses",
    "failing": r"sampled",
    "cause": "sampling calls torch.multinomial without the caller's generator (sampled tokens do not follow it), and use_cache is ignored: the whole sequence is run again every step, never model.new_caches() (greedy values are right).",
    "named": [r"generator", r"new_caches|one new token per call|the cache (is )?(not|never) used|without (using )?the cache"],
    "false": [r"argmax (is )?wrong|not greedy", r"divid\w+ by (the )?temperature"],
}


@torch.no_grad()
def _generate0(model, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
    wordsProbability = torch.ones(idx.shape).float()
    for _ in range(max_new_tokens):
        idx_cond = idx
        logits = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float('Inf')
        probs = F.softmax(logits, dim=-1)
        if do_sample:
            idx_next = torch.multinomial(probs, num_samples=1)
        else:
            _, idx_next = torch.topk(probs, k=1, dim=-1)
        idx = torch.cat((idx, idx_next), dim=1)
        probability = torch.gather(probs, 1, idx_next)
        wordsProbability = torch.cat((wordsProbability, probability), dim=1)
    return idx, wordsProbability


def generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    if temperature == 0:
        return _generate0(model, prompt, max_new_tokens)[0]
    return _generate0(model, prompt, max_new_tokens, temperature=temperature, do_sample=True)[0]
