"""Relations between the learner's output and the reference's, found, not listed.

Where a learner's array differs from the reference's, a simple exact relation between the two
often says what their code computes: the same values with one axis in another order (a
sinusoidal table laid out ``[sin | cos]`` where the reference interleaves), two axes swapped, a
constant factor (√d_k, d_k, H, −1), the reference's moved by one position, or the reference's
values cut or padded along one axis. :func:`found` tries a short list of such relations on
every case that returned the array and states one only where it holds, within the case's
tolerance, on every such case: the failing ones and the passing ones alike (a passing case
where it does not hold contradicts it). Two weaker facts are said only of the cases where the
array differs: the values are the reference's, in other places; the array agrees with the
reference's on a leading block along one axis and nowhere after it.

Each sentence is a fact about the learner's output, never a guess at their code, and counts
only the cases it is true of. Cheap: a few comparisons of arrays already in memory, and only
for an exercise that loses points.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..compare import OUTPUT_LABELS
from ..isolation.drivers.core import META_KEYS
from ..said import value
from ..spec import Case, CaseError
from .diagnoses import MATCH

_MAX_ENTRIES = 1 << 16  # arrays larger than this are not searched (cost stays per case, not per entry)
_ORDINAL = {-1: "last axis", -2: "second-to-last axis", -3: "third-to-last axis", -4: "fourth-to-last axis"}


def _tolerance(case: Case) -> tuple[float, float]:
    within = (case.features or {}).get(MATCH) or {}
    return max(case.rtol, within.get("rtol", 0.0)), max(case.atol, within.get("atol", 0.0))


def _close(got, want, tol) -> bool:
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=tol[0], atol=tol[1], equal_nan=True))


# --- the relations: each maps (got, expected, case, tol) to the set of its descriptions that hold ---

def _factors(case: Case) -> list[tuple[str, float]]:
    """The named constants a factor may be: the case's sizes, their square roots and inverses, −1, 2."""
    named = [("−1 (the sign flipped)", -1.0), ("2", 2.0), ("1/2", 0.5)]
    for name, n in (case.inputs.get("sizes") or {}).items():
        if isinstance(n, int) and n > 1:
            named += [(f"√{name}", math.sqrt(n)), (name, float(n)), (f"1/√{name}", 1 / math.sqrt(n)),
                      (f"1/{name}", 1.0 / n)]
    return named


def _factor(got, want, case, tol):
    if got.shape != want.shape or not np.all(np.isfinite(want)) or not np.all(np.isfinite(got)):
        return set()
    norm = float(np.sum(want * want))
    if norm == 0:
        return {"*"} if _close(got, want, tol) else set()
    c = float(np.sum(got * want)) / norm
    if not _close(got, c * want, tol):
        return set()
    return {name for name, q in _factors(case) if abs(c - q) <= 1e-6 * abs(q)} | ({"1"} if abs(c - 1) <= 1e-6 else set())


def _axes_moved(got, want, case, tol):
    """Permutations of the axes (counted from the end) under which ``want`` is ``got``."""
    if want.ndim < 2 or want.ndim > 5 or sorted(got.shape) != sorted(want.shape):
        return set()
    out = set()
    for perm in itertools.permutations(range(want.ndim)):
        if list(perm) == sorted(perm) or want.transpose(perm).shape != got.shape:
            continue
        if _close(got, want.transpose(perm), tol):
            n = want.ndim
            out.add(tuple((a - n, p - n) for a, p in enumerate(perm) if a != p))
    return out


def _orders(n: int) -> dict[str, np.ndarray]:
    """Orders of one axis of length ``n``: index j of the learner's is index order[j] of the reference's."""
    j = np.arange(n)
    found = {"reversed": j[::-1]}
    if n % 2 == 0 and n >= 4:
        half = n // 2
        evens_first = np.where(j < half, 2 * j, 2 * (j - half) + 1)
        found["evens first"] = evens_first
        found["halves interleaved"] = np.argsort(evens_first)
        found["pairs swapped"] = j ^ 1
    for k in range(1, n):
        found[f"rolled {k}"] = (j + k) % n
    return found


