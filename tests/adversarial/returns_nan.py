def softmax(x, axis=-1):
    return np.full(np.shape(x), np.nan, dtype=np.asarray(x).dtype)
