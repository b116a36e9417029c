"""Every learner stub raises NotImplementedError naming its exercise id (COURSE.md contract)."""
import inspect

import numpy as np
import pytest
import torch

from autograder.spec import MODULE_OF
from mha_exercises import analysis, attention, efficient, heads, layer, masking, pruning

MODULES = {m.__name__.rsplit(".", 1)[1]: m for m in (attention, masking, heads, layer, analysis, pruning, efficient)}

x = np.ones((2, 3, 4))
CALLS = {
    "softmax": lambda: attention.softmax(x),
    "scaled_dot_product_attention": lambda: attention.scaled_dot_product_attention(x, x, x),
    "padding_mask": lambda: masking.padding_mask(np.array([1, 2]), 4),
    "causal_mask": lambda: masking.causal_mask(3),
    "masked_softmax": lambda: masking.masked_softmax(x, None),
    "split_heads": lambda: heads.split_heads(x, 2),
    "merge_heads": lambda: heads.merge_heads(x[None]),
    "multi_head_attention": lambda: layer.multi_head_attention(x, x, x, {}, 2),
    "parameter_count": lambda: layer.parameter_count(100, 4, 128),
    "MultiHeadAttention": lambda: layer.MultiHeadAttention(8, 2),
    "attention_entropy": lambda: analysis.attention_entropy(x),
    "head_importance": lambda: pruning.head_importance(None, [], None),
    "prune_heads": lambda: pruning.prune_heads(None, [0]),
    "chunked_attention": lambda: efficient.chunked_attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3), 1),
    "repeat_kv": lambda: efficient.repeat_kv(torch.ones(1, 2, 3, 4), 2),
    "GroupedQueryAttention": lambda: efficient.GroupedQueryAttention(8, 4, 2),
    "KVCache": lambda: efficient.KVCache(),
}


def test_every_exercise_has_a_stub_call():
    assert set(CALLS) == set(MODULE_OF)


@pytest.mark.parametrize("exercise", sorted(CALLS))
def test_stub_raises_naming_its_exercise(exercise):
    with pytest.raises(NotImplementedError, match=f"`{exercise}`"):
        CALLS[exercise]()


@pytest.mark.parametrize("exercise", sorted(MODULE_OF))
def test_stub_docstring_states_the_contract(exercise):
    obj = getattr(MODULES[MODULE_OF[exercise]], exercise)
    doc = inspect.getdoc(obj) or ""
    assert f"``{exercise}``" in doc and "chapter" in doc, f"{exercise}: docstring must name its id and chapter"


@pytest.mark.parametrize("exercise", sorted(MODULE_OF))
def test_solution_has_the_stub_signature(exercise):
    import importlib.util

    name = f"solutions.{MODULE_OF[exercise]}"
    solution = importlib.import_module(name) if importlib.util.find_spec(name) else None
    if not hasattr(solution, exercise):
        pytest.skip(f"no reference solution for {exercise} yet")
    stub, ref = getattr(MODULES[MODULE_OF[exercise]], exercise), getattr(solution, exercise)
    if inspect.isclass(stub):
        stub, ref = stub.__init__, ref.__init__
    assert inspect.signature(stub) == inspect.signature(ref)
