"""Chapter 7 reference solutions against plain attention and torch's fused kernel."""
import pytest
import torch
import torch.nn.functional as F

from solutions.efficient import (
    GroupedQueryAttention,
    KVCache,
    attention,
    causal_allowed,
    chunked_attention,
    repeat_kv,
)
from solutions.layer import MultiHeadAttention
from solutions.masking import causal_mask

TOL = {torch.float64: dict(rtol=1e-10, atol=1e-10), torch.float32: dict(rtol=1e-5, atol=1e-5)}


def qkv(batch=2, heads=3, lq=7, lk=11, dk=5, dv=4, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, heads, lq, dk, generator=g, dtype=dtype),
            torch.randn(batch, heads, lk, dk, generator=g, dtype=dtype),
            torch.randn(batch, heads, lk, dv, generator=g, dtype=dtype))


def test_causal_allowed_matches_numpy_causal_mask():
    for lq, lk in [(1, 1), (4, 4), (3, 8), (8, 3)]:
        assert torch.equal(causal_allowed(lq, lk), torch.from_numpy(causal_mask(lq, lk)))
    assert torch.equal(causal_allowed(5, 9, key_start=2, key_stop=6), causal_allowed(5, 9)[:, 2:6])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("causal", [False, True])
def test_plain_attention_matches_torch_sdpa(dtype, causal):
    q, k, v = qkv(lq=6, lk=9, dtype=dtype)
    allowed = causal_allowed(6, 9) if causal else None
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(attention(q, k, v, allowed), expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lq,lk,chunk", [(7, 11, 4), (7, 11, 3), (11, 7, 2), (5, 13, 13), (5, 13, 100),
                                         (1, 9, 1), (9, 9, 5)])
def test_chunked_attention_equals_plain(dtype, causal, lq, lk, chunk):
    q, k, v = qkv(lq=lq, lk=lk, dtype=dtype)
    allowed = causal_allowed(lq, lk) if causal else None
    out = chunked_attention(q, k, v, chunk, causal=causal)
    assert out.dtype == dtype and out.shape == (2, 3, lq, 4)
    assert not out.isnan().any()
    torch.testing.assert_close(out, attention(q, k, v, allowed), **TOL[dtype])
    if lq <= lk or not causal:  # torch's kernel agrees too where no row is fully masked
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        torch.testing.assert_close(out, expected, **TOL[dtype])


def test_chunked_causal_fully_masked_rows_are_zero():
    # Lq > Lk: the first Lq - Lk queries sit before every key, so they see nothing.
    q, k, v = qkv(lq=9, lk=4)
    out = chunked_attention(q, k, v, chunk_size=3, causal=True)
    assert torch.equal(out[..., :5, :], torch.zeros_like(out[..., :5, :]))
    torch.testing.assert_close(out, attention(q, k, v, causal_allowed(9, 4)), **TOL[torch.float64])


def test_chunked_attention_is_stable_at_large_logits():
    q, k, v = qkv(lq=4, lk=10, dtype=torch.float32)
    out = chunked_attention(q * 300, k * 300, v, chunk_size=3)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q * 300, k * 300, v), rtol=1e-4, atol=1e-4)


def test_chunked_attention_leaves_inputs_unchanged():
    q, k, v = qkv()
    copies = [t.clone() for t in (q, k, v)]
    chunked_attention(q, k, v, 4, causal=True)
    assert all(torch.equal(a, b) for a, b in zip((q, k, v), copies))


