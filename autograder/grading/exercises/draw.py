"""Drawing an exercise's cases: the public practice draw and the hidden grading draws, disjoint.

The learner release ships the public cases *with their expected outputs* (``selfcheck``), so
a grading draw must never hold a case whose inputs are those of a public case: a table of
the shipped outputs would pass it. Two guarantees, one by construction and one checked:

* different streams: the public draw's RNG key is ``[PUBLIC, PUBLIC_SEED, id digest]``, a
  grading draw's ``[GRADING, seed, id digest]``; the first word differs, so no grading seed
  (the public seed's number included) reproduces the public stream;
* different inputs: cases draw their sizes and values from the stream (none is fixed by
  construction), and a grading draw that still shares one case's inputs with the public draw
  (small integer inputs can, by chance) is drawn again from the next key
  (``[GRADING, seed, id digest, attempt]``): deterministic, and disjoint whatever the seed.
"""
from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from ...scoring import PROBE
from ...selfcheck import PUBLIC_SEED
from ...spec import Case, Exercise
from .cases import TOLERANCE

PUBLIC, GRADING = 0x5055424C, 0x47524144  # "PUBL", "GRAD": the streams' tags, never equal
ATTEMPTS = 50


def _digest(exercise_id: str) -> int:
    return int.from_bytes(hashlib.sha256(exercise_id.encode()).digest()[:8], "little")


def rng(seed: int, exercise_id: str, public: bool = False, attempt: int = 0) -> np.random.Generator:
    """Each exercise its own stream (adding an exercise does not change the others' cases)."""
    key = [PUBLIC if public else GRADING, int(seed), _digest(exercise_id)] + ([attempt] if attempt else [])
    return np.random.default_rng(key)


def fingerprint(case: Case) -> str:
    """A digest of what the learner's code is called with (the inputs; ``sizes`` only labels them)."""
    h = hashlib.sha256()

    def feed(value):
        if isinstance(value, np.ndarray):
            h.update(f"a{value.dtype.str}{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, dict):
            h.update(b"{")
            for k in sorted(value):
                h.update(repr(k).encode())
                feed(value[k])
            h.update(b"}")
        elif isinstance(value, (list, tuple)):
            h.update(b"[")
            for v in value:
                feed(v)
            h.update(b"]")
        else:
            h.update(f"{type(value).__name__}:{value!r}".encode())

    feed({k: v for k, v in case.inputs.items() if k != "sizes"})
    return h.hexdigest()


def _float64(value):
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value.astype(np.float64)
    if isinstance(value, list):
        return [_float64(v) for v in value]
    if isinstance(value, dict):
        return {k: _float64(v) for k, v in value.items()}
    return value


def with_interventions(cases: list[Case]) -> list[Case]:
    """``cases`` with, after each float32 case of the generic ``call`` driver that has none on its
    dtype, its copy in float64 (the same values cast, float64's tolerance): whether the dtype alone
    makes the case fail is then seen, not guessed from another case."""
    out = []
    probed = {tuple(c.features[PROBE]) for c in cases if PROBE in c.features}
    for case in cases:
        out.append(case)
        if (case.driver == "call" and case.features.get("dtype") == "float32" and PROBE not in case.features
                and (case.name, "dtype") not in probed and not case.inputs.get("peak_memory")):
            inputs = {**case.inputs, "args": _float64(case.inputs["args"]), "kwargs": _float64(case.inputs["kwargs"])}
            out.append(dataclasses.replace(case, inputs=inputs, **TOLERANCE["float64"],
                                           features={**case.features, "dtype": "float64",
                                                     PROBE: [case.name, "dtype"]}))
    return out


_PUBLIC: dict = {}


def public_cases(exercise: Exercise) -> list[Case]:
    """The practice cases the release ships (drawn once per process)."""
    hit = _PUBLIC.get(exercise.id)
    if hit is None or hit[0] is not exercise:
        hit = _PUBLIC[exercise.id] = (exercise, with_interventions(
            exercise.cases(rng(PUBLIC_SEED, exercise.id, public=True))))
    return hit[1]


def grading_cases(exercise: Exercise, seed: int) -> list[Case]:
    """The hidden cases of ``seed``: none has the inputs of a public case."""
    public = {fingerprint(c) for c in public_cases(exercise)}
    for attempt in range(ATTEMPTS):
        cases = with_interventions(exercise.cases(rng(seed, exercise.id, attempt=attempt)))
        # An intervention (a graded case's copy with one argument changed) earns nothing: it may
        # be a public case's inputs; what it words is true of the code whatever it is.
        if not any(fingerprint(c) in public for c in cases if PROBE not in c.features):
            return cases
    raise RuntimeError(f"{exercise.id}: {ATTEMPTS} draws of seed {seed} all share inputs with the public "
                       "cases; its cases must draw more of their inputs from the stream")
