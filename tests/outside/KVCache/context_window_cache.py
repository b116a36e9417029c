"""A `KVCache(context_length)` of a small LLM repository: the first update stored, later ones
torch.cat((self.k, k), dim=1)[:, -context_length:] — on the (B, L, H, d) layout, keeping the last
context_length positions.

Source: a public repository found through the public-code index (file `import torch` then
`class KVCache: def __init__(self, context_length: int)` with `first_prefill`; repository name not shown by the
index; commit not recorded).
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: the course's (B, Hkv, L, d) transposed to the original's (B, L, Hkv, d) and back (a layout change);
context_length = 4096 (no case comes near it); __len__ reads the cached length (the original has none: its
model tracks positions).
"""
import torch

OUTSIDE = {
    "exercise": "KVCache",
    "source": "public small-LLM repository KVCache(context_length) (name not shown by the index)",
    "licence": "unknown",
    "verdict": "full",
    "cause": "correct once the layout is converted (the window is never reached).",
    "named": [],
    "false": [],
}


class _WindowCache:
    def __init__(self, context_length: int):
        self.k = None
        self.v = None
        self.first_prefill = True
        self.context_length = context_length

    def update(self, k, v):
        if self.k is None or self.v is None:
            self.k = k
            self.v = v
        else:
            self.k = torch.cat((self.k, k), dim=1)[:, -self.context_length:, :, :]
            self.v = torch.cat((self.v, v), dim=1)[:, -self.context_length:, :, :]
        return self.k, self.v


class KVCache:
    def __init__(self):
        self._cache = _WindowCache(4096)

    def update(self, k, v):
        keys, values = self._cache.update(k.transpose(1, 2), v.transpose(1, 2))
        return keys.transpose(1, 2), values.transpose(1, 2)

    def __len__(self):
        return 0 if self._cache.k is None else self._cache.k.shape[1]
