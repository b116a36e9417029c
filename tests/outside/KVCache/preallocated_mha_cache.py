"""`KVCacheMHA` of a public inference-engine repository: k and v caches preallocated with
torch.empty((batch, num_kv_heads, max_tokens, head_dim), device=device) — no dtype given, and the value
cache shaped with the *key* head_dim; update() writes at self.pos and returns the filled prefix.

Source: a public repository found through the public-code index (file opening `from model_config import
ModelConfig`, class KVCacheMHA(batch_size, max_tokens, model_config, dtype=torch.bfloat16, device="cuda");
repository name not shown by the index; commit not recorded).
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: the course's KVCache() takes no sizes, so the buffers are made at the first update from that
update's batch, heads and head_dim (the model_config's), with max_tokens = 64 and device cpu; the constructor's
`dtype` argument is accepted and unused, as in the original.
"""
import torch

OUTSIDE = {
    "exercise": "KVCache",
    "source": "public inference-engine repository, KVCacheMHA (name not shown by the index)",
    "licence": "unknown",
    "verdict": "loses",
    "cause": "the buffers are torch.empty without a dtype (float32 whatever comes in: float64 keys are rounded), and the value cache has the key's head_dim (d_v != d_k fails to copy).",
    "named": [r"float32|dtype|precision|rounded", r"d_v|head_dim|value.* shape"],
    "false": [r"dim=1|wrong axis|sequence axis"],
}

_MAX_TOKENS = 64


class KVCache:
    def __init__(self, dtype=torch.bfloat16, device="cpu"):
        self.device = device
        self.k_cache = self.v_cache = None
        self.pos = 0

    def _allocate(self, k):
        batch_size, num_kv_heads, _, head_dim = k.shape
        cache_shape = (batch_size, num_kv_heads, _MAX_TOKENS, head_dim)
        self.k_cache = torch.empty(cache_shape, device=self.device)
        self.v_cache = torch.empty(cache_shape, device=self.device)

    def update(self, k, v):
        if self.k_cache is None:
            self._allocate(k)
        len_seq = k.shape[2]
        self.k_cache[:, :, self.pos: self.pos + len_seq] = k
        self.v_cache[:, :, self.pos: self.pos + len_seq] = v
        self.pos += len_seq
        return self.k_cache[:, :, :self.pos], self.v_cache[:, :, :self.pos]

    def __len__(self):
        return self.pos
