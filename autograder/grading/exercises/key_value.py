"""Checks of chapter 7's keys and values (``efficient.py``, PyTorch): ``repeat_kv``,
``GroupedQueryAttention`` and ``KVCache``; its ``chunked_attention``: ``chunked.py``."""
from __future__ import annotations

import math

import numpy as np
import torch

from solutions import efficient as ref

from ...spec import Case, Exercise
from .cases import LINEAR_HINT, LINEAR_TYPES, TOLERANCE, call_case, randn

# --- repeat_kv ---------------------------------------------------------------------------------

def repeat_cases(rng):
    def case(name, B, kv, L, d, n_rep, dtype="float64"):
        sizes = {"B": B, "Hkv": kv, "L": L, "d": d, "Hkv*n_rep": kv * n_rep}
        features = {"kv heads": "one kv head" if kv == 1 else "several kv heads",
                    "n_rep": "n_rep 1" if n_rep == 1 else "n_rep > 1", "dtype": dtype,
                    "positions": "one position" if L == 1 else "several positions"}
        return call_case(name, "repeat_kv", [randn(rng, (B, kv, L, d), dtype), n_rep], sizes=sizes, dtype=dtype,
                         properties=("inputs_unchanged",), as_tensors=True, rung=int(kv > 1 and n_rep > 1),
                         features=features)

    return [
        case("3 kv heads, n_rep 2", 2, 3, 4, 5, 2),
        case("2 kv heads, n_rep 3, float32", 3, 2, 5, 4, 3, "float32"),
        case("n_rep 1 returns the same values", 2, 3, 4, 5, 1),
        case("multi-query: 1 kv head, n_rep 4", 2, 1, 3, 5, 4),
        case("4 kv heads, n_rep 2, one position", 2, 4, 1, 3, 2),
    ]


def repeat_kv_tiled(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)  # heads 0, 1, 2, 0, 1, 2


# Published: meta-llama/llama's repeat_kv is written for (B, L, Hkv, d) (copied in
# QiGoki/MyLLaMA2, GreekCodeBear/From0toInf-LLM); on this course's (B, Hkv, L, d) it repeats
# the positions instead of the heads.
def repeat_kv_on_sequence_axis(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=2)


REPEAT_KV = Exercise(
    id="repeat_kv",
    cases=repeat_cases,
    hints={"n_rep > 1": "each head repeated n_rep times in a row (0, 0, 1, 1), along the head axis (dim 1)",
           "several kv heads": "each head repeated n_rep times in a row (0, 0, 1, 1), along the head axis (dim 1)",
           "float32": "keep the input's dtype"},
    ladder=(("one key/value head, or n_rep 1", ""),
            ("several key/value heads repeated", "each head repeated n_rep times in a row (0, 0, 1, 1), "
             "along the head axis (dim 1)")),
    bugs={
        "your heads are tiled (0, 1, 0, 1, as x.repeat or torch.cat([x] * n_rep) give) instead of each "
        "repeated n_rep times consecutively (0, 0, 1, 1): use repeat_interleave, or expand a new axis "
        "after the heads": repeat_kv_tiled,
        "your output repeats along the sequence axis instead of the head axis (dim=1)": repeat_kv_on_sequence_axis,
    },
)


# --- GroupedQueryAttention ---------------------------------------------------------------------

def _gqa_state(rng, E, H, kv, d, bias):
    """``nn.Linear`` weights ``(out, in)`` for W_q..W_o, scaled by 1/sqrt(fan-in), float64."""
    shapes = {"W_q": (H * d, E), "W_k": (kv * d, E), "W_v": (kv * d, E), "W_o": (E, H * d)}
    state = {}
    for name, shape in shapes.items():
        state[f"{name}.weight"] = randn(rng, shape, scale=1 / math.sqrt(shape[1]))
        state[f"{name}.bias"] = randn(rng, shape[:1], scale=0.5) if bias else None
    return state


