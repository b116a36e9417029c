"""Properties the chapters state in words, checked on generated inputs (issue 44: support that runs).

Each ``check_*`` function takes the implementation it states something about and asserts the
property over generated shapes, dtypes and scales (square and non-square, H > L, d = 1, leading
axes); ``test_*`` runs it on the reference solutions, and ``test_each_check_fails_on_its_negation``
runs it on a planted implementation that breaks the property, so that no check here passes
whatever the code does. book/claims.yml names these tests as the support of the sentences they
back (several sentences each).
"""
import numpy as np
import pytest

from solutions import attention, efficient, heads, masking

RNG = np.random.default_rng


def _shapes():
    """(lead, Lq, Lk, d_k, d_v): with and without leading axes, Lq != Lk, d_v != d_k, single sizes."""
    return [((), 1, 1, 1, 1), ((), 3, 5, 2, 4), ((2,), 4, 4, 3, 3), ((2, 3), 5, 2, 1, 6), ((1, 2), 2, 7, 8, 1)]


# ------------------------------------------------------------------ chapter 1: the softmax

def check_softmax_is_a_stable_distribution(softmax):
    """Chapter 1: the softmax returns weights of x's shape and float dtype, non-negative and summing
    to one along ``axis`` (any axis), unchanged when a number is subtracted from every logit, with
    no overflow for logits as large as 1e4 in float32 or float64."""
    rng = RNG(0)
    for dtype in (np.float32, np.float64):
        for shape, axis in (((5,), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1)):
            for scale in (1.0, 1e2, 1e4):
                x = (scale * rng.standard_normal(shape)).astype(dtype)
                p = softmax(x, axis=axis)
                assert p.shape == x.shape and p.dtype == dtype, (p.shape, p.dtype)
                assert np.isfinite(p).all() and (p >= 0).all(), (dtype, scale)
                assert np.allclose(p.sum(axis=axis), 1, atol=1e-5), (dtype, scale, axis)
                shifted = softmax((x - dtype(scale)).astype(dtype), axis=axis)
                assert np.allclose(shifted, p, atol=1e-5), "a shift of every logit changes the softmax"


def check_softmax_limits(softmax):
    """Chapter 1: equal scores give the plain mean (uniform weights); one score far above the rest
    gives nearly one-hot weights; doubling the scores squares every ratio p_i / p_j (sharper)."""
    rng = RNG(1)
    for n in (1, 2, 7):
        assert np.allclose(softmax(np.full(n, 3.0)), 1 / n)
    s = rng.standard_normal(6)
    s[2] += 50
    assert softmax(s)[2] > 1 - 1e-12
    s = rng.standard_normal(5)
    p, p2 = softmax(s), softmax(2 * s)
    assert np.allclose(p2[:, None] / p2[None, :], (p[:, None] / p[None, :]) ** 2)
    assert p2.max() > p.max()


def test_softmax_is_a_stable_distribution():
    check_softmax_is_a_stable_distribution(attention.softmax)


def test_softmax_limits():
    check_softmax_limits(attention.softmax)


def test_float_limits_of_exp():
    """Chapter 1: exp(1000) is larger than the largest float64 (inf, and inf / inf is nan); the
    limit is much closer than 1000 in float32 and float16; with c = max x every exponent is at most
    0, the largest term exactly 1 and the denominator at least 1."""
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isinf(np.exp(np.float64(1000))) and np.isnan(np.exp(np.float64(1000)) / np.exp(np.float64(1000)))
    limits = [np.log(np.finfo(t).max) for t in (np.float16, np.float32, np.float64)]
    assert limits == sorted(limits) and limits[-1] < 1000 and limits[1] < 100
    x = RNG(2).standard_normal((50, 9)) * 100
    e = np.exp(x - x.max(-1, keepdims=True))
    assert (e <= 1).all() and (e.max(-1) == 1).all() and (e.sum(-1) >= 1).all()


# ------------------------------------------------------------------ chapter 1: attention

def check_attention_shapes_and_average(sdpa):
    """Chapter 1: for (..., Lq, d_k) queries, (..., Lk, d_k) keys and (..., Lk, d_v) values the
    weights are (..., Lq, Lk), each row a distribution over the keys, and the output (..., Lq, d_v)
    is the weighted average of the value rows; nothing ties Lq to Lk nor d_v to d_k (cross-attention)."""
    rng = RNG(3)
    for lead, lq, lk, dk, dv in _shapes():
        q, k, v = (rng.standard_normal((*lead, n, d)) for n, d in ((lq, dk), (lk, dk), (lk, dv)))
        out, w = sdpa(q, k, v)
        assert w.shape == (*lead, lq, lk) and out.shape == (*lead, lq, dv), (w.shape, out.shape)
        assert np.allclose(w.sum(-1), 1) and (w >= 0).all()
        assert np.allclose(out, w @ v)
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(dk)
        assert np.allclose(w, attention.softmax(scores)), "weights = softmax(QK^T / sqrt(d_k)) over the keys"


