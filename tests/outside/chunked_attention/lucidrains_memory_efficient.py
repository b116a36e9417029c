"""`memory_efficient_attention` of lucidrains/memory-efficient-attention-pytorch (Rabe & Staats 2021):
q scaled, keys in buckets; per bucket the scores minus their max (taken *before* masking), masked scores set
to -finfo.max, exp, sums and weighted values; the buckets' results stacked, renormalised to the global max,
and divided by the summed weights + eps (1e-8); a bucket entirely masked by the (end-aligned) causal mask is skipped.

Source: https://github.com/lucidrains/memory-efficient-attention-pytorch,
memory_efficient_attention_pytorch/memory_efficient_attention.py (`summarize_qkv_chunk`,
`memory_efficient_attention`), commit 12aba871571d9e86a793d86d509211f0530b29fc.
Licence: MIT.
Adapter: q_bucket_size = Lq (the course chunks the keys only), k_bucket_size = chunk_size; 3-D inputs
given a head axis of 1 and back (its einsums are 'b h i d'); no padding mask, no bias, no checkpointing.
"""
import torch

OUTSIDE = {
    "exercise": "chunked_attention",
    "source": "lucidrains/memory-efficient-attention-pytorch memory_efficient_attention.py",
    "licence": "MIT",
    "verdict": "loses",
    "cause": "the denominator gets + 1e-8 (eps), a relative error up to 1e-8 / (sum of weights) that float64 tolerances see, larger where the chunk max was taken over masked scores; and it stacks every chunk's weighted values before combining them.",
    "named": [r"eps|1e-8|added to the (denominator|sum)|denominator"],
    "false": [r"not end-aligned|start-aligned|queries aligned to the start", r"float32 (statistics|accumulat)"],
}


def _summarize_chunk(q, k, v, causal_mask):
    weight = torch.einsum("b h i d, b h j d -> b h i j", q, k)
    weight_max = weight.amax(dim=-1, keepdim=True).detach()
    weight = weight - weight_max
    mask_value = -torch.finfo(weight.dtype).max
    if causal_mask is not None:
        weight = weight.masked_fill(causal_mask, mask_value)
    exp_weight = weight.exp()
    weighted_value = torch.einsum("b h i j, b h j d -> b h i d", exp_weight, v)
    return exp_weight.sum(dim=-1), weighted_value, weight_max[..., 0]


def _memory_efficient_attention(q, k, v, causal=False, q_bucket_size=512, k_bucket_size=1024, eps=1e-8):
    q = q * q.shape[-1] ** -0.5
    q_chunks = q.split(q_bucket_size, dim=-2)
    k_chunks = k.split(k_bucket_size, dim=-2)
    v_chunks = v.split(k_bucket_size, dim=-2)
    if causal:
        i, j = q.shape[-2], k.shape[-2]
        causal_mask = torch.ones(i, j, dtype=torch.bool).triu(j - i + 1)
        causal_mask_chunks = [t.split(k_bucket_size, dim=-1) for t in causal_mask.split(q_bucket_size, dim=0)]
    out = []
    for q_index, q_chunk in enumerate(q_chunks):
        exp_weights, weighted_values, weight_maxes = [], [], []
        for k_index, (k_chunk, v_chunk) in enumerate(zip(k_chunks, v_chunks)):
            causal_mask_chunk = causal_mask_chunks[q_index][k_index] if causal else None
            if causal_mask_chunk is not None and torch.all(causal_mask_chunk):
                continue
            e, wv, m = _summarize_chunk(q_chunk, k_chunk, v_chunk, causal_mask_chunk)
            exp_weights.append(e)
            weighted_values.append(wv)
            weight_maxes.append(m)
        weight_maxes = torch.stack(weight_maxes, dim=-1)
        weighted_values = torch.stack(weighted_values, dim=-1)
        exp_weights = torch.stack(exp_weights, dim=-1)
        global_max = weight_maxes.amax(dim=-1, keepdim=True)
        renorm_factor = (weight_maxes - global_max).exp().detach()
        exp_weights = exp_weights * renorm_factor
        weighted_values = weighted_values * renorm_factor[..., None, :]
        all_values = weighted_values.sum(dim=-1)
        all_weights = exp_weights.sum(dim=-1)
        out.append(all_values / (all_weights[..., None] + eps))
    return torch.cat(out, dim=-2)


def chunked_attention(q, k, v, chunk_size, causal=False):
    three_d = q.dim() == 3
    if three_d:
        q, k, v = q[:, None], k[:, None], v[:, None]
    out = _memory_efficient_attention(q, k, v, causal=causal, q_bucket_size=q.shape[-2], k_bucket_size=chunk_size)
    return out[:, 0] if three_d else out
