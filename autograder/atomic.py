"""Files written so that a crash never leaves half of one: reports, results and class files.

Each file is written to a temporary file in the same folder, flushed and fsynced, then
renamed over its target (``os.replace`` is atomic on POSIX): a writer killed at any instant
leaves the file either as it was or complete. The rename replaces whatever stood there, a
symlink planted by the learner's code included, never its target; a file is left as it is
only when it is already ours, regular, with these bytes and this mode.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike, data: str | bytes, mode: int = 0o644) -> None:
    path = Path(path)
    data = data.encode("utf-8") if isinstance(data, str) else data
    try:  # a rerun rewrites only what changed: hundreds of feedback files cost reads, not fsyncs
        st = path.lstat()
        if (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == mode
                and path.read_bytes() == data):
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