def gqa_cases(rng):
    B, L, E, H, d, Lp = 2, 5, 24, 6, 4, 7

    def case(name, kv, dtype="float64", bias=True, mask=None, causal=False, new=L, past=False, rung=1,
             check="the output", properties=()):
        sizes = {"B": B, "L": new, "E": E, "H": H, "Hkv": kv, "d": d, "H*d": H * d, "Hkv*d": kv * d}
        inputs = dict(config=dict(embed_dim=E, num_heads=H, num_kv_heads=kv, bias=bias),
                      state=_gqa_state(rng, E, H, kv, d, bias), x=randn(rng, (B, new, E), dtype), mask=mask,
                      causal=causal, dtype=dtype, sizes=sizes)
        if past:  # keys and values of Lp earlier tokens, as a cache would hold them
            inputs["past"] = {"keys": randn(rng, (B, kv, Lp, d), dtype), "values": randn(rng, (B, kv, Lp, d), dtype)}
        features = {"kv heads": ("num_kv_heads = num_heads" if kv == H else
                                 "num_kv_heads = 1" if kv == 1 else "num_kv_heads < num_heads"),
                    "causal": "causal" if causal else "not causal", "dtype": dtype,
                    "bias": "bias=True" if bias else "bias=False",
                    "mask": "no mask" if mask is None else "a boolean mask",
                    "cache": "new tokens after cached ones" if past else "no cache",
                    # A pair of cases "differing only in" another feature must not differ in this one.
                    "new tokens": "one new token" if new == 1 else "several new tokens", "check": check}
        return Case(name=name, driver="gqa_forward", inputs=inputs, rung=2 if past else rung, features=features,
                    properties=properties, **TOLERANCE[dtype])

    empty_rows = rng.random((B, 1, L, L)) < 0.5  # (B, 1, Lq, Lk): shared by the heads
    empty_rows[0, 0, 1] = False  # a query that may attend to nothing
    empty_rows[1, 0, :, 0] = True
    decode_mask = np.ones((B, 1, 2, Lp + 2), dtype=bool)
    decode_mask[1, 0, :, :3] = False  # left padding of the second sequence
    return [
        case("multi-head (num_kv_heads = num_heads), no mask", H, rung=0),
        case("multi-head (num_kv_heads = num_heads), causal", H, causal=True, rung=0),
        # The stub's "(nn.Linear)": only the projections' types tell a module of one's own with
        # the same weight and bias apart. The first case's inputs, the check alone differing.
        case("multi-head (num_kv_heads = num_heads), no mask: W_q..W_o are nn.Linear", H, rung=0,
             check=LINEAR_TYPES, properties=("projections_are_linear",)),
        case("6 query heads, 2 kv heads, no mask", 2),
        case("6 query heads, 2 kv heads, causal", 2, causal=True),
        case("multi-query (num_kv_heads = 1), causal, float32", 1, "float32", causal=True),
        case("3 kv heads, bias=False, causal", 3, bias=False, causal=True),
        case("boolean mask (B, 1, Lq, Lk) with a fully masked row", 2, mask=empty_rows),
        case("decoding: 3 new tokens after 7 cached, causal (end-aligned)", 2, causal=True, new=3, past=True),
        case("decoding: 1 new token after 7 cached, causal, float32", 3, "float32", causal=True, new=1, past=True),
        case("decoding: 2 new tokens, padding mask and causal", 2, mask=decode_mask, causal=True, new=2, past=True),
    ]


class _GQA(ref.GroupedQueryAttention):
    """The reference layer with one step changed; each bug below sets one of these knobs."""

    tile = False
    end_aligned = True  # "after update": with a cache, the offset is the cache's length after it took the new keys
    fill = "-inf"  # the reference's attention; "nan" leaves fully masked rows NaN
    kv_heads_full = False

    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=True):
        super().__init__(embed_dim, num_heads, num_heads if self.kv_heads_full else num_kv_heads, bias)
        if self.kv_heads_full == "keeps num_kv_heads":  # the attribute as given, the projections too big
            self.num_kv_heads = num_kv_heads

    def forward(self, x, mask=None, causal=False, cache=None):
        q = self._split(self.W_q(x), self.num_heads)  # (B, H, Lq, d)
        k = self._split(self.W_k(x), self.num_kv_heads)  # (B, Hkv, Lq, d)
        v = self._split(self.W_v(x), self.num_kv_heads)
        if cache is not None:
            k, v = cache.update(k, v)  # (B, Hkv, Lk, d)
        n_rep = self.num_heads // self.num_kv_heads
        repeat = ref.repeat_kv if not self.tile else (lambda t, n: t.repeat(1, n, 1, 1))
        k, v = repeat(k, n_rep), repeat(v, n_rep)  # (B, H, Lk, d)
        allowed = None if mask is None else mask.to(torch.bool)
        if causal:
            lq, lk = q.shape[-2], k.shape[-2]
            if self.end_aligned == "after update":  # query i sees key j iff j <= i + Lk: every key
                offset = lk if cache is not None else 0
                mask_ = torch.arange(lk)[None, :] <= torch.arange(lq)[:, None] + offset
            else:
                mask_ = (ref.causal_allowed(lq, lk) if self.end_aligned
                         else torch.ones(lq, lk, dtype=torch.bool).tril())  # start-aligned: wrong with a cache
            allowed = mask_ if allowed is None else allowed & mask_
        if self.fill == "nan" and allowed is not None:
            scores = (q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)).masked_fill(~allowed, float("-inf"))
            heads = torch.softmax(scores, dim=-1) @ v
        else:
            heads = ref.attention(q, k, v, allowed)  # (B, H, Lq, d)
        return self.W_o(heads.transpose(-3, -2).flatten(-2))  # (B, Lq, E)