def check_attention_permutations(sdpa):
    """Chapter 1: nothing refers to positions: shuffling keys and values together leaves every
    output the same; shuffling the queries shuffles the outputs with them."""
    rng = RNG(4)
    for lead, lq, lk, dk, dv in _shapes():
        q, k, v = (rng.standard_normal((*lead, n, d)) for n, d in ((lq, dk), (lk, dk), (lk, dv)))
        out, _ = sdpa(q, k, v)
        pk, pq = rng.permutation(lk), rng.permutation(lq)
        assert np.allclose(sdpa(q, k[..., pk, :], v[..., pk, :])[0], out)
        assert np.allclose(sdpa(q[..., pq, :], k, v)[0], out[..., pq, :])


def test_attention_shapes_and_average():
    check_attention_shapes_and_average(attention.scaled_dot_product_attention)


def test_attention_permutations():
    check_attention_permutations(attention.scaled_dot_product_attention)


def test_einsum_attention_is_the_same_function():
    """Chapter 1: the einsum version computes the same as the matmul version."""
    rng = RNG(5)
    for lead, lq, lk, dk, dv in _shapes():
        q, k, v = (rng.standard_normal((*lead, n, d)) for n, d in ((lq, dk), (lk, dk), (lk, dv)))
        w = attention.softmax(np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(dk))
        assert np.allclose(np.einsum("...qk,...kv->...qv", w, v), attention.scaled_dot_product_attention(q, k, v)[0])


def check_softmax_backward(softmax):
    """Chapter 1: dL/ds_j = p_j (g_j - g.p), the Jacobian p_i (delta_ij - p_j) applied to g, one dot
    product per row; and a hard lookup (argmax) passes no gradient: it does not change when a score
    changes a little."""
    rng = RNG(6)
    for n in (1, 2, 5, 16):
        s, g = rng.standard_normal(n), rng.standard_normal(n)
        p = softmax(s)
        jacobian = p[:, None] * (np.eye(n) - p[None, :])
        fast = p * (g - g @ p)
        assert np.allclose(jacobian.T @ g, fast)
        eps = 1e-6
        numeric = np.array([(g @ softmax(s + eps * np.eye(n)[j]) - g @ softmax(s - eps * np.eye(n)[j])) / (2 * eps)
                            for j in range(n)])
        assert np.allclose(numeric, fast, atol=1e-6)
        assert np.argmax(s + 1e-9 * rng.standard_normal(n)) == np.argmax(s)


def test_softmax_backward():
    check_softmax_backward(attention.softmax)


def test_numpy_scalar_promotion():
    """Chapter 1: NumPy 2 treats a NumPy float64 scalar as a float64 value (float32 scores become
    float64), while a Python float adapts to the array."""
    scores = np.ones(3, dtype=np.float32)
    assert (scores / np.sqrt(np.float64(4))).dtype == np.float64
    assert (scores / 2.0).dtype == np.float32


# ------------------------------------------------------------------ chapter 2: masks

def check_masked_softmax(masked_softmax):
    """Chapter 2: masked entries get exactly zero weight, each row with an allowed key sums to one
    over its allowed keys, and a fully masked row is all zeros (no NaN), for any fill of the scores."""
    rng = RNG(7)
    for shape in ((1, 1), (3, 5), (2, 4, 4), (2, 3, 1, 6)):
        scores = rng.standard_normal(shape) * 100
        mask = rng.random(shape) < 0.6
        mask[..., 0, :] = False  # a fully masked row
        p = masked_softmax(scores, mask)
        assert np.isfinite(p).all() and (p[~mask] == 0).all()
        rows = mask.any(-1)
        assert np.allclose(p.sum(-1)[rows], 1) and (p.sum(-1)[~rows] == 0).all()


def test_masked_softmax():
    check_masked_softmax(masking.masked_softmax)