def _reordered(got, want, case, tol):
    if got.shape != want.shape or want.ndim == 0:
        return set()
    out = set()
    for axis in range(want.ndim):
        n = want.shape[axis]
        if n < 3:
            continue
        for name, order in _orders(n).items():
            if _close(got, np.take(want, order, axis=axis), tol):
                if name.startswith("rolled"):  # a roll by n - 1 is a roll by -1: one name for every n
                    k = int(name.split()[1])
                    name = f"rolled {k - n if k > n // 2 else k}"
                out.add((axis - want.ndim, name))
    return out


def _shifted(got, want, case, tol):
    """The learner's is the reference's moved by one along an axis (the entry at the edge anything)."""
    if got.shape != want.shape:
        return set()
    out = set()
    for axis in range(want.ndim):
        n = want.shape[axis]
        if n < 3:
            continue
        later, earlier = (np.take(a, np.arange(1, n), axis=axis) for a in (got, want))
        first, last = (np.take(a, np.arange(n - 1), axis=axis) for a in (got, want))
        if _close(later, last, tol):
            out.add((axis - want.ndim, "one later"))
        if _close(first, earlier, tol):
            out.add((axis - want.ndim, "one earlier"))
    return out


def _cut(got, want, case, tol):
    """The learner's is the reference's with entries cut (or added) at one end of one axis."""
    if got.ndim != want.ndim or got.shape == want.shape:
        return set()
    differ = [a for a in range(want.ndim) if got.shape[a] != want.shape[a]]
    if len(differ) != 1:
        return set()
    axis = differ[0]
    short, long_ = (got, want) if got.shape[axis] < want.shape[axis] else (want, got)
    m, n = short.shape[axis], long_.shape[axis]
    out = set()
    mine = "fewer" if short is got else "more"
    if _close(short, np.take(long_, np.arange(m), axis=axis), tol):
        out.add((axis - want.ndim, f"{mine} at the end"))
    if _close(short, np.take(long_, np.arange(n - m, n), axis=axis), tol):
        out.add((axis - want.ndim, f"{mine} at the start"))
    return out


def _unit_pairs(a, first, second, tol) -> bool:
    """Whether columns ``first`` and ``second`` of the 2-D ``a`` pair up as a sine and a cosine of one
    angle: their squares sum to 1 in every row."""
    return bool(np.allclose(a[:, first] ** 2 + a[:, second] ** 2, 1.0, rtol=0, atol=10 * (tol[0] + tol[1])))


def _paired_halves(got, want, case, tol):
    """The reference's columns pair up (2i, 2i + 1) as sine and cosine; the learner's pair up
    (j, j + n/2) instead: the same kind of table, laid out in two halves."""
    if got.shape != want.shape or want.ndim != 2 or want.shape[1] % 2 or want.shape[1] < 4:
        return set()
    n = want.shape[1]
    j = np.arange(n // 2)
    if _unit_pairs(want, 2 * j, 2 * j + 1, tol) and _unit_pairs(got, j, j + n // 2, tol) \
            and not _unit_pairs(got, 2 * j, 2 * j + 1, tol):
        return {"halves"}
    return set()


def _sums_to_one_overall(got, want, case, tol):
    """The learner's entries sum to one all together where the reference's sum to one along the last
    axis (several rows): normalised over the whole array."""
    if got.shape != want.shape or want.ndim < 1:
        return set()
    if not np.all(np.isfinite(got)):  # overflowed: not said of this case, counted apart
        return {"-"}
    along = any(np.allclose(want.sum(axis=a), 1.0, atol=1e-6) for a in range(want.ndim))
    if not along or not np.isclose(got.sum(), 1.0, rtol=0, atol=1e-6):
        return set()
    return {"overall"}


# Relations stated only where they hold on every case that returned the array (in order: the
# first that holds is said).
EVERY_CASE = (("factor", _factor), ("axes", _axes_moved), ("order", _reordered), ("shift", _shifted),
              ("cut", _cut), ("pairs", _paired_halves), ("total", _sums_to_one_overall))


def _moved_values(got, want, case, tol) -> bool:
    """The same values, in other places (a reshape without its transpose: heads for positions)."""
    if got.size != want.size or got.size == 0:
        return False
    return bool(np.allclose(np.sort(got, axis=None), np.sort(want, axis=None), rtol=tol[0], atol=tol[1]))


def _constant_offset(got, want, tol) -> bool:
    """Whether the learner's is the reference's plus one nonzero vector along the last axis,
    the same at every other index (two or more of them)."""
    if got.shape != want.shape or got.ndim < 2 or got.size // got.shape[-1] < 2:
        return False
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(want))):
        return False
    offset = (got - want).reshape(-1, got.shape[-1])[0]
    return not _close(got, want, tol) and _close(got, want + offset, tol)


