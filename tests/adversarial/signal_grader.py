import ctypes
import os
import signal


def softmax(x, axis=-1):
    """Signals the grader (SIGUSR1: the test counts them) and kills the zygote, then tries
    to ptrace the grader. Says what each attempt did in its error message."""
    outcome = []
    for label, pid, sig in (("grader", GRADER_PID, signal.SIGUSR1), ("zygote", os.getppid(), signal.SIGKILL)):
        try:
            os.kill(pid, sig)
            outcome.append(f"{label}:signalled")
        except OSError as err:
            outcome.append(f"{label}:refused({err.errno})")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(16, GRADER_PID, None, None) == 0:  # PTRACE_ATTACH
        libc.ptrace(17, GRADER_PID, None, None)  # PTRACE_DETACH
        outcome.append("ptrace:attached")
    else:
        outcome.append(f"ptrace:refused({ctypes.get_errno()})")
    raise RuntimeError("OUTCOME " + " ".join(outcome))
