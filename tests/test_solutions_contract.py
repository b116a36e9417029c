"""The reference solutions satisfy the exercise contract of CONTRACT.md (property tests)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from solutions import analysis, attention, heads, layer, masking

DTYPES = [np.float32, np.float64]
finite = st.floats(-50, 50, allow_nan=False, width=32)


def scores_and_mask(draw, dtype):
    b, lq, lk = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    scores = draw(arrays(dtype, (b, lq, lk), elements=finite))
    mask = draw(arrays(np.bool_, (b, lq, lk)))
    return scores, mask


@st.composite
def masked_inputs(draw):
    return scores_and_mask(draw, draw(st.sampled_from(DTYPES)))


@settings(max_examples=60, deadline=None)
@given(masked_inputs())
def test_masked_softmax_properties(inputs):
    scores, mask = inputs
    before = (scores.copy(), mask.copy())
    w = masking.masked_softmax(scores, mask)
    assert w.dtype == scores.dtype and w.shape == scores.shape
    assert np.all(w[~mask] == 0), "masked weights must be exactly zero"
    row_has_key = mask.any(-1)
    tol = 1e-5 if scores.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(w.sum(-1)[row_has_key], 1, atol=tol)
    assert np.all(w.sum(-1)[~row_has_key] == 0), "fully masked rows are all zero"
    assert np.isfinite(w).all()
    np.testing.assert_array_equal(scores, before[0])
    np.testing.assert_array_equal(mask, before[1])


@settings(max_examples=60, deadline=None)
@given(masked_inputs(), st.floats(-100, 100))
def test_masked_softmax_shift_invariance(inputs, shift):
    scores, mask = inputs
    shifted = (scores.astype(np.float64) + shift).astype(scores.dtype)
    tol = 1e-4 if scores.dtype == np.float32 else 1e-9  # float32 rounds the shifted logits
    np.testing.assert_allclose(masking.masked_softmax(shifted, mask), masking.masked_softmax(scores, mask), atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_no_overflow_and_dtype(dtype):
    x = np.array([[1e4, 0.0, -1e4], [1e4, 1e4, 1e4]], dtype=dtype)
    w = attention.softmax(x)
    assert w.dtype == dtype and np.isfinite(w).all()
    np.testing.assert_allclose(w, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_axis(axis):
    x = np.random.default_rng(0).normal(size=(3, 4, 5))
    np.testing.assert_allclose(attention.softmax(x, axis=axis).sum(axis), 1, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 8))
def test_causal_mask_rule(lq, extra):
    lk = lq + extra - 1
    m = masking.causal_mask(lq, lk)
    i, j = np.indices((lq, lk))
    np.testing.assert_array_equal(m, j <= i + (lk - lq))
    assert m[-1].all(), "the last query sees every key (end-aligned, as with a KV cache)"


def test_causal_mask_square_default():
    np.testing.assert_array_equal(masking.causal_mask(3), np.tril(np.ones((3, 3), bool)))


def test_padding_mask_shapes():
    m1 = masking.padding_mask(np.array([2, 0, 4]), 4)
    assert m1.shape == (3, 1, 4) and m1.dtype == bool
    np.testing.assert_array_equal(m1[:, 0], [[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]])
    m2 = masking.padding_mask(np.array([[1, 3], [0, 2]]), 3)
    assert m2.shape == (2, 2, 3)
    np.testing.assert_array_equal(m2[0], [[1, 0, 0], [1, 1, 1]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_fully_masked_row_is_zero(dtype):
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=s).astype(dtype) for s in [(2, 3, 4), (2, 5, 4), (2, 5, 6)])
    mask = masking.padding_mask(np.array([0, 3]), 5)
    out, w = attention.scaled_dot_product_attention(q, k, v, mask)
    assert out.dtype == dtype and w.dtype == dtype
    assert out.shape == (2, 3, 6) and w.shape == (2, 3, 5)
    assert np.all(out[0] == 0) and np.all(w[0] == 0)
    assert np.all(w[1, :, 3:] == 0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5), st.integers(1, 6))
def test_split_merge_roundtrip(b, h, length, d):
    x = np.arange(b * length * h * d, dtype=np.float64).reshape(b, length, h * d)
    s = heads.split_heads(x, h)
    assert s.shape == (b, h, length, d)
    for head in range(h):
        np.testing.assert_array_equal(s[:, head], x[..., head * d:(head + 1) * d])
    np.testing.assert_array_equal(heads.merge_heads(s), x)


def test_split_heads_rejects_indivisible():
    with pytest.raises(ValueError, match="heads"):
        heads.split_heads(np.zeros((1, 2, 7)), 2)


def test_parameter_count_keras_example():
    assert layer.parameter_count(100, 4, 128) == 206_436
    assert layer.parameter_count(100, 4, 128, bias=False) == 4 * 100 * 512
    assert layer.parameter_count(512, 8, 64) == 4 * (512 * 512 + 512)  # Vaswani base, biases


def test_multi_head_attention_is_per_head_attention():
    """The layer equals a loop over heads of single-head attention on column blocks."""
    rng = np.random.default_rng(2)
    B, Lq, Lk, Eq, Ek, Ev, H, dk, dv, Eo = 2, 3, 5, 7, 6, 4, 2, 3, 5, 9
    p = {"W_q": rng.normal(size=(Eq, H * dk)), "W_k": rng.normal(size=(Ek, H * dk)),
         "W_v": rng.normal(size=(Ev, H * dv)), "W_o": rng.normal(size=(H * dv, Eo)), "b_o": rng.normal(size=Eo)}
    q, k, v = rng.normal(size=(B, Lq, Eq)), rng.normal(size=(B, Lk, Ek)), rng.normal(size=(B, Lk, Ev))
    mask = masking.padding_mask(np.array([5, 2]), Lk)
    out, w = layer.multi_head_attention(q, k, v, p, H, mask)
    assert out.shape == (B, Lq, Eo) and w.shape == (B, H, Lq, Lk)
    per_head = []
    for h in range(H):
        cols_k, cols_v = slice(h * dk, (h + 1) * dk), slice(h * dv, (h + 1) * dv)
        o, _ = attention.scaled_dot_product_attention(q @ p["W_q"][:, cols_k], k @ p["W_k"][:, cols_k],
                                                      v @ p["W_v"][:, cols_v], mask)
        per_head.append(o)
    np.testing.assert_allclose(out, np.concatenate(per_head, -1) @ p["W_o"] + p["b_o"], atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_entropy(dtype):
    w = np.array([[1, 0, 0, 0], [0.25] * 4, [0, 0, 0, 0]], dtype=dtype)
    e = analysis.attention_entropy(w)
    assert e.dtype == dtype
    np.testing.assert_allclose(e, [0, np.log(4), 0], rtol=1e-6)
