"""`compute_heads_importance` of Hugging Face's bertology example (Michel et al. 2019): a head_mask of
ones with requires_grad, loss.backward() per batch, head_importance += head_mask.grad.abs() (the mask's
gradient is never zeroed between batches), divided by the number of tokens, then each layer divided by
its L2 norm (+ 1e-20).

Source: https://github.com/huggingface/transformers, examples/research_projects/bertology/run_bertology.py
`compute_heads_importance` (commit not recorded).
Licence: Apache-2.0.
Adapter: the lab's batches (x, y) and loss_fn instead of a DataLoader of (input_ids, input_mask, labels)
and the model's own loss; tot_tokens counts the tokens of x (B * positions, its input_mask of ones);
the course's head_mask starts the mask when given (the original's head_mask argument); entropy off;
normalize maps to not dont_normalize_importance_by_layer.
"""
import torch

OUTSIDE = {
    "exercise": "head_importance",
    "source": "huggingface/transformers examples/research_projects/bertology/run_bertology.py compute_heads_importance",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "cause": "head_mask.grad is never zeroed, so each batch adds the running sum of all earlier gradients; it also averages per token, not per example, and keeps scores for removed heads.",
    "named": [r"never zeroed|not zeroed|accumulat|zero_\(\)|grad\w* .*(add up|sum) .*earlier|cumulative"],
    "false": [r"float64|dtype", r"transpos"],
}


def compute_heads_importance(model, batches, loss_fn, head_mask=None, normalize=True):
    n_layers, n_heads = model.num_layers, model.num_heads
    head_importance = torch.zeros(n_layers, n_heads)
    if head_mask is None:
        head_mask = torch.ones(n_layers, n_heads)
    head_mask.requires_grad_(requires_grad=True)
    tot_tokens = 0.0
    for x, y in batches:
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


def head_importance(model, batches, loss_fn, normalize=True, head_mask=None):
    mask = None if head_mask is None else head_mask.detach().clone().float()
    return compute_heads_importance(model, batches, loss_fn, head_mask=mask, normalize=normalize)