def check_causal_mask_end_aligned(causal_mask):
    """Chapter 2: query i of a full pass sees i + 1 keys; causal_mask(n, L) is the last n rows of
    causal_mask(L), for n = 1..L (a cache step's new queries are end-aligned)."""
    for length in (1, 2, 5, 9):
        full = np.asarray(causal_mask(length, length))
        assert (full.sum(-1) == np.arange(1, length + 1)).all()
        for n in range(1, length + 1):
            assert np.array_equal(np.asarray(causal_mask(n, length)), full[-n:]), (n, length)


def test_causal_mask_end_aligned():
    check_causal_mask_end_aligned(masking.causal_mask)


# ------------------------------------------------------------------ chapter 3: heads

def check_split_heads(split_heads):
    """Chapter 3: split_heads turns (..., L, H*d) into (..., H, L, d); head h holds features
    h*d to (h+1)*d of every position, in every shape (H > L and d = 1 included), keeping the dtype."""
    for lead in ((), (2,), (2, 3)):
        for length, h, d in ((1, 1, 1), (5, 3, 2), (2, 4, 1), (3, 8, 2), (10, 8, 8)):
            x = np.arange(np.prod(lead, dtype=int) * length * h * d, dtype=np.float32).reshape(*lead, length, h * d)
            out = split_heads(x, h)
            assert out.shape == (*lead, h, length, d) and out.dtype == x.dtype
            for head in range(h):
                assert np.array_equal(out[..., head, :, :], x[..., head * d:(head + 1) * d])


def test_split_heads():
    check_split_heads(heads.split_heads)
    for lead in ((), (2,)):
        x = np.arange(np.prod(lead, dtype=int) * 5 * 12, dtype=float).reshape(*lead, 5, 12)
        assert np.array_equal(heads.merge_heads(heads.split_heads(x, 3)), x)


# ------------------------------------------------------------------ the checks can fail

def _naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


PLANTED = {
    "softmax without the shift": lambda: check_softmax_is_a_stable_distribution(_naive_softmax),
    "softmax over the wrong axis": lambda: check_softmax_is_a_stable_distribution(
        lambda x, axis=-1: attention.softmax(x, axis=0)),
    "softmax of the scores halved": lambda: check_softmax_limits(lambda x, axis=-1: attention.softmax(x / 2 + 1, axis)),
    "attention without the scale": lambda: check_attention_shapes_and_average(
        lambda q, k, v: attention.scaled_dot_product_attention(q * np.sqrt(q.shape[-1]), k, v)),
    "attention with a position bias": lambda: check_attention_permutations(
        lambda q, k, v: attention.scaled_dot_product_attention(q + np.arange(q.shape[-2])[:, None], k, v)),
    "backward without the dot product": lambda: check_softmax_backward(lambda s, axis=-1: np.exp(s) / np.exp(s).sum() ** 0.5),
    "masked softmax filling -inf": lambda: check_masked_softmax(
        lambda s, m: _naive_softmax(np.where(m, s - s.max(), -np.inf))),
    "causal mask top-left": lambda: check_causal_mask_end_aligned(lambda n, length: np.tril(np.ones((n, length), bool))),
    "split by reshape alone": lambda: check_split_heads(lambda x, h: x.reshape(*x.shape[:-2], h, x.shape[-2], -1)),
}



def check_fill_values_fail_only_on_fully_masked_rows(fill_softmax):
    """Chapter 2's headings: filling with -inf gives NaN in a fully masked row, and exact weights in
    ordinary rows; filling with a large negative number gives a fully masked row a uniform average
    (and ordinary rows their exact weights)."""
    rng = RNG(8)
    scores = rng.standard_normal((3, 4))
    mask = np.array([[True, True, False, False], [False] * 4, [True, False, True, True]])
    for fill in (-np.inf, -1e9):
        with np.errstate(invalid="ignore"):
            p = fill_softmax(np.where(mask, scores, fill))
        ordinary = mask.any(-1)
        assert np.allclose(p[ordinary], masking.masked_softmax(scores, mask)[ordinary])
        if fill == -np.inf:
            assert np.isnan(p[~ordinary]).all()
        else:
            assert np.allclose(p[~ordinary], 1 / mask.shape[-1])


def test_fill_values_fail_only_on_fully_masked_rows():
    check_fill_values_fail_only_on_fully_masked_rows(attention.softmax)


PLANTED["fills that never fail"] = lambda: check_fill_values_fail_only_on_fully_masked_rows(
    lambda s: np.nan_to_num(attention.softmax(np.nan_to_num(s, neginf=-1e300))))


# ------------------------------------------------------------------ chapter 3: contracts of split and merge

