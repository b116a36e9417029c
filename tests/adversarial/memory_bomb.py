def softmax(x, axis=-1):
    hog = []
    while True:  # address space, not touched pages: the limit stops it before the machine
        hog.append(np.empty(2**27))  # 1 GiB each
