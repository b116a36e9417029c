"""Checks of chapter 8 (``language_model.py``, PyTorch): ``sinusoidal_positions``, ``apply_rope``,
``generate`` and ``induction_score``."""
from __future__ import annotations

import math

import numpy as np
import torch

from ...spec import Case, Exercise
from .cases import TOLERANCE, call_case, randn

# Positions turn into angles of up to ``position`` radians; a correct version that computes them
# in float32 is off by ~position * 6e-8 rad, ~1e-5 at the positions of the float32 cases below
# (under 200). So float32 cases take 1e-4, still far below any mistake's error (order 1).
POSITION_F32 = {"rtol": 1e-4, "atol": 1e-4}

# --- sinusoidal_positions ----------------------------------------------------------------------


def sinusoidal_cases(rng):
    def case(name, length, dim, offset=0, base=None, rung=1):
        kwargs = {"offset": int(offset), **({} if base is None else {"base": float(base)})}
        sizes = {"L": int(length), "dim": int(dim)}
        features = {"offset": "an offset (positions after a cache)" if offset else "offset 0",
                    "base": "base 10000" if base is None else "another base",
                    "positions": "one position" if length == 1 else "several positions"}
        return call_case(name, "sinusoidal_positions", [int(length), int(dim)], kwargs, sizes=sizes,
                         dtype="float32", rung=rung, features=features, **POSITION_F32)

    even = lambda lo, hi: 2 * int(rng.integers(lo // 2, hi // 2 + 1))  # noqa: E731
    return [
        case("5 to 7 positions from 0, dim 8", int(rng.integers(5, 8)), 8, rung=0),
        case("8 to 11 positions from 0, dim 14 to 20", int(rng.integers(8, 12)), even(14, 20), rung=0),
        case("one position after a cache, dim 4", 1, 4, offset=int(rng.integers(3, 9))),
        case("4 to 6 positions after a cache, dim 12", int(rng.integers(4, 7)), 12, offset=int(rng.integers(10, 60))),
        case("3 positions after a cache, base 50 to 199, dim 6", 3, 6, offset=int(rng.integers(1, 20)), base=float(rng.integers(50, 200))),
        case("35 to 44 positions from 0, dim 32", int(rng.integers(35, 45)), 32),
        case("4 positions from 0, base 8 to 12, dim 10", 4, 10, base=float(rng.integers(8, 13))),
    ]


def _sinusoidal(length, dim, offset=0, base=10000.0, *, swap=False, halves=False, use_offset=True,
                exponent="2i/d", use_base=True, angle_dtype=torch.float64, start=0):
    """The reference with one step changed; each bug below sets one knob."""
    base = base if use_base else 10000.0
    first = (offset if use_offset else 0) + start
    positions = torch.arange(first, first + length, dtype=angle_dtype)[:, None]
    i = torch.arange(dim // 2, dtype=angle_dtype)
    inv_freq = base ** (-(2 * i if exponent == "2i/d" else i) / dim)
    angles = positions * inv_freq  # (L, dim/2)
    sin, cos = torch.sin(angles), torch.cos(angles)
    if swap:
        sin, cos = cos, sin
    if halves:
        out = torch.cat([sin, cos], dim=-1)
    else:
        out = torch.stack([sin, cos], dim=-1).flatten(-2)  # sin, cos, sin, cos, ...
    return out.to(torch.float32)


def _sinusoidal_bug(name, **knobs):
    def bug(length, dim, offset=0, base=10000.0):
        return _sinusoidal(length, dim, offset, base, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


SINUSOIDAL_POSITIONS = Exercise(
    id="sinusoidal_positions",
    cases=sinusoidal_cases,
    ladder=(("positions from 0", ""),
            ("a position offset, another base", "positions start at offset (the cached length) and the "
             "wavelengths use the base given")),
    hints={"an offset (positions after a cache)": "positions start at offset (the cached length): row t is "
                                                  "position offset + t",
           "another base": "the wavelengths use the base given: pair i has frequency base^(-2i/dim)"},
    bugs={
        "your sines and cosines are swapped: the even features (2i) hold the sines, the odd ones (2i+1) "
        "the cosines": _sinusoidal_bug("sin_cos_swapped", swap=True),
        "your features put all the sines first and then all the cosines: the paper interleaves them, sine "
        "in feature 2i and cosine in feature 2i+1": _sinusoidal_bug("halves", halves=True),
        "your positions ignore the offset: with a cache of n positions, the new ones start at n":
            _sinusoidal_bug("offset_ignored", use_offset=False),
        "your frequencies use the exponent i/dim: pair i has frequency base^(-2i/dim)":
            _sinusoidal_bug("exponent_i_over_d", exponent="i/d"),
        "your frequencies ignore the base argument (10000 is only its default)":
            _sinusoidal_bug("base_ignored", use_base=False),
        "your positions start at 1: the first position is offset, 0 without a cache":
            _sinusoidal_bug("from_one", start=1),
    },
)


# --- apply_rope --------------------------------------------------------------------------------

ROPE_AXES = {2: "no leading axis: (L, d)", 3: "one leading axis: (B, L, d)", 4: "two leading axes: (B, H, L, d)"}


def rope_cases(rng):
    def case(name, shape, offset=0, base=None, dtype="float64", rung=1, labels=None):
        kwargs = {"offset": int(offset), **({} if base is None else {"base": float(base)})}
        sizes = dict(zip(labels or ("B", "H", "L", "d")[-len(shape):], map(int, shape)))
        tol = POSITION_F32 if dtype == "float32" else TOLERANCE["float64"]
        features = {"leading axes": ROPE_AXES[len(shape)], "dtype": dtype,
                    "offset": ("offset 0" if not offset else "an offset in the thousands" if offset >= 1000
                               else "an offset under 100"),
                    "base": "base 10000" if base is None else "another base",
                    "positions": "one position" if shape[-2] == 1 else "several positions"}
        return call_case(name, "apply_rope", [randn(rng, shape, dtype)], kwargs, sizes=sizes, dtype=dtype,
                         properties=("inputs_unchanged",), as_tensors=True, rung=rung, features=features, **tol)

    B, H = int(rng.integers(2, 4)), int(rng.integers(3, 5))
    return [
        case("(L, d), d = 8, from position 0", (int(rng.integers(5, 8)), 8), rung=0),
        case("(B, H, L, d), from position 0", (B, H, int(rng.integers(5, 9)), 6), rung=0),
        case("(B, L, d), from position 0", (B, int(rng.integers(5, 9)), 6), rung=0, labels=("B", "L", "d")),
        case("(B, H, L, d), float32, from position 0", (B, H, int(rng.integers(5, 9)), 10), dtype="float32", rung=0),
        case("one new position after a cache", (B, H, 1, 8), offset=int(rng.integers(5, 40))),
        case("3 new positions after a cache, float32", (B, H, 3, 12), offset=int(rng.integers(20, 90)),
             dtype="float32"),
        case("(B, H, L, d), base 300 to 899", (B, H, int(rng.integers(6, 10)), 8), base=float(rng.integers(300, 900))),
        case("(B, H, L, d), d = 16, 28 to 32 positions", (B, H, int(rng.integers(28, 33)), 16)),
        case("one position at 2500 to 3499, float64", (B, 2, 1, 8), offset=int(rng.integers(2500, 3500)), rung=2),
    ]


def _rope(x, offset=0, base=10000.0, *, pairs="halves", sign=1, swap=False, use_offset=True, exponent="2i/d",
          use_base=True, angle_dtype=torch.float64):
    """The reference with one step changed; each bug below sets one knob."""
    length, dim = x.shape[-2], x.shape[-1]
    base = base if use_base else 10000.0
    first = offset if use_offset else 0
    positions = torch.arange(first, first + length, dtype=angle_dtype)[:, None]
    i = torch.arange(dim // 2, dtype=angle_dtype)
    inv_freq = base ** (-(2 * i if exponent == "2i/d" else i) / dim)
    angles = positions * inv_freq  # (L, d/2)
    cos, sin = torch.cos(angles).to(x.dtype), sign * torch.sin(angles).to(x.dtype)
    if swap:
        cos, sin = sin, cos
    if pairs == "halves":
        x1, x2 = x[..., :dim // 2], x[..., dim // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # adjacent pairs (2i, 2i+1): RoFormer, GPT-J
    return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)


def _rope_bug(name, **knobs):
    def bug(x, offset=0, base=10000.0):
        return _rope(x, offset, base, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


def _rope_adjacent_angles_on_halves(x, offset=0, base=10000.0):
    """Half-split rotation with the angles laid out for adjacent pairs (repeat_interleave): the two
    conventions mixed, as when an interleaved checkpoint's cos/sin tables meet a half-split rotation."""
    length, dim = x.shape[-2], x.shape[-1]
    positions = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
    angles = positions * base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = angles.repeat_interleave(2, dim=-1)  # (L, d): theta_0, theta_0, theta_1, theta_1, ...
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    x1, x2 = x[..., :dim // 2], x[..., dim // 2:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


APPLY_ROPE = Exercise(
    id="apply_rope",
    cases=rope_cases,
    ladder=(("positions from 0", ""),
            ("a position offset, another base", "positions start at offset (the cached length) and the "
             "angles use the base given"),
            ("a position in the thousands, float64", "compute the angles in float64 (float32 angles are off by "
             "~1e-4 radians there)")),
    hints={"leading axes": "accept any leading axes: the positions are axis -2 and the features axis -1",
           "float32": "keep the input's dtype: compute the angles in float64, then cast their cos and sin to it",
           "an offset under 100": "positions start at offset (the cached length): row t is at position offset + t",
           "an offset in the thousands": "compute the angles in float64 (float32 angles are off by ~1e-4 radians "
                                         "there)",
           "another base": "the angles use the base given: (offset + t) * base^(-2i/d)"},
    bugs={
        "your rotation pairs adjacent features (2i, 2i+1), the convention of the RoFormer paper and GPT-J; "
        "this course pairs the two halves, feature i with feature i + d/2, as GPT-NeoX and Llama do":
            _rope_bug("adjacent_pairs", pairs="adjacent"),
        "your angles are laid out for adjacent pairs (each repeated twice, repeat_interleave) but rotate "
        "the halves: with the half-split rotation, the angles of the first half repeat in the second "
        "(torch.cat([angles, angles]))": _rope_adjacent_angles_on_halves,
        "your rotation turns the wrong way: out = [x1 cos - x2 sin, x2 cos + x1 sin] with x1, x2 the two "
        "halves": _rope_bug("reversed", sign=-1),
        "your sin and cos are swapped": _rope_bug("sin_cos_swapped", swap=True),
        "your rotation ignores the offset: with a cache of n positions the new ones are at n, n + 1, ... "
        "(at offset 0 a single new token would not be rotated at all)": _rope_bug("offset_ignored",
                                                                                   use_offset=False),
        "your frequencies use the exponent i/d: pair i turns by base^(-2i/d) per position":
            _rope_bug("exponent_i_over_d", exponent="i/d"),
        "your frequencies ignore the base argument (10000 is only its default)": _rope_bug("base_ignored",
                                                                                            use_base=False),
        "your angles are computed in float32: at positions in the thousands they are off by ~1e-4 radians; "
        "compute them in float64": _rope_bug("float32_angles", angle_dtype=torch.float32),
    },
)


# --- generate ----------------------------------------------------------------------------------

def _lm_state(rng, vocab, width, layers, positions):
    """The harness model's weights, float64, scaled so that logits are of order one to three: the
    greedy choice is clear and sampling still has choices."""
    state = {"embed": randn(rng, (vocab, width)), "pos": randn(rng, (positions, width)),
             "unembed": randn(rng, (width, vocab), scale=2.0 / math.sqrt(width))}
    for i in range(layers):
        state[f"qkv{i}"] = randn(rng, (width, 3 * width), scale=1.5 / math.sqrt(width))
        state[f"out{i}"] = randn(rng, (width, width), scale=1.0 / math.sqrt(width))
    return state


def generate_cases(rng):
    V, E, H, layers, P = int(rng.integers(9, 14)), 12, 3, 1, 64

    def case(name, batch, length, new, temperature=0.0, use_cache=True, rung=1):
        features = {"decoding": ("greedy (temperature 0)" if not temperature else "sampled at temperature 1"
                                 if temperature == 1 else "sampled at a temperature other than 1"),
                    "cache": "with the cache" if use_cache else "without the cache",
                    "batch": "B = 1" if batch == 1 else "B > 1",
                    "prompt": "a prompt of one token" if length == 1 else "a prompt of several tokens",
                    "new tokens": "zero new tokens" if new == 0 else "new tokens"}
        inputs = dict(state=_lm_state(rng, V, E, layers, P), num_heads=H,
                      prompt=rng.integers(0, V, (batch, length)).astype(np.int64), max_new_tokens=int(new),
                      temperature=float(temperature), use_cache=use_cache,
                      seed=int(rng.integers(0, 2**31)) if temperature else None,
                      sizes={"B": batch, "L + max_new_tokens": length + new})
        return Case(name=name, driver="generate_run", inputs=inputs, rung=rung, rtol=0.0, atol=0.0,
                    features=features)

    return [
        case("greedy, without the cache, B = 1", 1, int(rng.integers(3, 6)), 3, use_cache=False, rung=0),
        case("greedy, with the cache, B = 1", 1, int(rng.integers(3, 6)), 4, rung=0),
        case("greedy, with the cache, B = 3", 3, int(rng.integers(4, 7)), 4),
        case("greedy, with the cache, a prompt of one token", 2, 1, 5),
        case("greedy, without the cache, B = 2", 2, int(rng.integers(2, 5)), 4, use_cache=False),
        case("zero new tokens", 2, 4, 0),
        case("sampled at temperature 1, with the cache", 3, int(rng.integers(2, 5)), 5, temperature=1.0, rung=2),
        case("sampled at temperature 0.6, without the cache", 2, 3, 4, temperature=0.6, use_cache=False, rung=2),
        case("sampled at temperature 1.8, with the cache", 4, 2, 5, temperature=1.8, rung=2),
    ]


def _generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True, *, new_only=False,
              position=-1, temp="divide", use_generator=True, feed="new", always_greedy=False, softmax_dim=-1,
              count=0):
    """The reference with one step changed; each bug below sets one knob."""
    tokens = prompt
    caches = model.new_caches() if use_cache else None
    logits = model(tokens, caches=caches)
    for _ in range(max_new_tokens + count):
        last = logits[:, position, :]
        if temperature == 0 or always_greedy:
            next_token = last.argmax(dim=-1, keepdim=True)
        else:
            scaled = last / temperature if temp == "divide" else last * temperature
            probs = torch.softmax(scaled, dim=softmax_dim)
            next_token = torch.multinomial(probs, 1, generator=generator if use_generator else None)
        tokens = torch.cat([tokens, next_token], dim=1)
        if feed == "all":  # the whole sequence, into the caches too
            logits = model(tokens, caches=caches)
        elif feed == "new_without_cache":
            logits = model(next_token, caches=caches)
        else:
            logits = model(next_token, caches=caches) if use_cache else model(tokens)
    return tokens[:, prompt.shape[1]:] if new_only else tokens


def _generate_bug(name, **knobs):
    def bug(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
        return _generate(model, prompt, max_new_tokens, temperature, generator, use_cache, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


GENERATE = Exercise(
    id="generate",
    cases=generate_cases,
    ladder=(("greedy decoding, one sequence", ""),
            ("batches, a one-token prompt, zero new tokens", "every row of the batch decoded at once; the "
             "prompt returned unchanged when nothing is added"),
            ("sampling with a generator", "softmax(logits / temperature) over the vocabulary, "
             "torch.multinomial(probs, 1, generator=generator) once per step")),
    hints={"with the cache": "call the model on the prompt once, with caches = model.new_caches(), then on the new "
                             "token only",
           "without the cache": "without caches the model sees only what you give it: call model(tokens) on the "
                                "whole sequence at every step",
           "B > 1": "decode every row of the batch at once: each step's next token is (B, 1)",
           "a prompt of one token": "the prompt may be a single token: (B, 1)",
           "zero new tokens": "with max_new_tokens = 0, return the prompt unchanged",
           "sampled at temperature 1": "sample torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, "
                                       "generator=generator), once per step",
           "sampled at a temperature other than 1": "divide the logits by the temperature before the softmax"},
    bugs={
        "your generate returns only the new tokens: return the prompt followed by them":
            _generate_bug("new_only", new_only=True),
        "your next token comes from the logits of the first position: it is predicted at the last one "
        "(logits[:, -1])": _generate_bug("first_position", position=0),
        "your temperature multiplies the logits: divide them by it (a low temperature sharpens)":
            _generate_bug("temperature_multiplies", temp="multiply"),
        "your samples ignore the generator they are given: pass generator=generator to torch.multinomial":
            _generate_bug("global_rng", use_generator=False),
        "with the cache you run the whole sequence again at every step: the caches already hold it, so "
        "only the new token goes in (model(next_token, caches=caches))": _generate_bug("feeds_all", feed="all"),
        "without the cache you run only the new token: without caches the model sees only what you "
        "give it, so give it the whole sequence": _generate_bug("no_context", feed="new_without_cache"),
        "your generate decodes greedily even at temperature > 0: sample from softmax(logits / temperature)":
            _generate_bug("always_greedy", always_greedy=True),
        "your softmax runs over the batch axis: it runs over the vocabulary (dim=-1)":
            _generate_bug("softmax_over_batch", softmax_dim=0),
        "your generate adds one token too many": _generate_bug("one_too_many", count=1),
        "your generate adds one token too few": _generate_bug("one_too_few", count=-1),
    },
)


# --- induction_score ---------------------------------------------------------------------------

def _causal_weights(rng, shape, sharp=False, dtype="float64"):
    """Random attention weights ``(..., L, L)``: rows sum to one over the keys j <= i."""
    length = shape[-1]
    scores = rng.standard_normal(shape) * (3.0 if sharp else 1.0)
    scores = np.where(np.tril(np.ones((length, length), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)).astype(dtype)


INDUCTION_AXES = {2: "no leading axis: (L, L)", 3: "one leading axis: (H, L, L)",
                  4: "two leading axes: (B, H, L, L)"}


def induction_cases(rng):
    def case(name, shape, period, dtype="float64", rung=1, labels=None):
        sizes = dict(zip(labels or ("B", "H", "L", "L (keys)")[-len(shape):], map(int, shape)))
        length = shape[-1]
        # Periods 1, 2 and L - 1 each make a mistake right by chance (key i, key i - 1 the previous
        # token, a single query): each its own value, so no pair lumps one with the others.
        named = {1: "period 1", 2: "period 2", length - 1: "period L - 1", length / 2: "period L / 2 (one repeat)"}
        features = {"leading axes": INDUCTION_AXES[len(shape)], "dtype": dtype,
                    "period": named.get(period, "another period (3 to L - 2, not L / 2)")}
        return call_case(name, "induction_score", [_causal_weights(rng, shape, dtype=dtype), int(period)],
                         sizes=sizes, dtype=dtype, properties=("inputs_unchanged",), as_tensors=True, rung=rung,
                         features=features)

    B, H = int(rng.integers(2, 4)), int(rng.integers(3, 6))
    L = int(rng.integers(14, 20))
    return [
        case("(L, L), period L / 2", (2 * (L // 2), 2 * (L // 2)), L // 2, rung=0, labels=("L", "L (keys)")),
        case("(B, H, L, L), period L / 2", (B, H, 2 * (L // 2), 2 * (L // 2)), L // 2, rung=0),
        case("(B, H, L, L), float32", (B, H, L, L), int(rng.integers(4, L - 2)), dtype="float32"),
        case("(B, H, L, L), period 3", (B, H, L, L), 3),
        case("(H, L, L), period 3", (H, L, L), 3, labels=("H", "L", "L (keys)")),
        case("(B, H, L, L), period 1", (B, H, L, L), 1),
        case("(B, H, L, L), period L - 1", (B, H, L, L), L - 1),
        case("(B, H, L, L), period 2", (B, H, L + 3, L + 3), 2),
    ]


def _induction(weights, period, *, key_shift=1, first_query=None, reduce="mean"):
    """The reference with one step changed; each bug below sets one knob."""
    length = weights.shape[-1]
    start = period if first_query is None else first_query(period)
    queries = torch.arange(start, length)
    values = weights[..., queries, queries - period + key_shift]  # negative keys wrap, as in learners' code
    return values.mean(dim=-1) if reduce == "mean" else values.sum(dim=-1)


def _induction_bug(name, **knobs):
    def bug(weights, period):
        return _induction(weights, period, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


def induction_on_diagonal_with_one_extra_query(weights, period):
    # torch.diagonal(w, offset=-(period - 1)) starts at query period - 1, which has no earlier copy.
    return torch.diagonal(weights, offset=-(period - 1), dim1=-2, dim2=-1).mean(dim=-1)


def induction_previous_token(weights, period):
    length = weights.shape[-1]
    queries = torch.arange(period, length)
    return weights[..., queries, queries - 1].mean(dim=-1)


INDUCTION_SCORE = Exercise(
    id="induction_score",
    cases=induction_cases,
    ladder=(("a sequence repeated once (period L / 2)", ""),
            ("other periods, float32", "the queries i = period ... L - 1, each at key i - period + 1, whatever "
             "the period")),
    hints={"leading axes": "accept any leading axes: the last two are (queries, keys)",
           "float32": "keep the input's dtype",
           "period": "the queries i = period ... L - 1, each at key i - period + 1, whatever the period"},
    bugs={
        "your score reads key i - period, the earlier copy of the current token (a duplicate-token head): "
        "an induction head attends to the token after it, key i - period + 1":
            _induction_bug("earlier_copy", key_shift=0),
        "your score reads key i - 1, the previous token (a previous-token head): an induction head attends "
        "to key i - period + 1": induction_previous_token,
        "your score includes query period - 1, which has no earlier copy (torch.diagonal with "
        "offset=-(period - 1) starts there): average over the queries i = period ... L - 1":
            (_induction_bug("from_period_minus_one", first_query=lambda p: p - 1),
             induction_on_diagonal_with_one_extra_query),
        "your score averages over every query, those of the first copy too: only the queries i >= period "
        "have an earlier copy": _induction_bug("all_queries", first_query=lambda p: 0),
        "your score is a sum over the queries: average it (a score in [0, 1])": _induction_bug("sum", reduce="sum"),
    },
)

EXERCISES = (SINUSOIDAL_POSITIONS, APPLY_ROPE, GENERATE, INDUCTION_SCORE)
