"""Chapter 8: your layer inside a small language model (PyTorch): positions, generation with a
KV cache, and the induction score.

Shapes: ``(B, H, L, d)`` per head, ``(B, L)`` token ids, ``(B, L, V)`` logits. Position ``t`` of
a sequence is ``offset + t``: with a KV cache holding ``offset`` earlier positions, the new
tokens are not at position 0.
"""
import torch


def sinusoidal_positions(length, dim, offset=0, base=10000.0):
    """Exercise ``sinusoidal_positions`` (chapter 8, section "Sinusoidal positions").

    Vaswani et al. (2017), section 3.5: for position ``p = offset + t`` and pair ``i``
    (``0 <= i < dim / 2``), ``PE[t, 2i] = sin(p / base^(2i/dim))`` and
    ``PE[t, 2i+1] = cos(p / base^(2i/dim))``: sines in the even features, cosines in the odd
    ones (interleaved, as in the paper).

    Args:
        length: the number of positions ``L``.
        dim: the number of features, even (``ValueError`` otherwise).
        offset: the first position (the number of positions already in a KV cache).
        base: the base of the wavelengths (10000 in the paper).

    Returns:
        Tensor ``(L, dim)``, float32.
    """
    raise NotImplementedError("exercise `sinusoidal_positions`: implement it in mha_exercises/language_model.py "
                              "(chapter 8)")


def apply_rope(x, offset=0, base=10000.0):
    """Exercise ``apply_rope`` (chapter 8, section "Rotary position embeddings").

    Su et al. (2021): rotate each pair of features of the vector at position ``p = offset + t``
    by the angle ``p * base^(-2i/d)`` (pair ``i``, ``0 <= i < d / 2``). This course pairs the
    two **halves** of the last axis, feature ``i`` with feature ``i + d/2`` (the convention of
    GPT-NeoX and Llama's Hugging Face port, not the paper's adjacent ``2i, 2i+1``): with
    ``x1 = x[..., :d/2]``, ``x2 = x[..., d/2:]``,
    ``out = cat([x1 cos - x2 sin, x2 cos + x1 sin], -1)``. Applied to queries and keys (never
    to values), it makes ``q_m . k_n`` depend on the positions only through ``m - n``.

    Args:
        x: ``(..., L, d)``, ``d`` even (``ValueError`` otherwise): positions on axis -2.
        offset: the position of ``x[..., 0, :]`` (the number of positions already cached).
        base: the base of the wavelengths (10000 in the paper).

    Returns:
        Tensor of the shape and dtype of ``x``; ``x`` is not modified. Compute the angles in
        float64 (at a position in the thousands, float32 angles are off by ~1e-4 radians), then
        cast the cosines and sines to the dtype of ``x``.
    """
    raise NotImplementedError("exercise `apply_rope`: implement it in mha_exercises/language_model.py (chapter 8)")


def generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    """Exercise ``generate`` (chapter 8, section "Generating, with the cache").

    Extend ``prompt`` by ``max_new_tokens`` tokens, one at a time, each chosen from the logits
    the model gives at the last position: the ``argmax`` when ``temperature == 0`` (greedy),
    else ``torch.multinomial(softmax(logits / temperature), 1, generator=generator)``, one call
    per step (so that the same generator gives the same tokens).

    The model: ``model(tokens (B, L), caches=None) -> logits (B, L, V)``; ``model.new_caches()``
    returns one empty ``KVCache`` per layer (in the book, your chapter-7 ``KVCache``). With
    ``use_cache``, run the whole prompt once with fresh caches, then only each new token
    ``(B, 1)`` with the same caches (the model appends to them and reads them). Without, run the
    whole sequence so far at every step. Both give the same tokens.

    Args:
        model: as above; not modified (put it in ``eval()`` mode yourself if you train it).
        prompt: ``(B, L)`` int64 token ids, ``L >= 1``; not modified.
        max_new_tokens: the number of tokens to add (0 returns the prompt).
        temperature: 0 for greedy decoding, > 0 to sample.
        generator: the ``torch.Generator`` of the samples (None: torch's global one).
        use_cache: decode with the caches (one new token per call), or recompute everything.

    Returns:
        ``(B, L + max_new_tokens)`` int64: the prompt, then the new tokens.
    """
    raise NotImplementedError("exercise `generate`: implement it in mha_exercises/language_model.py (chapter 8)")


def induction_score(weights, period):
    """Exercise ``induction_score`` (chapter 8, section "Induction heads").

    Olsson et al. (2022): on a sequence whose tokens repeat with ``period``
    (``x[t] = x[t - period]`` for ``t >= period``), an induction head at query ``i`` attends to
    the token that came *after* the earlier copy of token ``i``: key ``i - period + 1``. The
    score is that weight averaged over the queries that have an earlier copy,
    ``i = period, ..., L - 1``.

    Args:
        weights: ``(..., L, L)`` attention weights (queries, keys), e.g. ``(B, H, L, L)``.
        period: the length of the repeated segment, ``1 <= period < L`` (``ValueError``
            otherwise).

    Returns:
        Tensor ``(...)``, the dtype of ``weights``: one score per head and sequence, in [0, 1].
    """
    raise NotImplementedError("exercise `induction_score`: implement it in mha_exercises/language_model.py "
                              "(chapter 8)")
