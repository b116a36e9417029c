"""Building blocks for the chapters' cases: tolerances, seeded inputs, a ``call`` case."""
from __future__ import annotations

import dataclasses

import numpy as np

from solutions.masking import causal_mask as reference_causal_mask

from ...scoring import PROBE
from ...spec import Case

# How close the learner's floats must be to the reference's, per dtype, as |got - expected|
# <= atol + rtol * |expected| elementwise (numpy.isclose).
# * float64: 53-bit mantissa (eps 2.2e-16). A correct alternative (einsum, loops, another
#   stable softmax) reorders sums of a few dozen terms, which moves results by ~1e-15
#   relative; 1e-9 leaves six orders of margin and still catches every real bug.
# * float32: 24-bit mantissa (eps 1.2e-7). Reordered sums, a float64 computation cast back,
#   and torch vs numpy kernels differ by a few eps, up to ~1e-6 relative after a projection,
#   a softmax and a weighted sum; atol covers outputs that cancel to near zero.
TOLERANCE = {
    "float64": {"rtol": 1e-9, "atol": 1e-12},
    "float32": {"rtol": 1e-5, "atol": 1e-6},
}
# Gradients through a whole layer in float64 go through more reordered sums.
GRAD_TOLERANCE = {"rtol": 1e-8, "atol": 1e-10}


# The ``check`` feature of a layer's case on its projections' types (property
# ``projections_are_linear``), and the hint said where only that case fails.
LINEAR_TYPES = "the types of W_q, W_k, W_v and W_o"
LINEAR_HINT = "W_q, W_k, W_v and W_o are nn.Linear modules (torch.nn.Linear or a subclass of it)"


def randn(rng, shape, dtype="float64", scale=1.0):
    """Standard normal samples of ``shape`` in ``dtype`` (drawn in float64, then cast)."""
    return (scale * rng.standard_normal(shape)).astype(dtype)


def call_case(name, function, args, kwargs=None, *, returns=("out",), sizes=None, dtype="float64",
              weight=1.0, properties=(), as_tensors=False, peak_memory=False, rung=0, features=None, **tolerance):
    """A case of the generic ``call`` driver with the tolerance of ``dtype`` (overridable).

    ``as_tensors=True`` hands the array inputs to the function as torch tensors;
    ``peak_memory=True`` has the driver measure what the call allocates at its peak (for a
    property on it); ``features`` describes the inputs (``Case.features``).
    """
    tol = {**TOLERANCE[dtype], **tolerance}
    inputs = {"function": function, "args": list(args), "kwargs": dict(kwargs or {}),
              "returns": list(returns), "sizes": dict(sizes or {})}
    if as_tensors:
        inputs["as_tensors"] = True
    if peak_memory:
        inputs["peak_memory"] = True
    return Case(name=name, driver="call", inputs=inputs, weight=weight, properties=tuple(properties), rung=rung,
                features=dict(features or {}), **tol)


def intervention(case: Case, feature: str, value: str, *, drop=(), **changes) -> Case:
    """``case`` with one feature changed to ``value`` (inputs ``drop``-ped or changed to match), run
    on the learner's code only to word a cause: its outcome is never graded (``scoring.PROBE``)."""
    inputs = {k: v for k, v in case.inputs.items() if k not in drop}
    inputs.update(changes)
    features = {**case.features, feature: value, PROBE: [case.name, feature]}
    return dataclasses.replace(case, inputs=inputs, features=features)


def raises_case(name, function, args, kwargs=None, *, sizes=None, rung=0, features=None,
                expected="ValueError", as_tensors=False):
    """A case of inputs the contract says ``function`` must refuse with ``expected``
    (``as_tensors`` as for :func:`call_case`)."""
    inputs = {"function": function, "args": list(args), "kwargs": dict(kwargs or {}), "sizes": dict(sizes or {}),
              "expected": expected}
    if as_tensors:
        inputs["as_tensors"] = True
    return Case(name=name, driver="call_raises", inputs=inputs, rung=rung, features=dict(features or {}))


def causal(num_queries, num_keys):
    """The contract's causal mask ``(Lq, Lk)``: queries aligned to the end of the keys."""
    return reference_causal_mask(num_queries, num_keys)
