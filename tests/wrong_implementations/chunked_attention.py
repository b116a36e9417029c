"""`chunked_attention` (PyTorch, online softmax): classic bugs and correct alternatives."""
import math

import numpy as np
import torch


def _chunks(num_keys, size):
    return [(s, min(s + size, num_keys)) for s in range(0, num_keys, size)]


def _allowed(lq, lk, start, stop):
    return torch.arange(start, stop)[None, :] <= torch.arange(lq)[:, None] + (lk - lq)  # (Lq, C)


def no_rescale(q, k, v, chunk_size, causal=False):
    lq, lk = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = q @ k[..., start:stop, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(~_allowed(lq, lk, start, stop), -math.inf)
        m_new = torch.maximum(m, s.max(-1, keepdim=True).values)
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - shift)
        l = l * torch.exp(m - shift) + p.sum(-1, keepdim=True)
        acc = acc + p @ v[..., start:stop, :]  # forgot: acc * exp(m - m_new)
        m = m_new
    return acc / torch.where(l > 0, l, torch.ones_like(l))


def nan_when_nothing_seen(q, k, v, chunk_size, causal=False):
    lq, lk = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = q @ k[..., start:stop, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(~_allowed(lq, lk, start, stop), -math.inf)
        m_new = torch.maximum(m, s.max(-1, keepdim=True).values)
        alpha = torch.exp(m - m_new)  # -inf - -inf = nan for a query with no key yet
        p = torch.exp(s - m_new)
        l = l * alpha + p.sum(-1, keepdim=True)
        acc = acc * alpha + p @ v[..., start:stop, :]
        m = m_new
    return acc / l


def unnormalised(q, k, v, chunk_size, causal=False):
    lq, lk = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = q @ k[..., start:stop, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(~_allowed(lq, lk, start, stop), -math.inf)
        m_new = torch.maximum(m, s.max(-1, keepdim=True).values)
        shift = m_new.clamp(min=torch.finfo(q.dtype).min)
        acc = acc * torch.exp(m - shift) + torch.exp(s - shift) @ v[..., start:stop, :]
        m = m_new
    return acc  # the running denominator was never kept


def start_aligned(q, k, v, chunk_size, causal=False):
    lq, lk = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = q @ k[..., start:stop, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:  # torch.tril-style: query i sees keys 0..i
            s = s.masked_fill(torch.arange(start, stop)[None, :] > torch.arange(lq)[:, None], -math.inf)
        m_new = torch.maximum(m, s.max(-1, keepdim=True).values)
        shift = m_new.clamp(min=torch.finfo(q.dtype).min)
        p, alpha = torch.exp(s - shift), torch.exp(m - shift)
        l, acc, m = l * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ v[..., start:stop, :], m_new
    return acc / l.clamp(min=torch.finfo(q.dtype).tiny)


def local_mask_index(q, k, v, chunk_size, causal=False):
    lq, lk = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = q @ k[..., start:stop, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:  # the key index restarts at 0 in every chunk
            s = s.masked_fill(~_allowed(lq, lk, 0, stop - start), -math.inf)
        m_new = torch.maximum(m, s.max(-1, keepdim=True).values)
        shift = m_new.clamp(min=torch.finfo(q.dtype).min)
        p, alpha = torch.exp(s - shift), torch.exp(m - shift)
        l, acc, m = l * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ v[..., start:stop, :], m_new
    return acc / l.clamp(min=torch.finfo(q.dtype).tiny)


def whole_chunks_only(q, k, v, chunk_size, causal=False):
    lq, lk = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    for c in range(lk // chunk_size):  # the remainder is never visited
        start, stop = c * chunk_size, (c + 1) * chunk_size
        s = q @ k[..., start:stop, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(~_allowed(lq, lk, start, stop), -math.inf)
        m_new = torch.maximum(m, s.max(-1, keepdim=True).values)
        shift = m_new.clamp(min=torch.finfo(q.dtype).min)
        p, alpha = torch.exp(s - shift), torch.exp(m - shift)
        l, acc, m = l * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ v[..., start:stop, :], m_new
    return acc / l.clamp(min=torch.finfo(q.dtype).tiny)


def log_sum_exp_merge(q, k, v, chunk_size, causal=False):
    """Correct: per chunk a normalised output and its log-sum-exp, merged by weights."""
    lq, lk = q.shape[-2], k.shape[-2]
    out = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    lse = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = torch.einsum("...qd,...kd->...qk", q, k[..., start:stop, :]) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(~_allowed(lq, lk, start, stop), -math.inf)
        chunk_lse = torch.logsumexp(s, dim=-1, keepdim=True)  # -inf for a fully masked chunk
        safe = torch.where(torch.isinf(chunk_lse), torch.zeros_like(chunk_lse), chunk_lse)
        chunk_out = torch.exp(s - safe) @ v[..., start:stop, :]
        new_lse = torch.logaddexp(lse, chunk_lse)
        safe_new = torch.where(torch.isinf(new_lse), torch.zeros_like(new_lse), new_lse)
        out = out * torch.exp(lse - safe_new) + chunk_out * torch.exp(chunk_lse - safe_new)
        lse = new_lse
    return out


def python_loop_over_chunks_float64(q, k, v, chunk_size, causal=False):
    """Correct: float64 internals, masks by where, a list of chunk boundaries."""
    lq, lk = q.shape[-2], k.shape[-2]
    q64, k64, v64 = q.double(), k.double(), v.double()
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=torch.float64)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=torch.float64)
    bounds = list(range(0, lk, chunk_size)) + [lk]
    for start, stop in zip(bounds[:-1], bounds[1:]):
        s = (q64 / math.sqrt(q.shape[-1])) @ k64[..., start:stop, :].transpose(-1, -2)
        if causal:
            s = torch.where(_allowed(lq, lk, start, stop), s, torch.tensor(-math.inf, dtype=s.dtype))
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        finite = torch.isfinite(m_new)
        p = torch.where(finite, torch.exp(s - torch.where(finite, m_new, 0.0)), 0.0)
        alpha = torch.where(finite, torch.exp(m - torch.where(finite, m_new, 0.0)), 0.0)
        l = alpha * l + p.sum(-1, keepdim=True)
        acc = alpha * acc + p @ v64[..., start:stop, :]
        m = m_new
    return torch.where(l > 0, acc / torch.where(l > 0, l, 1.0), 0.0).to(q.dtype)


def full_scores_then_chunks(q, k, v, chunk_size, causal=False):
    """The whole (Lq, Lk) score matrix first, then the online softmax over slices of it: the
    values are right, the memory is the plain version's."""
    lq, lk = q.shape[-2], k.shape[-2]
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-1, -2)  # (..., Lq, Lk) at once
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = scores[..., start:stop]
        if causal:
            s = s.masked_fill(~_allowed(lq, lk, start, stop), -math.inf)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        shift = m_new.clamp(min=torch.finfo(q.dtype).min)
        p, alpha = torch.exp(s - shift), torch.exp(m - shift)
        l, acc, m = l * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ v[..., start:stop, :], m_new
    return acc / l.clamp(min=torch.finfo(q.dtype).tiny)


def plain_softmax(q, k, v, chunk_size, causal=False):
    """No chunks at all: softmax over the whole score matrix (chunk_size ignored)."""
    lq, lk = q.shape[-2], k.shape[-2]
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(~_allowed(lq, lk, 0, lk), -math.inf)
    w = torch.softmax(s, dim=-1)
    return torch.nan_to_num(w) @ v  # a query that sees no key: 0, not NaN


def scores_chunked_then_joined(q, k, v, chunk_size, causal=False):
    """The scores computed chunk by chunk, then concatenated: the whole matrix again."""
    lq, lk = q.shape[-2], k.shape[-2]
    parts = []
    for start, stop in _chunks(lk, chunk_size):
        s = q @ k[..., start:stop, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        parts.append(s.masked_fill(~_allowed(lq, lk, start, stop), -math.inf) if causal else s)
    return torch.nan_to_num(torch.softmax(torch.cat(parts, dim=-1), dim=-1)) @ v


def numpy_whole_matrix(q, k, v, chunk_size, causal=False):
    """In NumPy, as chapters 1-3: the whole score matrix (what tracemalloc sees, not torch)."""
    qn, kn, vn = q.numpy(), k.numpy(), v.numpy()
    lq, lk = qn.shape[-2], kn.shape[-2]
    s = qn @ np.swapaxes(kn, -1, -2) / math.sqrt(qn.shape[-1])
    if causal:
        s = np.where(_allowed(lq, lk, 0, lk).numpy(), s, -np.inf)
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0))
    total = e.sum(-1, keepdims=True)
    return torch.from_numpy(np.where(total > 0, e / np.where(total > 0, total, 1), 0) @ vn)


def numpy_chunks(q, k, v, chunk_size, causal=False):
    """Correct: the online softmax in NumPy, one chunk of keys at a time."""
    qn, kn, vn = q.numpy() / math.sqrt(q.shape[-1]), k.numpy(), v.numpy()
    lq, lk = qn.shape[-2], kn.shape[-2]
    m = np.full(qn.shape[:-1] + (1,), -np.inf, dtype=qn.dtype)
    l = np.zeros_like(m)
    acc = np.zeros(qn.shape[:-1] + (vn.shape[-1],), dtype=qn.dtype)
    for start, stop in _chunks(lk, chunk_size):
        s = qn @ np.swapaxes(kn[..., start:stop, :], -1, -2)
        if causal:
            s = np.where(_allowed(lq, lk, start, stop).numpy(), s, -np.inf)
        m_new = np.maximum(m, s.max(-1, keepdims=True))
        shift = np.where(np.isfinite(m_new), m_new, 0)
        p, alpha = np.exp(s - shift), np.exp(m - shift)
        l, acc, m = l * alpha + p.sum(-1, keepdims=True), acc * alpha + p @ vn[..., start:stop, :], m_new
    return torch.from_numpy(np.where(l > 0, acc / np.where(l > 0, l, 1), 0))


WRONG = {
    full_scores_then_chunks: "at least half the",
    plain_softmax: "at least half the",
    scores_chunked_then_joined: "at least half the",
    numpy_whole_matrix: "new NumPy arrays and Python objects at once",
    no_rescale: "not rescaled by exp(m_old - m_new)",
    nan_when_nothing_seen: "exp(-inf - -inf) = NaN",
    unnormalised: "missing the final normalisation",
    start_aligned: "aligned to the start of the keys",
    local_mask_index: "index inside its chunk",
    whole_chunks_only: "leaves out the last, shorter chunk",
}
CORRECT = [log_sum_exp_merge, python_loop_over_chunks_float64, numpy_chunks]
