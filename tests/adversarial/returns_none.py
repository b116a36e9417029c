def softmax(x, axis=-1):
    return None
