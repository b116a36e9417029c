"""Drivers: run one case of an exercise against a namespace and return plain data.

A driver is ``driver(ns, **inputs) -> dict``. The pipeline runs it in the learner's isolated
process against the learner's modules; the judge runs the *same* driver in the grader's
process against the reference solutions and against known buggy variants, and compares the
dicts. So a driver is harness only: it must not import ``solutions``, ``judge`` or
``exercises`` (the learner's process must hold nothing to compare against).

What comes back is plain data: NumPy arrays (exact ``ndarray``), Python numbers, bools,
strings, None, and lists/dicts of these. A result of the wrong form (a list, None, a tuple of
the wrong length, an object) still comes back, as a description the judge can put into words.

Conventions of the returned dict (the judge relies on them):

* ``result_type``: the type name of what the function returned (``"ndarray"``, ``"tuple"``,
  ``"int"``, ``"NoneType"``...), and ``len`` for a tuple or list;
* one key per output named in ``returns`` (``"out"``, ``"weights"``), present only when the
  result had the expected form; ``types`` gives each output's type name;
* ``args_after`` / ``kwargs_after``: the array inputs after the call (they must be unchanged);
* keys starting with ``_`` are raw data for property checks, never compared with the reference.
"""
from __future__ import annotations

import copy
import sys

import numpy as np

from ...spec import MODULE_OF
from . import memory

# Outputs that are compared by the judge with their own rules, not value by value.
META_KEYS = ("result_type", "len", "types", "args_after", "kwargs_after")


def _to_array(x):
    """An exact ndarray copy of an ndarray or tensor (subclasses stripped), else None."""
    if isinstance(x, np.ndarray):
        # The unbound base-class method: a subclass cannot intercept it.
        return np.ndarray.copy(np.ndarray.view(x, np.ndarray))
    if isinstance(x, np.generic):
        return np.array(x)
    torch = _torch_if_loaded()
    if torch is not None and isinstance(x, torch.Tensor):
        # A Tensor subclass may override __torch_function__; turn that dispatch off.
        with torch._C.DisableTorchFunctionSubclass():
            return np.array(x.detach().cpu().numpy(), copy=True)
    return None


def seed_torch(seed: int) -> None:
    """``torch.manual_seed`` for the CPU, which is all a case runs on: torch's own also queues a
    seeding of every accelerator with a formatted stack trace each time (a tenth of a child's CPU)."""
    import torch

    torch.default_generator.manual_seed(seed)


def _torch_if_loaded():
    return sys.modules.get("torch")


def plain(x):
    """``(value, type_name)``: ``x`` as plain data, or None when it has no plain form."""
    name = type(x).__name__
    if x is None or type(x) in (bool, int, float, str):  # exact types: a subclass may lie
        return x, name
    array = _to_array(x)
    if array is not None:
        return array, name
    return None, name


def describe_result(result, returns):
    """The result of a call as plain data, keyed by the output names in ``returns``."""
    data = {"result_type": type(result).__name__, "types": {}}
    if isinstance(result, (tuple, list)):
        data["len"] = len(result)
    if len(returns) == 1:
        items = [result] if not isinstance(result, (tuple, list)) else None
    else:
        items = list(result) if isinstance(result, (tuple, list)) and len(result) == len(returns) else None
    if items is not None:
        for name, item in zip(returns, items):
            value, type_name = plain(item)
            data["types"][name] = type_name
            if value is not None or item is None:
                data[name] = value
    return data


def _arrays_only(values):
    return [plain(v)[0] if _is_array(v) else None for v in values]


def _is_array(x):
    torch = _torch_if_loaded()
    return isinstance(x, np.ndarray) or (torch is not None and isinstance(x, torch.Tensor))


def _as_tensor(x):
    import torch

    return torch.from_numpy(x) if isinstance(x, np.ndarray) else x


def _poison_free_memory(args):
    """Leave NaN in the memory the call's arrays will likely be given: NumPy reuses a freed block of
    the same size, so a result read from memory never written (``np.log(w, where=w > 0)`` without
    ``out=``) shows as NaN instead of passing on whatever an earlier case left there."""
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and 0 < a.size <= 1 << 16:
            np.full(a.shape, np.nan, a.dtype)  # allocated and freed at once


def call(ns, function, args=(), kwargs=None, returns=("out",), sizes=None, as_tensors=False, peak_memory=False):
    """Call ``<module of function>.<function>(*args, **kwargs)`` on copies of the inputs.

    ``returns`` names the outputs (``("out", "weights")`` for a function returning a pair).
    ``sizes`` (e.g. ``{"B": 2, "Lq": 3}``) is for the judge's messages and is not used here.
    ``as_tensors``: pass the array inputs as torch tensors (for the PyTorch exercises).
    ``peak_memory``: also measure what the call allocates at its peak (``_memory``, see
    ``memory.peak``).
    """
    kwargs = dict(kwargs or {})
    args, kwargs = copy.deepcopy(list(args)), copy.deepcopy(kwargs)
    if as_tensors:
        args, kwargs = [_as_tensor(a) for a in args], {k: _as_tensor(v) for k, v in kwargs.items()}
    fn = getattr(ns.module(MODULE_OF[function]), function)
    _poison_free_memory(args)
    if peak_memory:
        result, used = memory.peak(lambda: fn(*args, **kwargs))
    else:
        result, used = fn(*args, **kwargs), None
    data = describe_result(result, tuple(returns))
    if used is not None:
        data["_memory"] = used
    data["args_after"] = _arrays_only(args)
    data["kwargs_after"] = {k: a for k, a in zip(kwargs, _arrays_only(kwargs.values()))}
    return data


def call_raises(ns, function, args=(), kwargs=None, sizes=None, expected="ValueError", as_tensors=False):
    """Call ``function`` on inputs it must refuse: ``{"raises": ...}`` says what happened, the
    name ``expected`` when it raised that exception (or a subclass), else what it did instead.
    ``as_tensors`` as for :func:`call` (a PyTorch exercise must not fail on a numpy input first)."""
    args, kwargs = copy.deepcopy(list(args)), copy.deepcopy(dict(kwargs or {}))
    if as_tensors:
        args, kwargs = [_as_tensor(a) for a in args], {k: _as_tensor(v) for k, v in kwargs.items()}
    fn = getattr(ns.module(MODULE_OF[function]), function)
    try:
        fn(*args, **kwargs)
        raised = "nothing"
    except NotImplementedError:  # the stub: not attempted, as on every other case
        raise
    except Exception as err:  # noqa: BLE001  any exception is the learner's answer here
        wanted = {"ValueError": ValueError, "TypeError": TypeError}.get(expected, ValueError)
        raised = expected if isinstance(err, wanted) else f"{type(err).__name__}"[:80]
    return {"raises": raised, "args_after": _arrays_only(args)}


# --- torch drivers for the MultiHeadAttention layer -------------------------------------------