def check_split_and_merge_contracts(split_heads, merge_heads):
    """Chapter 3: both accept any number of leading axes, keep the dtype and leave x unmodified;
    split_heads raises ValueError when num_heads does not divide the features; merge_heads is its
    inverse, position i getting [head_0[i], ..., head_{H-1}[i]]; the round trip is exact."""
    rng = RNG(9)
    for lead in ((), (3,), (2, 2)):
        for length, h, d in ((1, 1, 1), (5, 3, 4), (2, 6, 1), (4, 2, 3)):
            for dtype in (np.float32, np.float64):
                x = rng.standard_normal((*lead, length, h * d)).astype(dtype)
                before = x.copy()
                split = split_heads(x, h)
                merged = merge_heads(split)
                assert np.array_equal(x, before), "split_heads modified x"
                assert merged.dtype == dtype and np.array_equal(merged, x), "the round trip is not exact"
                for i in range(length):
                    assert np.array_equal(merged[..., i, :], np.concatenate([split[..., j, i, :] for j in range(h)], -1))
    for features, h in ((10, 3), (7, 2), (4, 8)):
        with pytest.raises(ValueError):
            split_heads(np.zeros((2, 3, features)), h)


def test_split_and_merge_contracts():
    check_split_and_merge_contracts(heads.split_heads, heads.merge_heads)


def test_a_plain_reshape_has_the_entries_it_needs():
    """Chapter 3: (B, L, H*d) and (B, H, L, d) hold the same number of entries, so reshape takes
    one to the other directly, and only moves entries in memory order (never computes)."""
    x = np.arange(2 * 5 * 12, dtype=float).reshape(2, 5, 12)
    plain = x.reshape(2, 3, 5, 4)
    assert plain.size == x.size and np.array_equal(np.sort(plain.ravel()), x.ravel()) and np.array_equal(plain.ravel(), x.ravel())
    # Two wrong functions undo each other: the plain reshape back round-trips exactly, with the right
    # shapes, so only a comparison with the expected head slices tells it from split_heads.
    assert np.array_equal(plain.reshape(x.shape), x) and plain.shape == heads.split_heads(x, 3).shape
    assert not np.array_equal(plain, heads.split_heads(x, 3))
    # L = 4, H = 2, d = 3: the plain "head 0" holds positions 0 and 1 only, each twice.
    small = np.repeat(np.arange(4.0)[:, None], 6, axis=1)  # entry = its position
    assert np.array_equal(small.reshape(2, 4, 3)[0, :, 0], [0, 0, 1, 1])


# ------------------------------------------------------------------ chapter 4: the layer

def _params(rng, e_in, h, dk, dv, e_out, bias=True, kdim=None, vdim=None):
    p = {"W_q": rng.standard_normal((e_in, h * dk)), "W_k": rng.standard_normal((kdim or e_in, h * dk)),
         "W_v": rng.standard_normal((vdim or e_in, h * dv)), "W_o": rng.standard_normal((h * dv, e_out))}
    if bias:
        p |= {"b_q": rng.standard_normal(h * dk), "b_k": rng.standard_normal(h * dk),
              "b_v": rng.standard_normal(h * dv), "b_o": rng.standard_normal(e_out)}
    return p


def check_layer_is_heads_concatenated(mha):
    """Chapter 4: the layer computes each head with its own column blocks of W_q, W_k, W_v (one large
    matrix product replaces H small ones, one batched computation), concatenates the heads and mixes
    them with one W_o; the concatenation times W_o equals the sum over heads of each head's output
    times its row block of W_o."""
    rng = RNG(10)
    for b, lq, lk, e, h, dk, dv, e_out in ((2, 3, 5, 6, 2, 3, 2, 4), (1, 4, 4, 8, 4, 1, 3, 5), (2, 2, 3, 6, 6, 2, 2, 6)):
        q, kv = rng.standard_normal((b, lq, e)), rng.standard_normal((b, lk, e))
        p = _params(rng, e, h, dk, dv, e_out)
        out = mha(q, kv, kv, p, h)
        out = out[0] if isinstance(out, tuple) else out
        per_head, summed = [], 0
        for j in range(h):
            cols_k, cols_v = slice(j * dk, (j + 1) * dk), slice(j * dv, (j + 1) * dv)
            o, _ = attention.scaled_dot_product_attention(q @ p["W_q"][:, cols_k] + p["b_q"][cols_k],
                                                          kv @ p["W_k"][:, cols_k] + p["b_k"][cols_k],
                                                          kv @ p["W_v"][:, cols_v] + p["b_v"][cols_v])
            per_head.append(o)
            summed = summed + o @ p["W_o"][cols_v]
        concatenated = np.concatenate(per_head, -1) @ p["W_o"] + p["b_o"]
        assert np.allclose(out, concatenated) and np.allclose(concatenated, summed + p["b_o"])


