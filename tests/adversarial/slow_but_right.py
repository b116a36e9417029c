import time as _time


def softmax(x, axis=-1):
    # Right, but waiting on the wall clock (as a case does on a machine busy with other
    # work): it uses almost no CPU, so only the exercise's wall limit applies to it.
    _time.sleep(0.25)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
