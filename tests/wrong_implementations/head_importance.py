"""`head_importance`: classic bugs and correct alternatives, written the way learners write them."""
import torch


def _gate(model, head_mask):
    shape = (model.num_layers, model.num_heads)
    return (torch.ones(shape) if head_mask is None else head_mask.detach().float().clone()).requires_grad_(True)


def no_abs(model, batches, loss_fn, normalize=True, head_mask=None):
    gate, total, n = _gate(model, head_mask), 0, 0
    for x, y in batches:
        (g,) = torch.autograd.grad(loss_fn(model(x, head_mask=gate), y), gate)
        total, n = total + g * len(y), n + len(y)
    scores = total / n
    if head_mask is not None:
        scores = scores * (head_mask != 0)
    if normalize:
        scores = scores / scores.norm(dim=-1, keepdim=True)
    return scores.detach()


def norm_per_head(model, batches, loss_fn, normalize=True, head_mask=None):
    gate, total, n = _gate(model, head_mask), 0, 0
    for x, y in batches:
        (g,) = torch.autograd.grad(loss_fn(model(x, head_mask=gate), y), gate)
        total, n = total + g.abs() * len(y), n + len(y)
    scores = total / n
    if head_mask is not None:
        scores = scores * (head_mask != 0)
    if normalize:
        scores = scores / torch.linalg.norm(scores, dim=0)  # over the layers: the wrong axis
    return scores.detach()


def masked_heads_in_norm(model, batches, loss_fn, normalize=True, head_mask=None):
    gate, total, n = _gate(model, head_mask), 0, 0
    for x, y in batches:
        (g,) = torch.autograd.grad(loss_fn(model(x, head_mask=gate), y), gate)
        total, n = total + g.abs() * len(y), n + len(y)
    scores = total / n  # a removed head keeps the |gradient| of its gate
    if normalize:
        scores = scores / scores.norm(dim=1, keepdim=True)
    return scores.detach()


def mean_of_batches(model, batches, loss_fn, normalize=True, head_mask=None):
    gate, grads = _gate(model, head_mask), []
    for x, y in batches:
        (g,) = torch.autograd.grad(loss_fn(model(x, head_mask=gate), y), gate)
        grads.append(g.abs())
    scores = torch.stack(grads).mean(0)  # every batch counts the same, whatever its size
    if head_mask is not None:
        scores = scores * (head_mask != 0)
    if normalize:
        scores = scores / scores.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return scores.detach()


def with_backward(model, batches, loss_fn, normalize=True, head_mask=None):
    """loss.backward() on a summed loss, float64 sums, eval mode during the pass (then restored)."""
    was_training = model.training
    model.eval()  # the lab model has no dropout, so eval and train give the same gradients
    shape = (model.num_layers, model.num_heads)
    alive = torch.ones(shape) if head_mask is None else (head_mask != 0).float()
    gate = alive.clone().requires_grad_(True)
    total, n = torch.zeros(shape, dtype=torch.float64), 0
    for x, y in batches:
        gate.grad = None
        (loss_fn(model(x, head_mask=gate), y) * len(y)).backward()
        total += gate.grad.double().abs()
        n += len(y)
    model.train(was_training)
    scores = (total / n).float() * alive
    if normalize:
        norms = scores.norm(dim=1, keepdim=True)
        scores = torch.where(norms > 0, scores / norms, torch.zeros_like(scores))
    return scores


def stacked(model, batches, loss_fn, normalize=True, head_mask=None):
    gate = _gate(model, head_mask)
    grads, sizes = [], []
    for x, y in batches:
        grads.append(torch.autograd.grad(loss_fn(model(x, head_mask=gate), y), gate)[0].abs())
        sizes.append(len(y))
    w = torch.tensor(sizes, dtype=torch.float32)
    scores = torch.einsum("b,blh->lh", w, torch.stack(grads)) / w.sum()
    if head_mask is not None:
        scores = scores.masked_fill(head_mask == 0, 0.0)
    if normalize:
        scores = scores / torch.linalg.vector_norm(scores, dim=-1, keepdim=True).clamp_min(1e-30)
    return scores.detach()


def bertology_backward(model, batches, loss_fn, normalize=True, head_mask=None):
    """As huggingface/transformers' run_bertology.py: loss.backward() on the caller's head_mask,
    whose .grad is never zeroed, summed per batch."""
    gate = torch.ones(model.num_layers, model.num_heads) if head_mask is None else head_mask
    gate.requires_grad_(True)
    total, n = torch.zeros(gate.shape), 0
    for x, y in batches:
        (loss_fn(model(x, head_mask=gate), y) * len(y)).backward()
        total += gate.grad.abs().detach()
        n += len(y)
    scores = total / n
    if head_mask is not None:
        scores = scores * (head_mask.detach() != 0)
    if normalize:
        scores = scores / scores.norm(dim=1, keepdim=True).clamp_min(1e-30)
    return scores


def min_max_rescaled(model, batches, loss_fn, normalize=True, head_mask=None):
    scores = stacked(model, batches, loss_fn, normalize, head_mask)
    return (scores - scores.min()) / (scores.max() - scores.min()) if normalize else scores


def normalised_globally(model, batches, loss_fn, normalize=True, head_mask=None):
    scores = stacked(model, batches, loss_fn, False, head_mask)
    return scores / scores.norm() if normalize else scores


def caller_mask_as_gate(model, batches, loss_fn, normalize=True, head_mask=None):
    """Right values, but head_mask.requires_grad_() turns the caller's own tensor into the gate."""
    if head_mask is not None:
        head_mask.requires_grad_(True)
    return stacked(model, batches, loss_fn, normalize, head_mask)


WRONG = {
    no_abs: "signed gradients",
    norm_per_head: "normalisation over the wrong axis",
    masked_heads_in_norm: "masked heads left in the score",
    mean_of_batches: "unweighted mean over batches",
    bertology_backward: "accumulated across batches",
    min_max_rescaled: "global min and max",
    normalised_globally: "over all layers at once",
    caller_mask_as_gate: "changes the caller's head_mask",
}
CORRECT = [with_backward, stacked]

# A second mistake in the same code, whose diagnosis is true of it too.
ALSO_TRUE = {bertology_backward: ["changes the caller's head_mask"]}
