import os
import time


def softmax(x, axis=-1):
    """Forks a process that keeps writing to a file for seconds after the function returned."""
    try:
        pid = os.fork()
    except OSError as err:
        raise RuntimeError(f"OUTCOME fork:refused({err.errno})") from None
    if pid == 0:
        for _ in range(100):
            try:
                with open("WATCH_FILE", "a") as f:
                    f.write("still here\n")
            except OSError:
                pass
            time.sleep(0.05)
        os._exit(0)
    raise RuntimeError(f"OUTCOME fork:{pid}")
