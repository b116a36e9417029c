import os
import subprocess
import time


def softmax(x, axis=-1):
    """Tries to leave three processes behind: in its own group, in a new session, and
    double-forked. Says which it started (their pids) in its error message."""
    pids, refused = [], []
    for start in (lambda: subprocess.Popen(["sleep", "300"]).pid,
                  lambda: subprocess.Popen(["sleep", "301"], start_new_session=True).pid, _double_fork):
        try:
            pids.append(start())
        except OSError as err:
            refused.append(str(err.errno))
    raise RuntimeError(f"PIDS {' '.join(map(str, pids))} REFUSED {' '.join(refused)} END")


def _double_fork():
    read, write = os.pipe()
    if os.fork() == 0:  # the intermediate: a new session, a grandchild, then gone
        os.setsid()
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(302)
            os._exit(0)
        os.write(write, str(grandchild).encode())
        os._exit(0)
    os.close(write)
    return int(os.read(read, 32))
