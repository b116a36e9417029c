"""Hugging Face's head pruning: BertAttention.prune_heads with find_pruneable_heads_and_indices (original
head numbers shifted by the heads already pruned before them) and prune_linear_layer (index_select into
a *new* nn.Linear, copied in).

Source: https://github.com/huggingface/transformers, src/transformers/pytorch_utils.py
(`find_pruneable_heads_and_indices`, `prune_linear_layer`) and models/bert/modeling_bert.py
(`BertAttention.prune_heads`) (v4.3x; the same code in A1ex-Chen/DL_project_log's copies of DistilBERT's
and BERT's prune_heads; commit not recorded).
Licence: Apache-2.0.
Adapter: the course layer's W_q, W_k, W_v, W_o, num_heads, head_dim for BERT's query, key, value,
output.dense, num_attention_heads, attention_head_size; pruned_heads kept on the layer (an empty set
when absent); the layer returned (BERT's returns None).
"""
import torch
from torch import nn

OUTSIDE = {
    "exercise": "prune_heads",
    "source": "huggingface/transformers pytorch_utils.py + modeling_bert.py BertAttention.prune_heads",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"float64",
    "cause": "prune_linear_layer builds a new nn.Linear in the default float32 and copies the kept rows in: a float64 layer comes back float32.",
    "named": [r"float32|dtype"],
    "false": [r"(renumber\w*|original numbering) (is )?wrong|current (positions|numbers) instead", r"bias (is )?(dropped|wrong|pruned|lost)"],
}


def find_pruneable_heads_and_indices(heads, n_heads, head_size, already_pruned_heads):
    mask = torch.ones(n_heads, head_size)
    heads = set(heads) - already_pruned_heads
    for head in heads:
        head = head - sum(1 if h < head else 0 for h in already_pruned_heads)
        mask[head] = 0
    mask = mask.view(-1).contiguous().eq(1)
    index = torch.arange(len(mask))[mask].long()
    return heads, index


def prune_linear_layer(layer, index, dim=0):
    index = index.to(layer.weight.device)
    W = layer.weight.index_select(dim, index).clone().detach()
    if layer.bias is not None:
        if dim == 1:
            b = layer.bias.clone().detach()
        else:
            b = layer.bias[index].clone().detach()
    new_size = list(layer.weight.size())
    new_size[dim] = len(index)
    new_layer = nn.Linear(new_size[1], new_size[0], bias=layer.bias is not None).to(layer.weight.device)
    new_layer.weight.requires_grad = False
    new_layer.weight.copy_(W.contiguous())
    new_layer.weight.requires_grad = True
    if layer.bias is not None:
        new_layer.bias.requires_grad = False
        new_layer.bias.copy_(b.contiguous())
        new_layer.bias.requires_grad = True
    return new_layer


def prune_heads(layer, heads):
    if not hasattr(layer, "pruned_heads"):
        layer.pruned_heads = set()
    if len(heads) == 0:
        return layer
    heads, index = find_pruneable_heads_and_indices(heads, layer.num_heads, layer.head_dim, layer.pruned_heads)
    layer.W_q = prune_linear_layer(layer.W_q, index)
    layer.W_k = prune_linear_layer(layer.W_k, index)
    layer.W_v = prune_linear_layer(layer.W_v, index)
    layer.W_o = prune_linear_layer(layer.W_o, index, dim=1)
    layer.num_heads = layer.num_heads - len(heads)
    layer.pruned_heads = layer.pruned_heads.union(heads)
    return layer
