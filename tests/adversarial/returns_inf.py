def softmax(x, axis=-1):
    return np.full(np.shape(x), np.inf, dtype=np.asarray(x).dtype)
