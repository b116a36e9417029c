"""The head-importance loop of a public MLM pruning/rewiring script: per batch model.zero_grad(), the forward
pass with head_mask, loss.backward(), head_importance += head_mask.grad.abs(), tokens counted from the
attention mask; then head_importance /= tot_tokens and per-layer L2 normalisation (+ 1e-20).

Source: a public repository found through the public-code index ("Computing importance scores for pruning",
an MLM adaptation of Hugging Face's bertology; repository name not shown by the index; commit not recorded).
Licence: Apache-2.0 for the bertology code it adapts; the script's own unknown.
Adapter: the lab's batches (x, y) and loss_fn instead of a DataLoader and the model's MLM loss; the token count
is the tokens of x (B * positions); FFN importance dropped; normalisation applied when normalize=True.
"""
import torch

OUTSIDE = {
    "exercise": "head_importance",
    "source": "public MLM pruning script adapting bertology (name not shown by the index)",
    "licence": "Apache-2.0 (bertology) / unknown",
    "verdict": "loses",
    "cause": "model.zero_grad() clears the model's gradients but not head_mask.grad (the mask is no parameter of the model), so each batch adds the running sum of earlier gradients; it also averages per token, not per example.",
    "named": [r"never zeroed|not zeroed|accumulat|zero_grad|cumulative"],
    "false": [r"float64|dtype"],
}


def head_importance(model, batches, loss_fn, normalize=True, head_mask=None):
    shape = (model.num_layers, model.num_heads)
    head_importance = torch.zeros(shape)
    head_mask = torch.ones(shape) if head_mask is None else head_mask.detach().clone().float()
    head_mask.requires_grad_(True)
    tot_tokens = 0.0
    for x, y in batches:
        model.zero_grad()
        loss = loss_fn(model(x, head_mask=head_mask), y)
        loss.backward()
        head_importance += head_mask.grad.abs().detach()
        tot_tokens += float(x.shape[0] * x.shape[1])
    head_importance /= tot_tokens
    if normalize:
        exponent = 2
        norm_by_layer = torch.pow(torch.pow(head_importance, exponent).sum(-1), 1 / exponent)
        head_importance /= norm_by_layer.unsqueeze(-1) + 1e-20
    return head_importance