def test_repeat_kv_repeats_each_head_consecutively():
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).view(2, 3, 4, 5)
    out = repeat_kv(x, 2)
    assert out.shape == (2, 6, 4, 5)
    for h in range(6):
        assert torch.equal(out[:, h], x[:, h // 2])  # query head h reads kv head h // n_rep
    assert torch.equal(out, torch.repeat_interleave(x, 2, dim=1))
    assert torch.equal(repeat_kv(x, 1), x)


def _gqa(num_heads, num_kv_heads, embed_dim=24, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    return GroupedQueryAttention(embed_dim, num_heads, num_kv_heads).to(dtype)


def test_gqa_shapes_and_parameter_savings():
    for kv_heads, kv_params in [(6, 2 * (24 * 24 + 24)), (2, 2 * (24 * 8 + 8)), (1, 2 * (24 * 4 + 4))]:
        layer = _gqa(6, kv_heads)
        assert layer.head_dim == 4 and layer.num_kv_heads == kv_heads
        assert sum(p.numel() for p in (*layer.W_k.parameters(), *layer.W_v.parameters())) == kv_params
    with pytest.raises(ValueError):
        GroupedQueryAttention(24, 6, 4)


@pytest.mark.parametrize("causal", [False, True])
def test_gqa_with_all_kv_heads_is_multi_head_attention(causal):
    gqa = _gqa(6, 6)
    mha = MultiHeadAttention(24, 6).to(torch.float64)
    mha.load_state_dict(gqa.state_dict())
    x = torch.randn(3, 7, 24, dtype=torch.float64)
    mask = causal_allowed(7, 7) if causal else None
    torch.testing.assert_close(gqa(x, causal=causal), mha(x, x, x, mask=mask)[0], **TOL[torch.float64])


def test_gqa_equals_mha_with_shared_kv_weights():
    """GQA with 2 kv heads = MHA whose key/value heads are copied group by group."""
    gqa = _gqa(6, 2)
    mha = MultiHeadAttention(24, 6).to(torch.float64)
    with torch.no_grad():
        for name in ("W_q", "W_o"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("W_k", "W_v"):
            src, dst = getattr(gqa, name), getattr(mha, name)
            dst.weight.copy_(src.weight.view(2, 1, 4, 24).expand(2, 3, 4, 24).reshape(24, 24))
            dst.bias.copy_(src.bias.view(2, 1, 4).expand(2, 3, 4).reshape(24))
    x = torch.randn(2, 5, 24, dtype=torch.float64)
    mask = torch.rand(2, 1, 5, 5) > 0.3
    torch.testing.assert_close(gqa(x, mask=mask), mha(x, x, x, mask=mask)[0], **TOL[torch.float64])


def test_gqa_matches_sdpa_enable_gqa():
    gqa = _gqa(6, 3, dtype=torch.float32)
    x = torch.randn(2, 9, 24)
    q = gqa.W_q(x).view(2, 9, 6, 4).transpose(1, 2)  # (B, H, L, d)
    k = gqa.W_k(x).view(2, 9, 3, 4).transpose(1, 2)  # (B, Hkv, L, d)
    v = gqa.W_v(x).view(2, 9, 3, 4).transpose(1, 2)
    fused = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    expected = gqa.W_o(fused.transpose(1, 2).reshape(2, 9, 24))
    torch.testing.assert_close(gqa(x, causal=True), expected, **TOL[torch.float32])


@pytest.mark.parametrize("num_kv_heads", [6, 2, 1])
def test_kv_cache_decoding_equals_full_causal_pass(num_kv_heads):
    layer = _gqa(6, num_kv_heads)
    x = torch.randn(2, 10, 24, dtype=torch.float64)
    full = layer(x, causal=True)
    cache = KVCache()
    assert len(cache) == 0
    steps = [layer(x[:, :3], causal=True, cache=cache)]  # a prompt of 3 tokens, then one at a time
    for t in range(3, 10):
        steps.append(layer(x[:, t:t + 1], causal=True, cache=cache))
        assert len(cache) == t + 1
    assert cache.keys.shape == (2, num_kv_heads, 10, 4) and cache.values.shape == (2, num_kv_heads, 10, 4)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL[torch.float64])


def test_kv_cache_update_returns_everything_cached():
    cache = KVCache()
    k1, v1 = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 6)
    k2, v2 = torch.randn(2, 3, 1, 5), torch.randn(2, 3, 1, 6)
    cache.update(k1, v1)
    keys, values = cache.update(k2, v2)
    assert torch.equal(keys, torch.cat([k1, k2], dim=2)) and torch.equal(values, torch.cat([v1, v2], dim=2))
    assert len(cache) == 5
