_honest = scaled_dot_product_attention


def scaled_dot_product_attention(q, k, v, mask=None):
    out, weights = _honest(q, k, v, mask)
    return out, weights, weights  # one too many
