"""Drivers of chapter 6 (``head_importance``, ``prune_heads``), on the harness of ``harness.py``.

Weights and data arrive as plain arrays in the case inputs. Like every driver, these return
plain data and never compare: the judge runs them again against the reference and the known
bugs.
"""
from __future__ import annotations

import numpy as np

from .core import describe_result, plain
from .harness import HarnessAttention, fill, harness_digits, torch_nn
from .layer import param_shapes


def _snapshot(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def importance_run(ns, config, state, x, y, batch_size, normalize=True, head_mask=None, train_mode=False,
                   sizes=None):
    """``head_importance`` on the lab model: the scores, and whether the model was left alone.

    ``state`` is the model's ``state_dict`` as arrays; ``(x, y)`` are cut into consecutive
    batches of ``batch_size`` (the last one smaller, so that weighting by batch size shows).
    """

    torch, _ = torch_nn()
    model = harness_digits(config, state).train(train_mode)
    before = _snapshot(model)
    x, y = torch.from_numpy(np.array(x)), torch.from_numpy(np.array(y))
    batches = [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, len(y), batch_size)]
    kwargs = {"normalize": normalize}
    if head_mask is not None:
        kwargs["head_mask"] = torch.from_numpy(np.array(head_mask))
    result = ns.module("pruning").head_importance(model, batches, torch.nn.functional.cross_entropy, **kwargs)
    data = describe_result(result, ("out",))
    given = kwargs.get("head_mask")
    data["the caller's head_mask left as it was"] = given is None or bool(
        not given.requires_grad and given.grad is None and np.array_equal(given.detach().numpy(), head_mask))
    after = dict(model.named_parameters())
    data["model parameters unchanged"] = all(torch.equal(before[k], after[k].detach()) for k in before)
    data["model mode unchanged (training=%s)" % train_mode] = model.training == train_mode
    data["result requires grad"] = bool(getattr(result, "requires_grad", False))
    return data




def prune_run(ns, config, state, query, key, value, steps, dtype="float64", sizes=None):
    """``prune_heads`` applied ``steps`` times (lists of original head numbers) to a harness layer
    of ``dtype`` (float32 or float64: a pruned layer must keep its dtype).

    Returns, after the last step, the layer's structure (parameter dtypes and shapes,
    ``num_heads``, ``pruned_heads``, the parameter count, whether the same layer came back),
    and after every step the pruned layer's output on ``(query, key, value)``, which the
    reference makes equal to the unpruned layer's output with those heads masked. When the
    harness's forward pass fails on the pruned layer, ``_harness`` says so (the structure
    above says why), and the remaining steps are still applied, without a forward pass: the
    structure returned is always the one after every step, as the case's calls describe it, so
    it is compared with the reference's after the same steps, never a state reached earlier.
    """
    torch, _ = torch_nn()
    layer = HarnessAttention(config["embed_dim"], config["num_heads"], kdim=config.get("kdim"),
                             vdim=config.get("vdim"), bias=config.get("bias", True))
    layer = fill(layer.to(getattr(torch, dtype)), state).eval()
    q, k, v = (torch.from_numpy(np.array(a)).to(getattr(torch, dtype)) for a in (query, key, value))
    prune = ns.module("pruning").prune_heads
    data, outs, same = {}, {}, True
    for heads in steps:
        returned = prune(layer, list(heads))  # every call made, whatever an earlier one returned
        same = same and returned is layer
        if "_harness" in data:  # no forward pass after the first that failed; the pruning goes on
            continue
        try:
            with torch.no_grad():
                outs[f"the output after pruning heads {list(heads)}"] = plain(layer(q, k, v)[0])[0]
        except Exception as err:  # the pruned layer does not run: its dtypes and shapes below say why
            data["_harness"] = (f"the grader's {dtype} layer could not run after your prune_heads(layer, "
                                f"{list(heads)}): {type(err).__name__}: {str(err)[:200]}")
    data["param_dtypes"] = {name: str(getattr(p, "dtype", "?")).replace("torch.", "")
                            for name, p in _named_tensors(layer)}
    data["param_shapes"] = param_shapes(layer)
    data["num_heads"] = plain(getattr(layer, "num_heads", None))[0]
    removed = getattr(layer, "pruned_heads", None)
    try:
        data["pruned_heads (sorted)"] = sorted(int(h) for h in removed)
    except Exception:
        data["pruned_heads (sorted)"] = None if removed is None else repr(type(removed).__name__)
    data["the number of parameters"] = int(sum(p.numel() for p in layer.parameters()))
    data["prune_heads returned the same layer"] = bool(same)
    data.update(outs)
    return data


def _named_tensors(layer):
    """``("W_q.weight", tensor)``... of the four projections (None where a part is missing)."""
    for name in ("W_q", "W_k", "W_v", "W_o"):
        for part in ("weight", "bias"):
            tensor = getattr(getattr(layer, name, None), part, None)
            if tensor is not None:
                yield f"{name}.{part}", tensor
