_honest_softmax = softmax


def softmax(x, axis=-1):
    return _honest_softmax(x, axis).tolist()  # right values, wrong type