def test_layer_is_heads_concatenated():
    from solutions import layer
    check_layer_is_heads_concatenated(layer.multi_head_attention)


def check_parameter_count(parameter_count):
    """Chapter 4: three projections from query_dim to num_heads * key_dim (the values to num_heads *
    value_dim), W_o from num_heads * value_dim to output_dim, a bias each when bias=True; at a fixed
    key_dim the count grows linearly in H; at key_dim = E / H it is the same for every H."""
    for e, h, dk, dv, e_out, bias in ((512, 8, 64, None, None, True), (12, 3, 5, 7, 9, True), (6, 2, 4, 4, 6, False)):
        dv_, e_out_ = dv or dk, e_out or e
        expected = 2 * (e * h * dk) + e * h * dv_ + h * dv_ * e_out_
        if bias:
            expected += 2 * h * dk + h * dv_ + e_out_
        assert parameter_count(e, h, dk, dv, e_out, bias) == expected, (e, h, dk)
    counts = [parameter_count(64, h, 16) for h in (1, 2, 3, 4)]
    assert len({b - a for a, b in zip(counts, counts[1:])}) == 1 and counts[1] > counts[0]
    assert len({parameter_count(64, h, 64 // h) for h in (1, 2, 4, 8, 16)}) == 1


def test_parameter_count():
    from solutions import layer
    check_parameter_count(layer.parameter_count)


def test_the_module_s_parts_and_pytorch_s_packing():
    """Chapter 4: the module has four nn.Linear named W_q (E -> E), W_k (kdim -> E), W_v (vdim -> E),
    W_o, head_dim = E // H, a ValueError when H does not divide E; dropout 0 makes training mode the
    same function. PyTorch packs in_proj_weight (3E, E) when kdim == vdim == E, separate otherwise."""
    import torch
    from solutions import layer
    m = layer.MultiHeadAttention(12, 3, kdim=5, vdim=7)
    assert [type(getattr(m, n)).__name__ for n in ("W_q", "W_k", "W_v", "W_o")] == ["Linear"] * 4
    assert (m.W_k.in_features, m.W_v.in_features, m.head_dim) == (5, 7, 4)
    with pytest.raises(ValueError):
        layer.MultiHeadAttention(10, 3)
    torch.manual_seed(0)
    m = layer.MultiHeadAttention(12, 3)
    x = torch.randn(2, 4, 12)
    with torch.no_grad():
        assert torch.equal(m.train()(x, x, x)[0], m.eval()(x, x, x)[0])
    packed, separate = torch.nn.MultiheadAttention(12, 3), torch.nn.MultiheadAttention(12, 3, kdim=5, vdim=7)
    assert packed.in_proj_weight.shape == (36, 12) and packed.q_proj_weight is None
    assert separate.in_proj_weight is None and separate.k_proj_weight.shape == (12, 5)


def test_unit_normal_over_fan_in_keeps_unit_variance():
    """Chapter 4's comment: weights drawn N(0, 1/fan_in) give unit-variance inputs unit-variance
    projections; a softmax over scores that are all -inf computes 0/0."""
    rng = RNG(11)
    for fan_in in (16, 256):
        x, w = rng.standard_normal((4000, fan_in)), rng.standard_normal((fan_in, 64)) / np.sqrt(fan_in)
        assert abs((x @ w).var() - 1) < 0.1
    with np.errstate(invalid="ignore"):
        row = np.full(3, -np.inf)
        assert np.isnan(np.exp(row - row.max()) / np.exp(row - row.max()).sum()).all()


PLANTED |= {
    "merge without the transpose": lambda: check_split_and_merge_contracts(
        heads.split_heads, lambda x: np.asarray(x).reshape(*np.shape(x)[:-3], np.shape(x)[-2], -1)),
    "layer without W_o": lambda: check_layer_is_heads_concatenated(
        lambda q, k, v, p, h: __import__("solutions.layer", fromlist=["x"]).multi_head_attention(
            q, k, v, {**p, "W_o": np.eye(p["W_o"].shape[0], p["W_o"].shape[1])}, h)),
    "parameter count without biases": lambda: check_parameter_count(
        lambda *a, **k: __import__("solutions.layer", fromlist=["x"]).parameter_count(*a[:5], bias=False)),
}


# ------------------------------------------------------------------ chapter 8: positions

def check_sinusoids(positions):
    """Chapter 8: features 2i and 2i+1 are the sine and cosine of p times base^(-2i/d); the encoding
    of p + k is one fixed linear function (a rotation per pair) of that of p, for every p; with an
    offset the rows are those of the longer table."""
    import torch
    for length, dim, base in ((12, 8, 10000.0), (30, 32, 10000.0), (5, 2, 100.0)):
        pe = positions(length, dim, base=base).double()
        freq = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        angle = torch.arange(length, dtype=torch.float64)[:, None] * freq
        assert torch.allclose(pe[:, 0::2], angle.sin(), atol=1e-6) and torch.allclose(pe[:, 1::2], angle.cos(), atol=1e-6)
        k = 3
        for p in range(length - k):
            s, c = (k * freq).sin(), (k * freq).cos()
            rotated_sin = pe[p, 0::2] * c + pe[p, 1::2] * s
            assert torch.allclose(pe[p + k, 0::2], rotated_sin, atol=1e-6)
        assert torch.allclose(positions(4, dim, offset=7, base=base).double(), pe[7:11] if length >= 11 else
                              positions(11, dim, base=base).double()[7:11], atol=1e-6)


def test_sinusoids():
    from solutions import language_model
    check_sinusoids(language_model.sinusoidal_positions)


def check_rope(apply_rope):
    """Chapter 8: RoPE keeps lengths; scores of rotated queries and keys depend only on the
    difference of positions (a shift of the whole sequence leaves them unchanged); one token at
    offset t is row t of the whole sequence; the half-split and adjacent pairings are the same
    rotation of differently ordered features."""
    import torch
    torch.manual_seed(0)
    for d in (2, 8, 16):
        q, k = torch.randn(2, 10, d, dtype=torch.float64), torch.randn(2, 10, d, dtype=torch.float64)
        rq, rk = apply_rope(q), apply_rope(k)
        assert torch.allclose(rq.norm(dim=-1), q.norm(dim=-1))
        moved = apply_rope(q, offset=100) @ apply_rope(k, offset=100).transpose(-1, -2)
        assert torch.allclose(moved, rq @ rk.transpose(-1, -2), atol=1e-9)
        assert torch.allclose(apply_rope(q[:, 9:10], offset=9), rq[:, 9:10], atol=1e-12)
        half = d // 2
        adjacent_order = torch.stack([torch.arange(half), torch.arange(half) + half], -1).flatten()  # (0, h, 1, h+1, ...)
        x = q[..., adjacent_order]  # features ordered as adjacent pairs
        angles = torch.arange(10, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        a, b = x[..., 0::2], x[..., 1::2]
        adjacent = torch.stack([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], -1).flatten(-2)
        assert torch.allclose(adjacent, rq[..., adjacent_order], atol=1e-9)


def test_rope():
    from solutions import language_model
    check_rope(language_model.apply_rope)


def check_induction_score(score):
    """Chapter 8: the induction score is the weight of query i on key i - P + 1, averaged over
    i = P .. L - 1; a ValueError unless 1 <= P < L."""
    import torch
    torch.manual_seed(1)
    for length, period in ((10, 3), (24, 12), (5, 1)):
        w = torch.softmax(torch.randn(2, 3, length, length), -1)
        expected = torch.stack([w[..., i, i - period + 1] for i in range(period, length)], -1).mean(-1)
        assert torch.allclose(score(w, period), expected)
    for bad in (0, 10):
        with pytest.raises(ValueError):
            score(torch.zeros(1, 10, 10), bad)


def test_induction_score():
    from solutions import language_model
    check_induction_score(language_model.induction_score)


# ------------------------------------------------------------------ chapter 7: grouped heads and the cache

def check_repeat_kv(repeat_kv):
    """Chapter 7: each key/value head serves H / H_kv consecutive query heads (repeat_interleave,
    not repeat); one key/value head per query head is multi-head attention (n_rep = 1: unchanged)."""
    import torch
    x = torch.randn(2, 3, 5, 4)
    for n in (1, 2, 4):
        assert torch.equal(repeat_kv(x, n), x.repeat_interleave(n, dim=1))


def test_repeat_kv():
    check_repeat_kv(efficient.repeat_kv)


def check_cache_equals_full_pass(layer_cls, cache_cls):
    """Chapter 7: incremental decoding with a KV cache (prompt, then one token at a time, the new
    queries' mask end-aligned) equals the full causal pass, at every H_kv."""
    import torch
    torch.manual_seed(2)
    for heads_, kv in ((4, 4), (4, 2), (4, 1)):
        layer_ = layer_cls(16, heads_, kv).double().eval()
        x = torch.randn(2, 9, 16, dtype=torch.float64)
        with torch.no_grad():
            full = layer_(x, causal=True)
            cache = cache_cls()
            steps = [layer_(x[:, :4], causal=True, cache=cache)]
            steps += [layer_(x[:, t:t + 1], causal=True, cache=cache) for t in range(4, 9)]
        assert torch.allclose(torch.cat(steps, 1), full, atol=1e-10), (heads_, kv)
        assert len(cache) == 9


def test_cache_equals_full_pass():
    check_cache_equals_full_pass(efficient.GroupedQueryAttention, efficient.KVCache)


PLANTED |= {
    "sinusoids with the pairs swapped": lambda: check_sinusoids(
        lambda length, dim, offset=0, base=10000.0: __import__("solutions.language_model", fromlist=["x"])
        .sinusoidal_positions(length, dim, offset, base).flip(-1)),
    "rope that ignores the offset": lambda: check_rope(
        lambda x, offset=0, base=10000.0: __import__("solutions.language_model", fromlist=["x"]).apply_rope(x, 0, base)),
    "induction score one key off": lambda: check_induction_score(
        lambda w, p: __import__("solutions.language_model", fromlist=["x"]).induction_score(w, p + 1)
        if p + 1 < w.shape[-1] else __import__("solutions.language_model", fromlist=["x"]).induction_score(w, p)),
    "repeat instead of repeat_interleave": lambda: check_repeat_kv(lambda x, n: x.repeat(1, n, 1, 1)),
    "a cache that forgets the prompt": lambda: check_cache_equals_full_pass(efficient.GroupedQueryAttention, _ForgetfulCache),
}


class _ForgetfulCache(efficient.KVCache):
    def update(self, k, v):
        self.keys = self.values = None
        return super().update(k, v)


# ------------------------------------------------------------------ chapter 5: entropy

def check_attention_entropy(entropy):
    """Chapter 5: the entropy of a row, -sum a log a with 0 log 0 = 0, is 0 for a one-hot row and
    for a fully masked (all-zero) row, log n for a row spread evenly over n keys (so at most the log
    of the allowed keys under a mask, log Lk without), with no NaN; one number per query."""
    rng = RNG(12)
    for lk in (1, 4, 13):
        assert np.isclose(entropy(np.eye(lk)[:1]), 0).all()
        for n in range(1, lk + 1):
            row = np.zeros(lk)
            row[rng.choice(lk, n, replace=False)] = 1 / n
            assert np.isclose(entropy(row[None]), np.log(n)).all()
        w = rng.random((2, 3, 5, lk))
        w /= w.sum(-1, keepdims=True)
        h = entropy(w)
        assert h.shape == (2, 3, 5) and np.isfinite(h).all() and (h >= -1e-12).all() and (h <= np.log(lk) + 1e-12).all()
    assert entropy(np.zeros((1, 6))).tolist() == [0.0]


def test_attention_entropy():
    from solutions import analysis
    check_attention_entropy(analysis.attention_entropy)


PLANTED["entropy multiplying before the fix"] = lambda: check_attention_entropy(lambda w: -(np.asarray(w) * np.log(w)).sum(-1))


# ------------------------------------------------------------------ chapter 2: padding and where to mask

def check_padding_mask(padding_mask):
    """Chapter 2: key j of sequence b may be attended to iff j < valid_lens[b]; (B,) lengths give a
    (B, 1, Lk) mask that broadcasts against (B, Lq, Lk) scores, (B, Lq) lengths one per query; a
    valid_lens of any other rank is refused; reversing the key axis gives the left-padding mask."""
    lens = np.array([4, 2, 5, 0])
    m = np.asarray(padding_mask(lens, 5))
    assert m.shape == (4, 1, 5) and np.array_equal(m[:, 0], np.arange(5)[None] < lens[:, None])
    assert np.broadcast_shapes(m.shape, (4, 3, 5)) == (4, 3, 5)
    per_query = np.array([[1, 2, 3], [3, 3, 0]])
    mq = np.asarray(padding_mask(per_query, 4))
    assert mq.shape == (2, 3, 4) and np.array_equal(mq.sum(-1), per_query)
    with pytest.raises(ValueError):
        padding_mask(np.zeros((2, 2, 2), int), 3)
    left = m[..., ::-1]
    assert np.array_equal(left[:, 0].sum(-1), lens) and all(not row[:5 - n].any() for row, n in zip(left[:, 0], lens))


def test_padding_mask():
    check_padding_mask(masking.padding_mask)


def check_where_to_mask(masked_softmax):
    """Chapter 2: zeroing after the softmax leaves rows that no longer sum to one; renormalising
    after it leaks the masked key (the allowed weights move when only its score changes); masking
    before the softmax neither depends on the masked scores nor breaks on them; a left-padded short
    sequence under a causal mask has first queries with nothing to look at; combining padding and
    causal masks is their AND."""
    scores = np.array([1.0, 2.0, 0.5, 3.0])
    mask = np.array([True, True, True, False])
    after = attention.softmax(scores) * mask
    assert not np.isclose(after.sum(), 1)
    changed = scores.copy()
    changed[3] = -5.0
    assert not np.allclose(after, attention.softmax(changed) * mask), "zeroing after the softmax leaks the masked score"
    renorm = lambda s: attention.softmax(s) * mask / (attention.softmax(s) * mask).sum()  # noqa: E731
    assert np.allclose(renorm(scores), renorm(changed))  # exact arithmetic: equal; the leak is in the scale
    big = scores.copy()
    big[3] = 800.0
    with np.errstate(all="ignore"):
        assert not np.isfinite(renorm(big)).all()  # the masked score sets the scale: everything underflows
    assert np.allclose(masked_softmax(scores, mask), masked_softmax(big, mask))
    assert np.allclose(masked_softmax(scores, mask), masked_softmax(changed, mask))
    pad = masking.padding_mask(np.array([2]), 5)[..., ::-1]  # left padding, 2 real tokens at the end
    combined = pad & masking.causal_mask(5)
    assert not combined[0, :3].any(axis=-1).any() and combined[0, 3:].any(-1).all()


def test_where_to_mask():
    check_where_to_mask(masking.masked_softmax)


PLANTED |= {
    "padding mask one key too many": lambda: check_padding_mask(
        lambda v, n: masking.padding_mask(np.asarray(v) + 1, n)),
    "masked softmax that renormalises": lambda: check_where_to_mask(
        lambda s, m: attention.softmax(s) * m / (attention.softmax(s) * m).sum(-1, keepdims=True)),
}



def check_attention_with_a_mask(sdpa):
    """Chapter 2: with masked_softmax in place, scaled_dot_product_attention accepts a mask: the
    weights are the masked softmax of the scaled scores, zero on masked pairs, and a fully masked
    row gives zero weights and a zero output."""
    rng = RNG(13)
    for lead, lq, lk, dk, dv in _shapes():
        q, k, v = (rng.standard_normal((*lead, n, d)) for n, d in ((lq, dk), (lk, dk), (lk, dv)))
        mask = rng.random((*lead, lq, lk)) < 0.6
        mask[..., 0, :] = False
        out, w = sdpa(q, k, v, mask)
        assert (w[~mask] == 0).all() and (out[..., 0, :] == 0).all() and np.isfinite(out).all()
        assert np.allclose(w, masking.masked_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(dk), mask))


def test_attention_with_a_mask():
    check_attention_with_a_mask(attention.scaled_dot_product_attention)


def test_numpy_facts_the_masking_chapter_uses():
    """Chapter 2: np.tril aligns to the start (the newest of 2 queries against 6 keys sees 2 of
    them); np.where(mask, scores, -inf).max is the allowed maximum, -inf for a fully masked row."""
    assert np.tril(np.ones((2, 6))).sum(-1).tolist() == [1, 2]
    scores = np.array([[1.0, 5.0, 2.0], [3.0, 4.0, 0.0]])
    mask = np.array([[True, False, True], [False, False, False]])
    top = np.where(mask, scores, -np.inf).max(axis=-1, keepdims=True)
    assert top[0, 0] == 2.0 and top[1, 0] == -np.inf and np.isfinite(top).tolist() == [[True], [False]]


PLANTED["attention that ignores the mask"] = lambda: check_attention_with_a_mask(
    lambda q, k, v, mask=None: attention.scaled_dot_product_attention(q, k, v))


# Last in the file: every check planted above, whichever section added it.
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_check_fails_on_its_negation(name):
    with np.errstate(all="ignore"), pytest.raises(AssertionError):
        PLANTED[name]()