def _leading_block(got, want, case, tol):
    """Axes along which the learner's equals the reference's on the first k entries (0 < k < n) and
    on no entry after them: ``{axis: k}``."""
    if got.shape != want.shape:
        return {}
    out = {}
    for axis in range(want.ndim):
        n = want.shape[axis]
        if n > 64:
            continue
        same = [_close(np.take(got, [j], axis=axis), np.take(want, [j], axis=axis), tol) for j in range(n)]
        k = next((j for j, ok in enumerate(same) if not ok), n)
        if 0 < k < n and not any(same[k:]):
            out[axis - want.ndim] = k
    return out


# --- words ---------------------------------------------------------------------------------------

def _axis_words(axis: int, shape, sizes) -> str:
    n = shape[axis]
    names = [name for name, size in (sizes or {}).items() if size == n]
    label = f" ({names[0]})" if len(names) == 1 else ""
    return f"its {_ORDINAL.get(axis, f'axis {axis}')}{label}"


def _order_words(name: str) -> str:
    if name == "evens first":
        return ("in another order: the reference's even-numbered entries first, then its odd-numbered ones "
                "(entry j of yours is entry 2j of the reference's in the first half, entry 2(j − n/2) + 1 in the second)")
    if name == "halves interleaved":
        return ("in another order: the reference's two halves interleaved (entry 2j of yours is entry j of the "
                "reference's, entry 2j + 1 is entry n/2 + j)")
    if name == "pairs swapped":
        return "in another order: each pair of neighbours swapped (entry 2j of yours is entry 2j + 1 of the reference's)"
    if name == "reversed":
        return "in reverse order"
    k = int(name.split()[1])
    return (f"rotated by {abs(k)}: entry j of yours is entry j {'+' if k > 0 else '−'} {abs(k)} of the reference's "
            "(wrapping around)")


def _label(key: str, only_out: bool) -> str:
    return "result" if only_out else OUTPUT_LABELS.get(key, key)


def _holds_words(kind, found, shape, sizes) -> str:
    if kind == "pairs":
        return ("a table like the reference's laid out in two halves: column j and column j + n/2 of yours pair up "
                "(their squares sum to 1 at every position, as a sine and a cosine of one angle do), where the "
                "reference's pairs are columns 2i and 2i + 1")
    if kind == "total":
        return ("normalised over the whole array: all the entries together sum to one, where the reference's sum to "
                "one along one axis")
    if kind == "factor":
        return f"the reference's multiplied by {found}"
    if kind == "axes":
        moved = dict(found)
        if len(moved) == 2:
            a, b = sorted(moved)
            return f"the reference's with {_axis_words(a, shape, sizes)[4:]} and {_axis_words(b, shape, sizes)[4:]} swapped"
        return ("the reference's with its axes in another order (" +
                ", ".join(f"{_axis_words(a, shape, sizes)[4:]} of yours is the {_axis_words(p, shape, sizes)[4:]} of "
                          "the reference's" for a, p in sorted(moved.items())) + ")")
    axis, how = found
    along = f"along {_axis_words(axis, shape, sizes)}"
    if kind == "order":
        return f"the reference's with the entries {along} {_order_words(how)}"
    if kind == "shift":
        if how == "one later":
            return f"the reference's moved by one {along}: entry t of yours is entry t − 1 of the reference's"
        return f"the reference's moved by one {along}: entry t of yours is entry t + 1 of the reference's"
    mine, end = how.split(" at the ")
    if mine == "fewer":
        return f"the reference's with entries missing at the {end} {along}, the rest the same"
    return f"the reference's with extra entries at the {end} {along}, the rest the same"


