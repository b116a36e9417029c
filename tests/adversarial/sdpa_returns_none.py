def scaled_dot_product_attention(q, k, v, mask=None):
    return None
