"""Chapter 6: head importance and pruning (PyTorch).

The model of the lab has ``num_layers`` attention layers (your ``MultiHeadAttention``)
and ``forward(x, head_mask=None)`` with ``head_mask (num_layers, num_heads)``.
"""
import torch


def head_importance(model, batches, loss_fn, normalize=True, head_mask=None):
    """Exercise ``head_importance`` (chapter 6, section "Importance from a gate's gradient").

    Michel, Levy and Neubig (2019): put a gate ``xi``, ``(num_layers, num_heads)``, in as
    ``head_mask``; it starts at ones, or at ``head_mask`` when given (0 = a head already
    removed). For every batch ``(x, y)`` of ``batches`` take the gradient of
    ``loss_fn(model(x, head_mask=xi), y)`` (a mean over the batch) with respect to ``xi``, and
    accumulate its absolute value weighted by the batch size. The importance is that sum
    divided by the number of examples; a removed head's importance is 0. With ``normalize``,
    each layer's row is divided by its L2 norm (over that layer's heads; a layer whose heads
    are all removed stays 0). The model's parameters and mode (``model.training``) must be
    left as they were.

    Args:
        model: has ``num_layers``, ``num_heads`` and ``forward(x, head_mask=None)``.
        batches: an iterable of ``(x, y)`` pairs; batches may differ in size.
        loss_fn: ``loss_fn(logits, y)``, a scalar mean over the batch.
        head_mask: optional ``(num_layers, num_heads)``, 1 = present, 0 = removed.

    Returns:
        Tensor ``(num_layers, num_heads)``, float32, no grad.
    """
    raise NotImplementedError("exercise `head_importance`: implement it in mha_exercises/pruning.py (chapter 6)")


def prune_heads(layer, heads):
    """Exercise ``prune_heads`` (chapter 6, section "Removing heads for real").

    Remove ``heads`` from a ``MultiHeadAttention`` in place: the matching output rows of
    ``W_q W_k W_v`` (weights and biases) and input columns of ``W_o``; update
    ``num_heads``. Heads are numbered as in the original, unpruned layer; the layer records
    the removed ones in ``layer.pruned_heads`` (a set, created on first use), so repeated
    calls work and already-removed heads are ignored. Afterwards the layer's output equals
    the unpruned layer's output with those heads masked by ``head_mask``. The layer keeps its
    dtype. At least one head must remain.

    Args:
        layer: a ``MultiHeadAttention`` (chapter 4): ``W_q W_k W_v W_o`` (``nn.Linear``,
            weight ``(out, in)``), ``num_heads``, ``head_dim``; head ``h`` owns features
            ``h*head_dim:(h+1)*head_dim``.
        heads: an iterable of head numbers (ints) of the original layer.

    Returns:
        The same ``layer``.
    """
    raise NotImplementedError("exercise `prune_heads`: implement it in mha_exercises/pruning.py (chapter 6)")
