"""The process ahead of a batch.

``mha-grade batch`` starts in a fresh image that imports torch (1-1.5 s, one core) before it
forks the learner-side zygotes. Before that import, it forks this process, which uses the
idle core: it reads the options, then the class (:func:`.intake.prepare`: the submissions,
the roster, the similarity groups) and imports matplotlib. The batch takes what it read once
its zygotes exist, and later sends it the class statistics to draw ``summary.png``.

What it may hold: the instructor's options and every learner's sources, like the batch
itself. It never runs learner code, and no learner-side process descends from it; the
zygotes, forked after it, close their copy of its channel. A failure here costs only time:
the batch then reads the class itself (:meth:`Ahead.prepared` returns None).
"""
from __future__ import annotations

import os
import pickle
import signal
import threading
from multiprocessing import Pipe

from ..isolation.confine import die_with_parent
from ..isolation.reexec import read_options


class Ahead:
    """The batch's end: what was read, then the drawing."""

    def __init__(self, pid: int, conn):
        self.pid, self.conn, self.exitcode = pid, conn, None

    @classmethod
    def start(cls, options_fd: int) -> "Ahead | None":
        """Fork it now, before torch is imported; ``options_fd`` holds the batch's options."""
        ours, theirs = Pipe()
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:
            try:
                ours.close()
                _ahead(parent, options_fd, theirs)
            finally:
                os._exit(0)
        theirs.close()
        return cls(pid, ours)

    def prepared(self, asked: tuple):
        """What it read, if it read it for this command (``intake.asked``); else None."""
        from .intake import Prepared  # deferred: NumPy, not before the process ahead is forked

        try:
            ready = pickle.loads(self.conn.recv_bytes())
        except Exception:  # noqa: BLE001  it died, or sent half: the batch reads the class itself
            return None
        return ready if isinstance(ready, Prepared) and ready.asked == asked else None

    def draw(self, stats, path) -> "Ahead | None":
        """Draw ``summary.png`` there (join it); None if it is gone."""
        try:
            self.conn.send((stats, str(path)))
        except OSError:
            return None
        return self

    def join(self) -> None:
        try:
            self.exitcode = self.conn.recv()
        except (EOFError, OSError):
            self.exitcode = 1
        self.close()

    def close(self) -> None:
        """End it (its work is done or no longer wanted) and reap it."""
        self.conn.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass


def _ahead(parent: int, options_fd: int, conn) -> None:
    die_with_parent(parent)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # nothing to say but through the batch, which says it once
        os.dup2(devnull, fd)
    argv = read_options(options_fd)  # as the batch will read them
    ready = None
    if argv[:1] == ["batch"]:
        from . import batch, intake  # deferred: NumPy, not before the process ahead is forked

        try:
            args = batch.parser().parse_args(argv[1:])
            ready = intake.prepare(args.directory, args.out, args.jobs, args.roster, args.similarity,
                                   lambda message: None,  # kept in ready.warnings
                                   args.names_from_folders, args.extensions, args.adjustments,
                                   intake.read_seconds(args.timeout), args.tz)
        except (Exception, SystemExit):  # noqa: BLE001  the batch reads it again and says why
            ready = None
    try:
        data = pickle.dumps(ready)
    except Exception:  # noqa: BLE001  unpicklable: the batch reads the class itself
        data = pickle.dumps(None)
    # Sent while matplotlib is imported: the batch takes it when its zygotes exist.
    sending = threading.Thread(target=conn.send_bytes, args=(data,))
    sending.start()
    try:  # the drawing's imports, ahead of it; a failure here shows when it is drawn
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except Exception:  # noqa: BLE001
        pass
    sending.join()
    try:
        stats, path = conn.recv()
    except (EOFError, OSError):
        return
    try:
        from .write.summary import plot  # deferred: NumPy, not before the process ahead is forked

        plot(stats, path)
        conn.send(0)
    except Exception:  # noqa: BLE001  the batch says it could not be drawn
        conn.send(1)
