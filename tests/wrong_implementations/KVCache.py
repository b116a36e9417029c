"""`KVCache` (PyTorch): classic bugs and correct alternatives."""
import torch


class HeadAxis:
    def __init__(self):
        self.k = self.v = None

    def update(self, k, v):
        self.k = k if self.k is None else torch.cat([self.k, k], dim=1)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=1)
        return self.k, self.v

    def __len__(self):
        return 0 if self.k is None else self.k.shape[2]


class Overwrites:
    def __init__(self):
        self.k = self.v = None

    def update(self, k, v):
        self.k, self.v = k, v
        return k, v

    def __len__(self):
        return 0 if self.k is None else self.k.shape[-2]


class CountsCalls:
    def __init__(self):
        self.k, self.v, self.calls = [], [], 0

    def update(self, k, v):
        self.k.append(k)
        self.v.append(v)
        self.calls += 1
        return torch.cat(self.k, dim=-2), torch.cat(self.v, dim=-2)

    def __len__(self):
        return self.calls


class Prepends:
    def __init__(self):
        self.k = self.v = None

    def update(self, k, v):
        self.k = k if self.k is None else torch.cat([k, self.k], dim=2)
        self.v = v if self.v is None else torch.cat([v, self.v], dim=2)
        return self.k, self.v

    def __len__(self):
        return 0 if self.k is None else self.k.shape[2]


class ListCache:
    """Correct: lists of chunks, concatenated on demand."""

    def __init__(self):
        self.k, self.v = [], []

    def update(self, k, v):
        self.k.append(k)
        self.v.append(v)
        return torch.cat(self.k, dim=-2), torch.cat(self.v, dim=-2)

    def __len__(self):
        return sum(t.shape[-2] for t in self.k)


class Preallocated:
    """Correct: a buffer that doubles when full, sliced to the cached length."""

    def __init__(self):
        self.k = self.v = None
        self.n = 0

    def update(self, k, v):
        new = k.shape[-2]
        if self.k is None:
            self.k = k.new_zeros(*k.shape[:-2], max(4, new), k.shape[-1])
            self.v = v.new_zeros(*v.shape[:-2], max(4, new), v.shape[-1])
        while self.n + new > self.k.shape[-2]:
            self.k = torch.cat([self.k, torch.zeros_like(self.k)], dim=-2)
            self.v = torch.cat([self.v, torch.zeros_like(self.v)], dim=-2)
        self.k[..., self.n:self.n + new, :] = k
        self.v[..., self.n:self.n + new, :] = v
        self.n += new
        return self.k[..., :self.n, :], self.v[..., :self.n, :]

    def __len__(self):
        return self.n


class ZerosPreallocated:
    """A buffer from torch.zeros (float32 by default), as cyrilzakka/llm-playbook's KVCache."""

    def __init__(self):
        self.k = self.v = None
        self.n = 0

    def update(self, k, v):
        new = k.shape[-2]
        if self.k is None:
            self.k = torch.zeros(*k.shape[:-2], 64, k.shape[-1])
            self.v = torch.zeros(*v.shape[:-2], 64, v.shape[-1])
        self.k[..., self.n:self.n + new, :] = k
        self.v[..., self.n:self.n + new, :] = v
        self.n += new
        return self.k[..., :self.n, :], self.v[..., :self.n, :]

    def __len__(self):
        return self.n


WRONG = {
    HeadAxis: "head axis",
    Overwrites: "forgets the past",
    CountsCalls: "counts the calls to update",
    Prepends: "before the old ones",
    ZerosPreallocated: "into float32",
}
CORRECT = [ListCache, Preallocated]
