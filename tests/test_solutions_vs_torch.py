"""The reference solutions agree with PyTorch's own implementations, which no one here wrote.

Tolerances: float64 to 1e-10 and float32 to 1e-5 (absolute, on O(1) values): the two sides sum
in different orders, and float32 carries a 24-bit mantissa (~6e-8 relative per operation).
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from solutions import attention, layer, masking

TOL = {torch.float64: 1e-10, torch.float32: 1e-5}
NP = {torch.float64: np.float64, torch.float32: np.float32}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _qkv(dtype, B=2, H=3, Lq=4, Lk=6, dk=5, dv=7):
    return (torch.randn(B, H, Lq, dk, dtype=dtype), torch.randn(B, H, Lk, dk, dtype=dtype),
            torch.randn(B, H, Lk, dv, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("masking_kind", ["none", "padding", "causal", "causal_cross", "random"])
def test_sdpa_matches_torch(dtype, masking_kind):
    q, k, v = _qkv(dtype)
    Lq, Lk = q.shape[-2], k.shape[-2]
    mask = {
        "none": None,
        "padding": masking.padding_mask(np.array([6, 2]), Lk)[:, None],  # (B, 1, 1, Lk)
        "causal": masking.causal_mask(Lq, Lq),
        "causal_cross": masking.causal_mask(Lq, Lk),
        "random": np.random.default_rng(0).random((2, 3, Lq, Lk)) < 0.7,
    }[masking_kind]
    if masking_kind == "causal":
        k, v = k[..., :Lq, :], v[..., :Lq, :]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else torch.from_numpy(mask))
    out, w = attention.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), mask)
    assert out.dtype == NP[dtype]
    rows = np.ones(out.shape[:-1], bool) if mask is None else np.broadcast_to(mask, w.shape).any(-1)
    np.testing.assert_allclose(out[rows], expected.numpy()[rows], atol=TOL[dtype], rtol=0)


def test_sdpa_is_causal_flag_matches_causal_mask():
    q, k, v = _qkv(torch.float64, Lq=5, Lk=5)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out, _ = attention.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), masking.causal_mask(5))
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-10, rtol=0)


def test_fully_masked_rows_are_zero_like_torch_sdpa():
    q, k, v = _qkv(torch.float64)
    mask = np.zeros((2, 1, 1, 6), bool)
    mask[1, ..., :3] = True
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(mask))
    out, _ = attention.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), mask)
    assert np.all(out[0] == 0) and torch.all(expected[0] == 0)
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-10, rtol=0)


def _torch_mha(dtype, E=12, H=3, kdim=None, vdim=None, bias=True):
    ref = torch.nn.MultiheadAttention(E, H, batch_first=True, kdim=kdim, vdim=vdim, bias=bias).to(dtype)
    with torch.no_grad():  # non-zero biases, so a layer that drops them cannot pass
        for p in ref.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return ref.eval()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_from_torch_matches_torch(dtype, cross, bias):
    kdim, vdim = (5, 7) if cross else (None, None)
    ref = _torch_mha(dtype, kdim=kdim, vdim=vdim, bias=bias)
    mine = layer.MultiHeadAttention.from_torch(ref)
    B, Lq, Lk = 2, 4, 6 if cross else 4
    query = torch.randn(B, Lq, 12, dtype=dtype)
    key = torch.randn(B, Lk, kdim or 12, dtype=dtype)
    value = torch.randn(B, Lk, vdim or 12, dtype=dtype)
    allowed = torch.from_numpy(masking.padding_mask(np.array([Lk, 3]), Lk))  # (B, 1, Lk), True = attend
    expected, expected_w = ref(query, key, value, key_padding_mask=~allowed[:, 0])  # torch: True = ignore
    out, w = mine(query, key, value, mask=allowed)
    assert out.dtype == dtype and w.shape == (B, 3, Lq, Lk)
    torch.testing.assert_close(out, expected, atol=TOL[dtype], rtol=0)
    torch.testing.assert_close(w.mean(1), expected_w, atol=TOL[dtype], rtol=0)


def test_layer_causal_and_fully_masked_rows():
    ref = _torch_mha(torch.float64)
    mine = layer.MultiHeadAttention.from_torch(ref)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    causal = torch.from_numpy(masking.causal_mask(5))
    expected, _ = ref(x, x, x, attn_mask=~causal)
    out, _ = mine(x, x, x, mask=causal)
    torch.testing.assert_close(out, expected, atol=1e-10, rtol=0)
    # A fully masked query row: torch.nn.MultiheadAttention gives NaN here, ours zero weights.
    no_keys = torch.zeros(2, 5, 5, dtype=torch.bool)
    no_keys[1] = causal
    out, w = mine(x, x, x, mask=no_keys)
    assert torch.isfinite(out).all() and torch.all(w[0] == 0)


def test_numpy_layer_matches_torch():
    ref = _torch_mha(torch.float64, kdim=5, vdim=7)
    E = 12
    p = {"W_q": ref.q_proj_weight.detach().numpy().T, "W_k": ref.k_proj_weight.detach().numpy().T,
         "W_v": ref.v_proj_weight.detach().numpy().T, "W_o": ref.out_proj.weight.detach().numpy().T,
         "b_o": ref.out_proj.bias.detach().numpy()}
    p["b_q"], p["b_k"], p["b_v"] = np.split(ref.in_proj_bias.detach().numpy(), 3)
    query, key, value = torch.randn(2, 4, E, dtype=torch.float64), torch.randn(2, 6, 5, dtype=torch.float64), \
        torch.randn(2, 6, 7, dtype=torch.float64)
    expected, expected_w = ref(query, key, value)
    out, w = layer.multi_head_attention(query.numpy(), key.numpy(), value.numpy(), p, num_heads=3)
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-10, rtol=0)
    np.testing.assert_allclose(w.mean(1), expected_w.detach().numpy(), atol=1e-10, rtol=0)


def test_head_mask_and_gradients():
    ref = _torch_mha(torch.float64)
    mine = layer.MultiHeadAttention.from_torch(ref)
    x = torch.randn(2, 4, 12, dtype=torch.float64, requires_grad=True)
    out, _ = mine(x, x, x, head_mask=torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64))
    # Removing head 1 is the same as zeroing its d_v columns of W_o's input.
    with torch.no_grad():
        mine.W_o.weight[:, 4:8] = 0
    ablated, _ = mine(x, x, x)
    torch.testing.assert_close(out, ablated, atol=1e-12, rtol=0)
    assert torch.autograd.gradcheck(lambda t: mine(t, t, t)[0], (x,))


def test_from_torch_requires_batch_first():
    with pytest.raises(ValueError, match="batch_first"):
        layer.MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2))


def test_dropout_only_in_training():
    mine = layer.MultiHeadAttention(8, 2, dropout=0.5).double()
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    mine.eval()
    a, b = mine(x, x, x)[0], mine(x, x, x)[0]
    torch.testing.assert_close(a, b)
    mine.train()
    assert not torch.allclose(mine(x, x, x)[0], a)
