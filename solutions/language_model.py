"""Chapter 8 reference: positions, generation with a KV cache, the induction score (PyTorch)."""
import torch


def sinusoidal_positions(length, dim, offset=0, base=10000.0):
    if dim % 2:
        raise ValueError(f"dim must be even (sin and cos in pairs), got {dim}")
    positions = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]  # (L, 1)
    inv_freq = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (dim/2,): base^(-2i/dim)
    angles = positions * inv_freq  # (L, dim/2)
    out = torch.empty(length, dim, dtype=torch.float64)
    out[:, 0::2], out[:, 1::2] = torch.sin(angles), torch.cos(angles)  # interleaved, as in the paper
    return out.to(torch.float32)


def apply_rope(x, offset=0, base=10000.0):
    length, dim = x.shape[-2], x.shape[-1]
    if dim % 2:
        raise ValueError(f"the last axis of x must be even (features rotated in pairs), got {dim}")
    half = dim // 2
    positions = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]  # (L, 1)
    inv_freq = base ** (-torch.arange(0, half, dtype=torch.float64) * 2 / dim)  # (d/2,)
    angles = positions * inv_freq  # (L, d/2): position t, pair i turns by t * base^(-2i/d)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]  # half-split pairs (i, i + d/2), as in GPT-NeoX and Llama
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    tokens = prompt
    caches = model.new_caches() if use_cache else None
    logits = model(tokens, caches=caches)  # (B, L, V): the whole prompt once
    for step in range(max_new_tokens):
        last = logits[:, -1, :]  # (B, V): the prediction for the next position
        if temperature == 0:
            next_token = last.argmax(dim=-1, keepdim=True)  # (B, 1)
        else:
            probs = torch.softmax(last / temperature, dim=-1)
            next_token = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
        tokens = torch.cat([tokens, next_token], dim=1)
        if step + 1 < max_new_tokens:  # with the caches only the new token goes in; without, all again
            logits = model(next_token, caches=caches) if use_cache else model(tokens)
    return tokens


def induction_score(weights, period):
    length = weights.shape[-1]
    if not 1 <= period < length:
        raise ValueError(f"period must be at least 1 and less than the length {length}, got {period}")
    queries = torch.arange(period, length)  # the positions whose token repeats one `period` back
    # The token after the earlier copy of the current one: key i - period + 1.
    return weights[..., queries, queries - period + 1].mean(dim=-1)
