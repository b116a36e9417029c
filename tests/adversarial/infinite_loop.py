def softmax(x, axis=-1):
    while True:
        pass