def _gqa_bug(name, **knobs):
    return type(name, (_GQA,), knobs)


GROUPED_QUERY_ATTENTION = Exercise(
    id="GroupedQueryAttention",
    cases=gqa_cases,
    hints={LINEAR_TYPES: LINEAR_HINT,
           "num_kv_heads < num_heads": "W_k and W_v project to num_kv_heads * head_dim, and query head h reads "
                                       "key/value head h // (num_heads // num_kv_heads)",
           "causal": "a causal mask hides the keys after each query",
           "new tokens after cached ones": "the causal mask is end-aligned: the new tokens are the last Lq of the Lk "
                                           "positions"},
    ladder=(("num_kv_heads = num_heads (plain multi-head attention)", ""),
            ("fewer key/value heads than query heads", "W_k and W_v project to num_kv_heads * head_dim, and "
             "query head h reads key/value head h // (num_heads // num_kv_heads)"),
            ("decoding after cached tokens", "the causal mask is end-aligned: the new tokens are the last Lq of "
             "the Lk positions")),
    bugs={
        "your layer tiles the key/value heads (0, 1, 0, 1) instead of repeating each consecutively "
        "(0, 0, 1, 1): query head h must read key/value head h // (num_heads // num_kv_heads)":
            _gqa_bug("TiledKV", tile=True),
        "your causal mask is aligned to the start of the keys: with a cache, the new tokens are the "
        "last Lq of Lk positions, so query i may see key j iff j <= i + (Lk - Lq)":
            _gqa_bug("StartAlignedMask", end_aligned=False),
        "with a cache, your output matches the reference's with a causal mask that lets query i see key j iff "
        "j <= i + Lk, i.e. every key, the later new tokens' too: as if the offset were the cache's length after it "
        "took the new keys (Lk) rather than before (Lk - Lq)":
            _gqa_bug("OffsetAfterUpdate", end_aligned="after update"),
        "your layer gives NaN on fully masked rows: they must give a zero output": _gqa_bug("NaNRows", fill="nan"),
        "your W_k and W_v project to num_heads * head_dim features: they project to "
        "num_kv_heads * head_dim": (_gqa_bug("FullSizeKV", kv_heads_full="keeps num_kv_heads"),
                                    _gqa_bug("FullSizeKVAsMHA", kv_heads_full=True)),
    },
)


# --- KVCache -----------------------------------------------------------------------------------

