def softmax(x, axis=-1):
    raise KeyboardInterrupt
