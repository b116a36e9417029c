"""Driver of chapter 8's ``generate``, on a harness language model.

The learner's ``generate`` drives a model; the grader hands it one that holds no reference
solution and depends on none of the learner's other exercises (one mistake counts once): a
small causal model in float64 (token and *learned* position tables, causal attention layers,
its own cache of keys and values). It records how it was called, so that the checks see
whether the cache was used, not only which tokens came out.
Like every driver, this returns plain data and never compares.
"""
from __future__ import annotations

import math

import numpy as np

from .core import describe_result, seed_torch


class _Cache:
    """The harness model's cache of one layer: the ``(k, v)`` of every call, ``(B, H, L_i, d)``."""

    def __init__(self):
        self.parts = []

    def update(self, k, v):
        import torch

        self.parts.append((k, v))
        return tuple(torch.cat([part[i] for part in self.parts], dim=2) for i in (0, 1))

    def __len__(self):
        return sum(part[0].shape[2] for part in self.parts)


class _Model:
    """``model(tokens (B, L), caches=None) -> logits (B, L, V)`` and ``new_caches()``, float64.

    ``state``: ``embed (V, E)``, ``pos (P, E)``, per layer ``qkv{i} (E, 3E)`` and ``out{i} (E, E)``,
    ``unembed (E, V)``. Positions beyond ``P`` raise (a generation that runs too long)."""

    def __init__(self, state, num_heads):
        import torch

        self.torch = torch
        self.w = {k: torch.from_numpy(np.array(v, dtype=np.float64)) for k, v in state.items()}
        self.num_layers = sum(k.startswith("qkv") for k in state)
        self.num_heads = num_heads
        self.calls = []  # (number of tokens, cache lengths before the call or None)
        self.made = []  # every cache new_caches() handed out
        self.training = False

    def new_caches(self):
        caches = [_Cache() for _ in range(self.num_layers)]
        self.made.extend(caches)
        return caches

    def eval(self):
        return self

    def __call__(self, tokens, caches=None):
        torch, w = self.torch, self.w
        tokens = torch.as_tensor(tokens)
        batch, length = tokens.shape
        ours = caches is not None and all(any(c is m for m in self.made) for c in caches)
        self.calls.append((length, None if caches is None else [len(c) for c in caches] if ours else "foreign"))
        if caches is not None and not ours:
            raise TypeError("caches must be the list model.new_caches() returned")
        offset = 0 if caches is None else len(caches[0])
        if offset + length > w["pos"].shape[0]:
            raise IndexError(f"position {offset + length - 1} is past the model's {w['pos'].shape[0]} positions")
        h = w["embed"][tokens] + w["pos"][offset:offset + length]  # (B, L, E)
        width = h.shape[-1]
        for i in range(self.num_layers):
            q, k, v = (h @ w[f"qkv{i}"]).split(width, dim=-1)
            q, k, v = (t.view(batch, length, self.num_heads, -1).transpose(1, 2) for t in (q, k, v))
            if caches is not None:
                k, v = caches[i].update(k, v)
            lk = k.shape[-2]
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, L, Lk)
            hidden = torch.triu(torch.ones(length, lk, dtype=torch.bool), diagonal=lk - length + 1)  # later keys
            a = torch.softmax(scores.masked_fill(hidden, -math.inf), dim=-1) @ v
            h = h + torch.tanh(a.transpose(1, 2).reshape(batch, length, width) @ w[f"out{i}"])
        return h @ w["unembed"]  # (B, L, V)


def generate_run(ns, state, num_heads, prompt, max_new_tokens, temperature=0.0, use_cache=True, seed=None,
                 sizes=None):
    """The learner's ``generate`` on the harness model: the tokens, whether the prompt and the
    model's weights were left as they were, and how the model was called (the cache used, or not)."""
    import torch

    model = _Model(state, num_heads)
    weights = dict(model.w)  # the tensors themselves: an in-place change shows against the state
    given = torch.from_numpy(np.array(prompt))
    prompt_tensor = given.clone()
    seed_torch(12345)  # torch's global generator: not the one a sampling case hands over
    generator = None if seed is None else torch.Generator().manual_seed(int(seed))
    result = ns.module("language_model").generate(model, prompt_tensor, max_new_tokens, temperature=temperature,
                                                  generator=generator, use_cache=use_cache)
    data = describe_result(result, ("tokens",))
    data["the prompt left as it was"] = bool(torch.equal(prompt_tensor, given))
    data["model parameters unchanged"] = bool(
        model.w.keys() == weights.keys() and all(model.w[k] is t for k, t in weights.items())
        and all(np.array_equal(t.numpy(), np.asarray(state[k], dtype=np.float64))
                for k, t in weights.items()))
    calls = model.calls
    if use_cache:
        first = calls[0] if calls else None
        data["with use_cache: one call on the whole prompt with fresh caches, then one new token per call"] = bool(
            not calls or first[0] <= given.shape[1] and first[1] is not None and all(n == 0 for n in first[1])
            and sum(n for n, _ in calls) <= given.shape[1] + max_new_tokens
            and all(n == 1 and c is not None for n, c in calls[1:]))
    else:
        data["without use_cache: no caches, the whole sequence at every call"] = bool(
            all(c is None for _, c in calls) and all(n >= given.shape[1] for n, _ in calls))
    return data