def found(cases: list[Case], outputs: list, expected: list) -> list[str]:
    """Sentences, one per output array at most, stating a relation between the learner's array
    and the reference's that the cases show (see the module's doc)."""
    said = []
    arrays = [k for e in expected if isinstance(e, dict) for k in e
              if isinstance(e[k], np.ndarray) and k not in META_KEYS and not k.startswith("_")]
    keys = list(dict.fromkeys(arrays))
    only_out = keys == ["out"]
    for key in keys:
        rows = []  # (case index, got, want, tol): every case that returned this array
        for i, (case, got, want) in enumerate(zip(cases, outputs, expected)):
            if isinstance(got, CaseError) or not isinstance(got, dict) or not isinstance(want, dict):
                continue
            g, e = got.get(key), want.get(key)
            if not (isinstance(g, np.ndarray) and isinstance(e, np.ndarray)) or g.dtype.kind not in "biuf" \
                    or e.dtype.kind not in "biuf" or max(g.size, e.size) > _MAX_ENTRIES:
                continue
            rows.append((i, g.astype(np.float64), e.astype(np.float64), _tolerance(case)))
        differ = [r for r in rows if not _close(r[1], r[2], r[3])]
        if not differ:
            continue
        label = _label(key, only_out)
        sentence = _every_case(rows, differ, label, cases) or _where_differs(differ, label, cases)
        if sentence:
            said.append(sentence)
    return said


def _every_case(rows, differ, label, cases) -> str | None:
    for kind, relation in EVERY_CASE:
        common, said_of = None, []
        for row in rows:
            i, g, e, tol = row
            holds = relation(g, e, cases[i], tol)
            if "-" in holds:  # a case whose array is not all finite: the relation is said of the others only
                continue
            said_of.append(row)
            if "*" in holds:  # an all-zero reference: any factor holds
                continue
            common = holds if common is None else common & holds
            if not common:
                break
        common = {c for c in (common or ()) if c != "1"}
        differing = [r for r in differ if any(r is s for s in said_of)]
        if common and differing:
            chosen = sorted(common, key=str)[0]
            i0, g0, e0, _ = differing[0]
            what = _holds_words(kind, chosen, e0.shape, cases[i0].inputs.get("sizes"))
            scope = (f"on every case that returned it ({len(said_of)}" if len(said_of) == len(rows) else
                     f"on every case that returned it with only finite entries ({len(said_of)} of the {len(rows)}")
            return f"Your {label} is {what}, {scope}, the {len(differing)} where it differs from the reference's among them)."
    return None


def _where_differs(differ, label, cases) -> str | None:
    n = len(differ)
    where = f"in each of the {n} cases where your {label} differs from the reference's" if n > 1 else \
        f"in the one case where your {label} differs from the reference's ({cases[differ[0][0]].name!r})"
    blocks = None
    for i, g, e, tol in differ:
        here = _leading_block(g, e, cases[i], tol)
        blocks = set(here) if blocks is None else blocks & set(here)
    if blocks:
        axis = max(blocks)
        i0, g0, e0, tol0 = differ[0]
        k = _leading_block(g0, e0, cases[i0], tol0)[axis]
        return (f"{where[:1].upper()}{where[1:]}, it equals the reference's on a leading block along "
                f"{_axis_words(axis, e0.shape, cases[i0].inputs.get('sizes'))} and on no entry after it (the first "
                f"{value(k)} entries of {e0.shape[axis]} in {cases[i0].name!r}).")
    if all(_constant_offset(g, e, tol) for i, g, e, tol in differ):
        i0, g0, e0, _ = differ[0]
        last = _axis_words(-1, e0.shape, cases[i0].inputs.get("sizes"))[4:]
        return (f"{where[:1].upper()}{where[1:]}, it is the reference's plus one and the same vector along the "
                f"{last} at every index of the other axes: a constant per entry of the {last}, as a bias added or left "
                f"out is.")
    if all(_moved_values(g, e, cases[i], tol) for i, g, e, tol in differ):
        return f"{where[:1].upper()}{where[1:]}, it holds the same values as the reference's, in other places."
    return None