def cache_cases(rng):
    B, H, d, d_v = 2, 3, 4, 5

    def updates(name, lengths, dtype="float64", dv=d_v, rung=1):
        sizes = {"B": B, "Hkv": H, "d": d, **({} if dv == d else {"d_v": dv})}
        # The cached lengths after each update: an axis of one of these sizes is the sequence axis
        # (or ambiguous, then named by no size), never labelled d or B because the numbers coincide.
        for n, total in enumerate(np.cumsum(lengths), 1):
            sizes[f"L after update {n}"] = int(total)
        inputs = dict(keys=[randn(rng, (B, H, n, d), dtype) for n in lengths],
                      values=[randn(rng, (B, H, n, dv), dtype) for n in lengths], sizes=sizes)
        steps = ("a prompt, then single positions" if lengths[0] > 1 and set(lengths[1:]) == {1} else
                 "one position at a time" if set(lengths) == {1} else "one update" if len(lengths) == 1 else
                 "updates of several positions")
        features = {"check": "the check of what each update returns", "widths": "d_v = d_k" if dv == d else "d_v != d_k", "dtype": dtype,
                    "steps": steps}
        return Case(name=name, driver="kv_cache_updates", inputs=inputs, rung=rung, features=features,
                    **TOLERANCE[dtype])

    def decode(name, length, prompt, dtype="float64", dv=d_v, rung=1):
        sizes = {"B": B, "H": H, "L": length, "d": d, **({} if dv == d else {"d_v": dv})}
        inputs = dict(q=randn(rng, (B, H, length, d), dtype), k=randn(rng, (B, H, length, d), dtype),
                      v=randn(rng, (B, H, length, dv), dtype), prompt=prompt, sizes=sizes)
        features = {"check": "the check of attention decoded through the cache", "widths": "d_v = d_k" if dv == d else "d_v != d_k", "dtype": dtype,
                    "steps": "from the first token" if prompt == 1 else "after a prompt"}
        return Case(name=name, driver="kv_cache_decode", inputs=inputs, rung=rung, features=features,
                    **TOLERANCE[dtype])

    return [
        updates("d_v = d_k: a prompt of 3 positions, then 1, 1", [3, 1, 1], dv=d, rung=0),
        decode("d_v = d_k: decoding 4 positions after a prompt of 2", 6, 2, dv=d, rung=0),
        updates("a prompt of 4 positions, then 1, 1", [4, 1, 1]),
        updates("a prompt of 6 positions, then 1, 1, 2", [6, 1, 1, 2]),
        updates("one position at a time, float32", [1, 1, 1], "float32"),
        updates("a single update of 7 positions", [7]),
        decode("decoding 8 positions after a prompt of 3", 11, 3),
        decode("decoding from the first token, float32", 6, 1, "float32"),
    ]


class _Cache(ref.KVCache):
    """The reference cache with one step changed; each bug below sets one of these knobs."""

    axis = -2
    keep_new_only = False
    count_updates = False
    prepend = False
    float32 = False

    def __init__(self):
        super().__init__()
        self.updates = 0

    def update(self, k, v):
        self.updates += 1
        k, v = (k.float(), v.float()) if self.float32 else (k, v)
        if self.keys is None or self.keep_new_only:
            self.keys, self.values = k, v
        elif self.prepend:
            self.keys, self.values = torch.cat([k, self.keys], dim=self.axis), torch.cat([v, self.values], dim=self.axis)
        else:
            self.keys, self.values = torch.cat([self.keys, k], dim=self.axis), torch.cat([self.values, v], dim=self.axis)
        return self.keys, self.values

    def __len__(self):
        return self.updates if self.count_updates else super().__len__()


def _cache_bug(name, **knobs):
    return type(name, (_Cache,), knobs)


KV_CACHE = Exercise(
    id="KVCache",
    cases=cache_cases,
    hints={"d_v != d_k": "keys and values are stored separately, each with its own last axis"},
    ladder=(("keys and values of the same width (d_v = d_k)", ""),
            ("values wider than keys (d_v != d_k)", "keys and values are stored separately, each with its own "
             "last axis")),
    bugs={
        "your cache concatenates on the head axis (dim=1): the sequence axis is dim=-2":
            _cache_bug("HeadAxis", axis=1),
        "your cache concatenates on the feature axis (dim=-1): the sequence axis is dim=-2":
            _cache_bug("FeatureAxis", axis=-1),
        "your cache forgets the past: update must return every position cached so far, not only the "
        "new ones": _cache_bug("NewOnly", keep_new_only=True),
        "your len(cache) counts the calls to update, not the cached positions": _cache_bug("CountsUpdates",
                                                                                         count_updates=True),
        "your cache puts the new positions before the old ones: append them at the end":
            _cache_bug("Prepends", prepend=True),
        # A cache preallocated with torch.zeros(...) takes the default dtype, float32: the
        # KVCache of cyrilzakka/llm-playbook (kv-cache.md), which also keeps positions on axis 1.
        "your cache turns float64 keys and values into float32: keep the dtype of the tensors it is given":
            _cache_bug("Float32", float32=True),
    },
)

EXERCISES = (REPEAT_KV, GROUPED_QUERY_ATTENTION, KV_CACHE)
