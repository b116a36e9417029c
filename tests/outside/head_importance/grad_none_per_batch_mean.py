"""A head/neuron/hidden importance loop for structured pruning: head_importance += head_mask.grad.abs()
/ len(dev_loader), then head_mask.grad = None and model.zero_grad() each batch; per-layer L2 normalisation
(+ 1e-17).

Source: a public pruning repository found through the public-code index (loop over `dev_loader` with
`head_mask`, `neuron_mask`, `hidden_mask`; repository name not shown by the index; commit not recorded).
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: only the head part (neuron and hidden masks dropped); the lab's batches and loss_fn; the course's
head_mask starts the mask when given; normalisation applied when normalize=True (the original always normalises).
"""
import torch

OUTSIDE = {
    "exercise": "head_importance",
    "source": "public structured-pruning repository (head/neuron/hidden importance loop), name not shown by the index",
    "licence": "unknown",
    "verdict": "loses",
    "failing": r"batches of 2 and 1|head_mask",
    "cause": "it averages the batches' gradients with equal weight (/ len(dev_loader)) instead of per example, so a smaller last batch counts as much as a full one; removed heads keep their scores.",
    "named": [r"batch (size|mean)|weight\w* by (the )?batch|per example|equal weight|mean over (the )?batches|len\(y\)", r"removed heads?|head_mask.*(zero|0)"],
    "false": [r"never zeroed|accumulat", r"float64|dtype"],
}


def head_importance(model, batches, loss_fn, normalize=True, head_mask=None):
    batches = list(batches)
    shape = (model.num_layers, model.num_heads)
    head_importance = torch.zeros(shape)
    head_mask = torch.ones(shape) if head_mask is None else head_mask.detach().clone().float()
    head_mask.requires_grad_(True)
    for x, y in batches:
        loss = loss_fn(model(x, head_mask=head_mask), y)
        loss.backward()
        head_importance += head_mask.grad.abs().detach() / len(batches)
        head_mask.grad = None
        model.zero_grad()
    if normalize:
        norm_per_layer = torch.pow(torch.pow(head_importance, 2).sum(-1), 0.5)
        head_importance /= norm_per_layer.unsqueeze(-1) + 1e-17
    return head_importance
