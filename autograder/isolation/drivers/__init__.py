"""Drivers: each runs one case of an exercise against a namespace and returns plain data.

A case names its driver; the learner's process and the judge look it up here by name. The
harness helpers are in ``core`` (calling a function, describing what came back), the layer
drivers of chapters 4 and 7 in ``layer``, those of chapter 6 and their harness model in
``pruning``, and chapter 8's ``generate`` on its harness model in ``generation``. Drivers are
harness only: nothing here imports the references or the judge.
"""
from .core import META_KEYS, call, call_raises, describe_result, plain  # noqa: F401
from .layer import (  # noqa: F401
    LINEARS,
    gqa_forward,
    kv_cache_decode,
    kv_cache_updates,
    mha_dropout,
    mha_forward,
    mha_from_torch,
)
from .pruning import importance_run, prune_run  # noqa: F401
from .generation import generate_run  # noqa: F401
