def softmax(x, axis=-1):
    nested = []
    for _ in range(10_000):
        nested = [nested]
    return nested
