"""Checks of chapter 7's ``chunked_attention`` (``efficient.py``, PyTorch); the chapter's keys and
values (``repeat_kv``, ``GroupedQueryAttention``, ``KVCache``): ``key_value.py``."""
from __future__ import annotations

import math

import torch

from ...spec import Exercise
from .cases import call_case, randn

# --- chunked_attention -------------------------------------------------------------------------


def chunked_cases(rng):
    B, H, d_k, d_v = 2, 3, 6, 7

    def case(name, lq, lk, chunk, causal=False, dtype="float64", scale=1.0, heads=True, same_d=False, rung=1,
             memory=False, below=0.0, **tolerance):
        lead, dv = ((B, H) if heads else (B,)), (d_k if same_d else d_v)
        args = [randn(rng, (*lead, lq, d_k), dtype, scale), randn(rng, (*lead, lk, d_k), dtype, scale),
                randn(rng, (*lead, lk, dv), dtype), chunk]
        if below:  # q near +c, k near -c: every score about -below, a few units apart
            c = math.sqrt(below * math.sqrt(d_k) / d_k)
            args[0], args[1] = (args[0] + c).astype(dtype), (args[1] - c).astype(dtype)
        sizes = dict(B=B, **({"H": H} if heads else {}), **({"L": lq} if lq == lk else {"Lq": lq, "Lk": lk}),
                     **({"d": d_k} if same_d else {"d_k": d_k, "d_v": d_v}))
        chunking = ("chunk_size 1" if chunk == 1 else "chunk_size > Lk" if chunk > lk else
                    "chunk_size divides Lk" if lk % chunk == 0 else "chunk_size does not divide Lk")
        features = {"lengths": "Lq = Lk" if lq == lk else ("Lq < Lk" if lq < lk else "Lq > Lk"),
                    "head sizes": "d_k = d_v" if same_d else "d_k != d_v", "chunks": chunking,
                    "causal": "causal" if causal else "not causal", "dtype": dtype,
                    "rank": "4-D inputs" if heads else "3-D inputs",
                    "scale": ("every score far below zero" if below else "scores of about a hundred" if scale > 1
                              else "scores of a few units"),
                    "keys": f"{lk} keys ({-(-lk // chunk)} chunks)" if memory else "a few keys"}
        return call_case(name, "chunked_attention", args, {"causal": causal}, sizes=sizes, dtype=dtype,
                         properties=("inputs_unchanged",) + (("never_holds_all_scores",) if memory else ()),
                         as_tensors=True, peak_memory=memory, weight=2.0 if memory else 1.0, rung=rung,
                         features=features, **tolerance)

    return [
        case("Lq = Lk = 8, d_k = d_v, chunk_size 4", 8, 8, 4, same_d=True, rung=0),
        case("Lq = Lk = 8, d_k = d_v, causal, chunk_size 4", 8, 8, 4, causal=True, same_d=True, rung=0),
        case("Lq = Lk = 8, d_k = d_v, float32, chunk_size 4", 8, 8, 4, dtype="float32", same_d=True, rung=0),
        case("Lq = Lk = 8, d_k != d_v, chunk_size 4", 8, 8, 4),
        case("Lq 4 < Lk 8, d_k = d_v, chunk_size 4", 4, 8, 4, same_d=True),
        case("Lq 5, Lk 11, chunk_size 4 (does not divide Lk)", 5, 11, 4),
        case("causal, Lq < Lk, chunk_size 2", 4, 9, 2, causal=True),
        # Lq > Lk: the first Lq - Lk queries see no key at all. With the end-aligned mask this is
        # the only way a query meets a fully masked chunk before any visible key (key 0 is
        # visible to every query when Lq <= Lk), so it is where -inf - -inf shows.
        case("causal, Lq 8 > Lk 5, chunk_size 2", 8, 5, 2, causal=True),
        case("chunk_size 16 larger than Lk 6", 4, 6, 16),
        case("chunk_size 1, causal, Lq 5, Lk 6", 5, 6, 1, causal=True),
        case("3-D inputs (B, L, d), causal, Lq 6, Lk 9", 6, 9, 4, causal=True, heads=False),
        # Scores past 88 overflow exp in float32 unless the running max is subtracted; a
        # correct float32 softmax of scores ~100 is only good to ~100 * eps relative, so the
        # tolerance is looser here.
        case("float32, scores of about a hundred, Lq 4, Lk 10", 4, 10, 3, dtype="float32", scale=6.0, rung=2,
             rtol=1e-4, atol=1e-5),
        # Every score about -2000: exp(score - m) underflows to 0 unless m is the running max
        # itself (a running max started at 0 instead of -inf gives 0 / 0 here, and only here).
        case("every score about -2000, Lq 4, Lk 10, chunk_size 3", 4, 10, 3, below=2000.0, rung=2),
        # "Never holding the full (Lq, Lk) score matrix", measured: what the call holds at its
        # peak (drivers.memory) must stay under half of one (B, H, Lq, Lk) float64 matrix, 1.5 MiB
        # here. With 32 chunks the reference peaks at 0.15 of it (four chunk-sized arrays at
        # once), the correct alternatives of tests/wrong_implementations/ (torch or NumPy) at
        # 0.12-0.16; the whole matrix sliced into chunks afterwards at 1.1, softmaxed whole or
        # joined from chunks at 3.0 in torch, 4.0 in NumPy. float64, so that a float64
        # computation cast back holds no more than the reference. The ratios are those of
        # Lq 96, Lk 2048 and 64-key chunks (0.10-0.13) within 0.03, at 9 ms of CPU instead of 21
        # (what a call costs is mostly its 32 chunks' operations, not their size).
        # The same features as "Lq 4 < Lk 8, d_k = d_v, chunk_size 4" but the number of keys:
        # a minimal pair. Weighed twice: it is what makes the exercise chunked.
        case("Lq 64 < Lk 512, d_k = d_v, chunk_size 16 (memory measured)", 64, 512, 16, same_d=True, rung=3,
             memory=True),
    ]


