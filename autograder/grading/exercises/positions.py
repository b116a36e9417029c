"""Checks of chapter 8's positions (``language_model.py``, PyTorch): ``sinusoidal_positions`` and
``apply_rope``. The chapter's other checks: ``generation.py``, ``induction.py``."""
from __future__ import annotations

import numpy as np
import torch

from ...scoring import MATCH, PROBE
from ...spec import Exercise
from .cases import TOLERANCE, call_case, raises_case, randn
from .transformed import base_powers

from fractions import Fraction

from solutions.language_model import apply_rope as _reference_rope
from solutions.language_model import sinusoidal_positions as _reference_table


# Positions turn into angles of up to ``position`` radians; a correct version that computes them
# in float32 is off by ~position * 6e-8 rad, ~1e-5 at the positions of the float32 cases below
# (under 200). So float32 cases take 1e-4, still far below any mistake's error (order 1).
POSITION_F32 = {"rtol": 1e-4, "atol": 1e-4}

# float64 cases below the thousands: angles computed in float32 (the precision requirement, its
# own case at positions 2500-3499) are off there by under ~position * 6e-8 rad, under 6e-6 at the
# positions below 100; 2e-5 lets that single misconception cost only the precision case, and is
# still far below any other mistake's error (order 1).
ROPE_F64 = {"rtol": 2e-5, "atol": 2e-5}


def _even(what, n):
    # The bugs refuse an odd size as the reference does: each differs from it in its one mistake
    # only, so that none shows on the case that must raise (its hint names that failure).
    if n % 2:
        raise ValueError(f"{what} must be even, got {n}")


# --- sinusoidal_positions ----------------------------------------------------------------------


def sinusoidal_cases(rng):
    def case(name, length, dim, offset=0, base=None, rung=1, of=None):
        # Offset 0 is the default: the graded cases leave it out (the contract's default is checked),
        # an intervention's copy passes it (it changes the one feature it names).
        kwargs = {**({"offset": int(offset)} if offset or (of and of[1] == "offset") else {}), **({} if base is None else {"base": float(base)})}
        sizes = {"L": int(length), "dim": int(dim)}
        features = {"offset": "an offset (positions after a cache)" if offset else "offset 0",
                    "base": "base 10000" if base is None else "another base",
                    "positions": "one position" if length == 1 else "several positions", "dim": "dim even"}
        if of:
            features[PROBE] = list(of)
        return call_case(name, "sinusoidal_positions", [int(length), int(dim)], kwargs, sizes=sizes,
                         dtype="float32", rung=rung, features=features, **POSITION_F32)

    def probed(name, length, dim, offset=0, base=None, rung=1):
        """The case, then its interventions: one argument changed toward the simplest case."""
        out = [case(name, length, dim, offset, base, rung)]
        if offset:
            out.append(case(name, length, dim, 0, base, of=(name, "offset")))
        if base is not None:
            out.append(case(name, length, dim, offset, None, of=(name, "base")))
        if length == 1:
            out.append(case(name, 4, dim, offset, base, of=(name, "positions")))
        return out

    even = lambda lo, hi: 2 * int(rng.integers(lo // 2, hi // 2 + 1))  # noqa: E731
    odd = even(6, 12) + 1
    return [
        *probed("5 to 7 positions from 0, dim 8", int(rng.integers(5, 8)), 8, rung=0),
        *probed("8 to 11 positions from 0, dim 14 to 20", int(rng.integers(8, 12)), even(14, 20), rung=0),
        *probed("one position after a cache, dim 4", 1, 4, offset=int(rng.integers(3, 9))),
        *probed("4 to 6 positions after a cache, dim 12", int(rng.integers(4, 7)), 12,
                offset=int(rng.integers(10, 60))),
        *probed("3 positions after a cache, base 50 to 199, dim 6", 3, 6, offset=int(rng.integers(1, 20)),
                base=float(rng.integers(50, 200))),
        *probed("35 to 44 positions from 0, dim 32", int(rng.integers(35, 45)), 32),
        *probed("4 positions from 0, base 8 to 12, dim 10", 4, 10, base=float(rng.integers(8, 13))),
        raises_case("an odd dim (7 to 13)", "sinusoidal_positions", [4, odd], sizes={"L": 4, "dim": odd},
                    rung=2,
                    features={"offset": "offset 0", "base": "base 10000", "positions": "several positions",
                              "dim": "an odd dim"}),
    ]


def _sinusoidal(length, dim, offset=0, base=10000.0, *, swap=False, halves=False, use_offset=True,
                exponent="2i/d", use_base=True, angle_dtype=torch.float64, start=0, default=None, by_row=False):
    """The reference with one step changed; each bug below sets one knob."""
    _even("dim", dim)
    if default is not None and base == 10000.0:  # another default base (base 1000)
        base = default
    base = base if use_base else (default or 10000.0)
    first = (offset if use_offset else 0) + start
    positions = torch.arange(first, first + length, dtype=angle_dtype)[:, None]
    if exponent == "2j/d":  # one exponent per feature j, all dim of them: feature j at base^(-2j/dim)
        angles = positions * base ** (-2 * torch.arange(dim, dtype=angle_dtype) / dim)  # (L, dim)
        out = torch.where(torch.arange(dim) % 2 == 0, torch.sin(angles), torch.cos(angles))
        return out.to(torch.float32)
    i = torch.arange(dim // 2, dtype=angle_dtype)
    slope = {"2i/d": 2 * i, "i/d": i, "4i/d": 4 * i}[exponent]
    inv_freq = base ** (-slope / dim)
    angles = positions * inv_freq  # (L, dim/2)
    sin, cos = torch.sin(angles), torch.cos(angles)
    if by_row:  # sines in the even rows (positions), cosines in the odd ones: each pair's angle twice
        whole = angles.repeat_interleave(2, dim=-1)
        rows = (torch.arange(length) % 2 == 0)[:, None]
        return torch.where(rows, torch.sin(whole), torch.cos(whole)).to(torch.float32)
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
             "wavelengths use the base given"),
            ("an odd dim", "raise ValueError for an odd dim")),
    hints={"an odd dim": "raise ValueError for an odd dim",
           "an offset (positions after a cache)": "positions start at offset (the cached length): row t is "
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
        # The four below were found in public code (issue 32), e.g. ``div = base ** (2 * arange(d) / d)``.
        "your frequencies take an exponent per feature (feature j at base^(-2j/dim)): the two features of "
        "pair i share one frequency, base^(-2i/dim)": _sinusoidal_bug("exponent_per_feature", exponent="2j/d"),
        "your frequencies use the exponent 4i/dim (the pair's index doubled twice, as with arange(0, dim, 2) "
        "* 2 / dim): pair i has frequency base^(-2i/dim)": _sinusoidal_bug("exponent_doubled", exponent="4i/d"),
        "your frequencies use base 1000 where none is given: the default base is 10000": (
            _sinusoidal_bug("default_base_1000", default=1000.0),
            _sinusoidal_bug("base_1000", default=1000.0, use_base=False)),
        "your rows alternate sines and cosines (sines at even positions, cosines at odd ones): the columns "
        "do, sine in feature 2i and cosine in feature 2i+1 of every position": _sinusoidal_bug("by_row", by_row=True),
        # Generated: the base raised to a power (the exponents 4i/d and i/d are listed above).
        **base_powers(_reference_table, 3, skip=(Fraction(2), Fraction(1, 2))),
    },
)


