def softmax(x, axis=-1):
    # Never returns and uses no CPU: alive until the exercise's wall limit (a case's CPU
    # limit never stops it), for tests that look at the learner's process while it runs.
    import time

    while True:
        time.sleep(1)
