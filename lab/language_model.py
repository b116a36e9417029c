"""Chapter 8 lab: a small causal language model built from your chapter-4 layer.

``CausalLM`` embeds tokens, adds the sinusoidal positions of chapter 8
(``language_model.sinusoidal_positions``), and runs ``num_layers`` pre-norm blocks whose
attention is a ``MultiHeadAttention`` of the chapter-4 contract (by default *your* layer, through
``mha_exercises.backend.load``), optionally followed by an MLP. ``forward(tokens, caches=None,
head_mask=None)`` gives next-token logits ``(B, L, V)``:

* without ``caches``, the whole sequence goes through the layer with chapter 2's causal mask,
  and ``head_mask (num_layers, num_heads)`` switches heads off as in chapter 6;
* with ``caches`` (``new_caches()``: one chapter-7 ``KVCache`` per layer), the new tokens are at
  positions ``len(caches[0])`` onwards, and each layer runs as chapter 7's
  ``GroupedQueryAttention`` with ``num_kv_heads = num_heads`` **sharing the weights** of the
  ``MultiHeadAttention`` (chapter 7 showed the two compute the same function): it appends the
  new keys and values to the cache and attends to everything cached.

Two models of this kind are trained by scripts in the repo, on data the course generates
(nothing is downloaded): the sentence model (``lab/sentences.py``, ``scripts/train_sentences.py``)
and the two-layer attention-only models of the induction-head lab (``lab/induction.py``,
``scripts/train_induction.py``).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _backend(module):
    from mha_exercises.backend import load

    return load(module)


class Block(nn.Module):
    """``x + attn(LN(x))``, then ``x + MLP(LN(x))`` when ``d_ff`` (attention-only when 0)."""

    def __init__(self, attention_class, d_model, num_heads, d_ff):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = attention_class(d_model, num_heads)
        self.mlp = None
        if d_ff:
            self.norm2 = nn.LayerNorm(d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x, mask=None, head_mask=None, cached_attention=None, cache=None):
        h = self.norm1(x)
        if cached_attention is not None:  # decoding: keys and values of earlier tokens in the cache
            attended, weights = cached_attention(h, causal=True, cache=cache), None
        else:
            attended, weights = self.attn(h, h, h, mask=mask, head_mask=head_mask)
        x = x + attended
        if self.mlp is not None:
            x = x + self.mlp(self.norm2(x))
        return x, weights


class CausalLM(nn.Module):
    """Token ids ``(B, L)`` -> next-token logits ``(B, L, V)``; see the module docstring."""

    def __init__(self, vocab_size, d_model, num_heads, num_layers, d_ff, attention_class=None, positions=None,
                 gqa_class=None, cache_class=None, learned_positions=0):
        super().__init__()
        self.num_layers, self.num_heads, self.d_model = num_layers, num_heads, d_model
        self.attention_class = attention_class or _backend("layer").MultiHeadAttention
        self.positions = positions or _backend("language_model").sinusoidal_positions
        self.gqa_class = gqa_class or (lambda: _backend("efficient").GroupedQueryAttention)
        self.cache_class = cache_class or (lambda: _backend("efficient").KVCache)
        self.embed = nn.Embedding(vocab_size, d_model)
        # A learned table of ``learned_positions`` position vectors instead of the sinusoids.
        self.pos = nn.Embedding(learned_positions, d_model) if learned_positions else None
        self.blocks = nn.ModuleList(Block(self.attention_class, d_model, num_heads, d_ff) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, vocab_size)
        self.last_weights = []  # each layer's attention weights (B, H, L, L) of the last uncached call
        self._decoders = {}  # block index -> its GroupedQueryAttention twin, built on first use (not a submodule)

    def new_caches(self):
        """One empty KV cache per layer (your chapter-7 ``KVCache`` by default)."""
        return [self.cache_class()() for _ in range(self.num_layers)]

    def _cached_attention(self, i):
        """Chapter 7's layer with ``H_kv = H`` on block ``i``'s own ``W_q W_k W_v W_o`` (shared, not copied)."""
        block = self.blocks[i]
        gqa = self._decoders.get(i)
        if gqa is None or gqa.W_q is not block.attn.W_q:
            with torch.random.fork_rng(devices=[]):  # its throwaway initialisation leaves torch's RNG alone
                gqa = self.gqa_class()(self.d_model, self.num_heads, self.num_heads)
            for name in ("W_q", "W_k", "W_v", "W_o"):
                setattr(gqa, name, getattr(block.attn, name))
            self._decoders[i] = gqa
        return gqa

    def forward(self, tokens, caches=None, head_mask=None):
        length = tokens.shape[1]
        offset = 0 if caches is None else len(caches[0])
        if self.pos is not None:
            pe = self.pos.weight[offset:offset + length]  # (L, d_model)
        else:
            pe = self.positions(length, self.d_model, offset).to(self.unembed.weight.dtype)  # (L, d_model)
        h = self.embed(tokens) + pe  # (B, L, d_model)
        mask = None if caches is not None else torch.ones(length, length, dtype=torch.bool).tril()  # (L, L)
        self.last_weights = []
        for i, block in enumerate(self.blocks):
            if caches is None:
                h, weights = block(h, mask=mask, head_mask=None if head_mask is None else head_mask[i])
                self.last_weights.append(weights)
            else:
                if head_mask is not None:
                    raise ValueError("head_mask is for the uncached pass only")
                h, _ = block(h, cached_attention=self._cached_attention(i), cache=caches[i])
        return self.unembed(self.norm(h))  # (B, L, V)


def next_token_loss(logits, tokens, start=0):
    """Mean cross-entropy of predicting ``tokens[:, t + 1]`` from position ``t``, for ``t >= start``."""
    return F.cross_entropy(logits[:, start:-1].flatten(0, 1), tokens[:, start + 1:].flatten())


def per_position_loss(logits, tokens):
    """``(L - 1,)``: the loss of predicting token ``t + 1``, averaged over the batch."""
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (B, L-1)
    return losses.mean(dim=0)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def time_generate(generate, model, prompt, max_new_tokens, repeats=5):
    """Seconds of ``generate`` (greedy) with and without the cache, medians of ``repeats`` taking
    turns, each run's slowest over fastest (``spread``), and whether both gave the same tokens."""
    import statistics
    import time

    seconds = {True: [], False: []}
    tokens = {}
    for _ in range(repeats):
        for use_cache in (True, False):
            start = time.perf_counter()
            tokens[use_cache] = generate(model, prompt, max_new_tokens, use_cache=use_cache)
            seconds[use_cache].append(time.perf_counter() - start)
    return {"cache": statistics.median(seconds[True]), "recompute": statistics.median(seconds[False]),
            "spread": max(max(s) / min(s) for s in seconds.values()),
            "same_tokens": bool(torch.equal(tokens[True], tokens[False]))}