# --- apply_rope --------------------------------------------------------------------------------

ROPE_AXES = {2: "no leading axis: (L, d)", 3: "one leading axis: (B, L, d)", 4: "two leading axes: (B, H, L, d)"}


def _rope_offset(offset):
    return "offset 0" if not offset else "an offset in the thousands" if offset >= 1000 else "an offset under 100"


def rope_cases(rng):
    def case(name, x, offset=0, base=None, rung=1, labels=None, of=None):
        shape, dtype = x.shape, str(x.dtype)
        kwargs = {**({"offset": int(offset)} if offset or (of and of[1] == "offset") else {}), **({} if base is None else {"base": float(base)})}
        sizes = dict(zip(labels or ("B", "H", "L", "d")[-len(shape):], map(int, shape)))
        # The precision requirement is the float64 case at positions in the thousands alone.
        tol = POSITION_F32 if dtype == "float32" else TOLERANCE["float64"] if offset >= 1000 else ROPE_F64
        # Computed from the inputs: every argument of the call is one feature's.
        features = {"leading axes": ROPE_AXES[len(shape)], "dtype": dtype, "offset": _rope_offset(offset),
                    "base": "base 10000" if base is None else "another base",
                    "positions": "one position" if shape[-2] == 1 else "several positions", "d": "d even"}
        if offset >= 1000:  # a float32 cos/sin table is off by ~1e-4 here: its convention still shows
            features[MATCH] = {"rtol": 2e-3, "atol": 2e-3}
        if of:
            features[PROBE] = list(of)
        return call_case(name, "apply_rope", [x], kwargs, sizes=sizes, dtype=dtype,
                         properties=("inputs_unchanged",), as_tensors=True, rung=rung, features=features, **tol)

    def probed(name, shape, offset=0, base=None, dtype="float64", rung=1, labels=None):
        """The case, then its interventions: a copy with one argument changed toward the simplest
        case (the same x where it can be), run only to word a cause."""
        x = randn(rng, shape, dtype)
        out = [case(name, x, offset, base, rung, labels)]
        if offset:
            out.append(case(name, x, 0, base, labels=labels, of=(name, "offset")))
        if base is not None:
            out.append(case(name, x, offset, None, labels=labels, of=(name, "base")))
        if dtype == "float32":
            out.append(case(name, x.astype("float64"), offset, base, labels=labels, of=(name, "dtype")))
        if len(shape) < 4:
            out.append(case(name, x.reshape((1,) * (4 - len(shape)) + shape), offset, base, of=(name, "leading axes")))
        if shape[-2] == 1:
            more = np.concatenate([x, randn(rng, shape[:-2] + (3, shape[-1]), dtype)], axis=-2)
            out.append(case(name, more, offset, base, labels=labels, of=(name, "positions")))
        return out

    B, H = int(rng.integers(2, 4)), int(rng.integers(3, 5))
    return [
        *probed("(L, d), d = 8, from position 0", (int(rng.integers(5, 8)), 8), rung=0),
        *probed("(B, H, L, d), from position 0", (B, H, int(rng.integers(5, 9)), 6), rung=0),
        *probed("(B, L, d), from position 0", (B, int(rng.integers(5, 9)), 6), rung=0, labels=("B", "L", "d")),
        *probed("(B, H, L, d), float32, from position 0", (B, H, int(rng.integers(5, 9)), 10), dtype="float32",
                rung=0),
        *probed("one new position after a cache", (B, H, 1, 8), offset=int(rng.integers(5, 40))),
        *probed("3 new positions after a cache, float32", (B, H, 3, 12), offset=int(rng.integers(20, 90)),
                dtype="float32"),
        *probed("(B, H, L, d), base 300 to 899", (B, H, int(rng.integers(6, 10)), 8),
                base=float(rng.integers(300, 900))),
        *probed("(B, H, L, d), d = 16, 28 to 32 positions", (B, H, int(rng.integers(28, 33)), 16)),
        *probed("one position at 2500 to 3499, float64", (B, 2, 1, 8), offset=int(rng.integers(2500, 3500)),
                rung=2),
        raises_case("(B, H, L, d), an odd d", "apply_rope", [randn(rng, (B, H, 5, 7), "float64")],
                    sizes={"B": B, "H": H, "L": 5, "d": 7}, rung=3, as_tensors=True,
                    features={"leading axes": ROPE_AXES[4], "dtype": "float64", "offset": "offset 0",
                              "base": "base 10000", "positions": "several positions", "d": "an odd d"}),
    ]