def _online(q, k, v, chunk_size, causal=False, *, rescale=True, rescale_l=True, guard=True, fill="-inf",
            normalise=True, offset=True, absolute=True, scale=True, drop_last=False):
    """The reference online softmax with one step changed; each bug below sets one knob."""
    lq, lk = q.shape[-2], k.shape[-2]
    m = torch.full((*q.shape[:-1], 1), float("-inf"), dtype=q.dtype)  # (..., Lq, 1)
    l = torch.zeros_like(m)
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=q.dtype)  # (..., Lq, d_v)
    stop_at = lk - lk % chunk_size if drop_last else lk
    for start in range(0, stop_at, chunk_size):
        stop = min(start + chunk_size, lk)
        scores = q @ k[..., start:stop, :].transpose(-2, -1)  # (..., Lq, C)
        scores = scores / math.sqrt(q.shape[-1]) if scale else scores
        if causal:
            rows = torch.arange(lq)[:, None] + ((lk - lq) if offset else 0)  # (Lq, 1)
            cols = torch.arange(start, stop) if absolute else torch.arange(stop - start)  # (C,)
            value = float("-inf") if fill == "-inf" else torch.finfo(q.dtype).min
            scores = scores.masked_fill(~(cols[None, :] <= rows), value)
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        shift = m_new.clamp(min=torch.finfo(q.dtype).min) if guard else m_new
        p = torch.exp(scores - shift)
        factor = torch.exp(m - shift)
        l = (l * factor if rescale_l else l) + p.sum(dim=-1, keepdim=True)
        acc = (acc * factor if rescale else acc) + p @ v[..., start:stop, :]
        m = m_new
    return acc / l.clamp(min=torch.finfo(q.dtype).tiny) if normalise else acc


def _chunked_bug(name, **knobs):
    def bug(q, k, v, chunk_size, causal=False):
        return _online(q, k, v, chunk_size, causal, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


CHUNKED_ATTENTION = Exercise(
    id="chunked_attention",
    cases=chunked_cases,
    hints={"causal": "the causal mask is end-aligned: query i sees keys j <= i + Lk - Lq, at their absolute "
                     "positions in every chunk",
           "float32": "keep the input's dtype",
           "d_k != d_v": "the output has d_v features (from v); scale by sqrt(d_k)",
           "Lq < Lk": "the scores of a chunk are (..., Lq, C): queries along one axis, the chunk's keys along the "
                      "other"},
    ladder=(("Lq = Lk and d_k = d_v", ""),
            ("Lq != Lk, d_k != d_v, or a chunk_size that does not divide Lk", "the output has d_v features "
             "(from v), the causal mask is end-aligned (query i sees keys j <= i + Lk - Lq), and the last "
             "chunk may be shorter"),
            ("float32 scores of about a hundred", "subtract the running max before exp"),
            ("512 keys, with the memory the call holds measured", "hold the scores of one chunk of keys at a "
             "time, never the whole (..., Lq, Lk) matrix")),
    bugs={
        "your output matches an online softmax whose accumulator is not rescaled by exp(m_old - m_new) "
        "when the running max grows": (_chunked_bug("accumulator_not_rescaled", rescale=False),
                                       _chunked_bug("nothing_rescaled", rescale=False, rescale_l=False)),
        "your output has NaN where a query has seen no key yet: with the running max started at -inf, "
        "exp(m_old - m_new) is exp(-inf - -inf) = NaN; shift by a finite number while the max is -inf":
            _chunked_bug("unguarded_max", guard=False),
        "your output gives queries that see no key a uniform average instead of zeros: fill masked "
        "scores with -inf (and guard the -inf max), not a large negative number":
            _chunked_bug("finite_fill", fill="min"),
        "your output is missing the final normalisation: divide the accumulator by the running "
        "denominator at the end": _chunked_bug("not_normalised", normalise=False),
        "your causal mask is aligned to the start of the keys: query i may see key j iff "
        "j <= i + (Lk - Lq)": _chunked_bug("start_aligned", offset=False),
        "your causal mask uses the key's index inside its chunk: compare the absolute position "
        "start + j with the query's position": _chunked_bug("chunk_local_mask", absolute=False),
        "your output matches attention without the 1/sqrt(d_k) scale": _chunked_bug("no_scale", scale=False),
        "your output leaves out the last, shorter chunk when chunk_size does not divide Lk":
            _chunked_bug("last_chunk_dropped", drop_last=True),
    },
)


EXERCISES = (CHUNKED_ATTENTION,)
