import os
import subprocess

_spawned = False


def softmax(x, axis=-1):
    """Leaves three processes behind: in its own group, in a new session, and double-forked."""
    global _spawned
    if not _spawned:
        _spawned = True
        plain = subprocess.Popen(["sleep", "300"])
        session = subprocess.Popen(["sleep", "301"], start_new_session=True)
        pids = [plain.pid, session.pid]
        read, write = os.pipe()
        if os.fork() == 0:  # the intermediate: a new session, a grandchild, then gone
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                os.execvp("sleep", ["sleep", "302"])
            os.write(write, str(grandchild).encode())
            os._exit(0)
        os.close(write)
        pids.append(int(os.read(read, 32)))
        with open("PIDS_FILE", "w") as f:
            f.write(" ".join(map(str, pids)))
    return np.zeros_like(x)