def _rope(x, offset=0, base=10000.0, *, pairs="halves", sign=1, swap=False, use_offset=True, exponent="2i/d",
          use_base=True, angle_dtype=torch.float64):
    """The reference with one step changed; each bug below sets one knob."""
    length, dim = x.shape[-2], x.shape[-1]
    _even("the last axis of x", dim)
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
    _even("the last axis of x", dim)
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
             "~1e-4 radians there)"),
            ("an odd d", "raise ValueError when the last axis d is odd")),
    hints={"an odd d": "raise ValueError when the last axis d is odd",
           "leading axes": "accept any leading axes: the positions are axis -2 and the features axis -1",
           "float32": "keep the input's dtype: compute the angles in float64, then cast their cos and sin to it",
           "an offset under 100": "positions start at offset (the cached length): row t is at position offset + t",
           "an offset in the thousands": "positions in the thousands work as the first ones do: any table of "
                                         "positions reaches offset + L, and the angles are computed in float64 "
                                         "(float32 angles are off by ~1e-4 radians there)",
           "another base": "the angles use the base given: (offset + t) * base^(-2i/d)"},
    bugs={
        "your rotation pairs adjacent features (2i, 2i+1), the convention of the RoFormer paper and GPT-J; "
        "this course pairs the two halves, feature i with feature i + d/2, as GPT-NeoX and Hugging Face's "
        "Llama port do (Meta's own Llama code pairs adjacent features, as complex numbers)":
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
        "your result carries float32 rounding, as from angles computed in float32 (at position p they are "
        "off by up to about p * 6e-8 radians): compute the angles in float64, then cast their cos and sin to "
        "x's dtype": _rope_bug("float32_angles", angle_dtype=torch.float32),
        # Generated: the base raised to a power (the exponent i/d is listed above).
        **base_powers(_reference_rope, 2, skip=(Fraction(1, 2),)),
    },
)


EXERCISES = (SINUSOIDAL_POSITIONS, APPLY_ROPE)
