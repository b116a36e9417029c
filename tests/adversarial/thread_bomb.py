import threading


def softmax(x, axis=-1):
    """Starts up to THREADS threads that never end (small stacks, so that memory is not what
    stops them) and holds them for HOLD seconds of wall time (no CPU), while classmates are
    graded beside it; says how many the kernel let it start."""
    threading.stack_size(64 * 1024)
    forever, made, why = threading.Event(), 0, "all started"
    for _ in range(THREADS):
        try:
            threading.Thread(target=forever.wait, daemon=True).start()
        except BaseException as err:  # noqa: BLE001  RuntimeError "can't start new thread"
            why = f"refused ({type(err).__name__})"
            break
        made += 1
    forever.wait(HOLD)
    raise RuntimeError(f"OUTCOME threads={made} {why}")
