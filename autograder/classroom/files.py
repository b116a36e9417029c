"""Files of a batch's output folder, written so that a crash never leaves half of one.

Every file is written to a temporary file in the same folder, flushed and fsynced, then
renamed over its target (``os.replace`` is atomic on POSIX): a batch killed at any instant
leaves each file either as it was or complete. Reading is forgiving in the other direction:
a file that is damaged anyway (a disk filled up, an editor) is reported by name and treated
as absent, so its learner is graded again instead of the batch stopping on a traceback.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    path = Path(path)
    data = data.encode("utf-8") if isinstance(data, str) else data
    try:  # a rerun rewrites only what changed: hundreds of feedback files cost reads, not fsyncs
        if path.read_bytes() == data and (path.stat().st_mode & 0o777) == mode:
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


def write_json(path: Path, value, mode: int = 0o644) -> None:
    write_atomic(path, json.dumps(value, indent=1, sort_keys=True, allow_nan=False) + "\n", mode)


def read_json(path: Path, warn) -> object | None:
    """The JSON at ``path``; None when absent, or damaged (``warn`` then says which file)."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        warn(f"{path} is damaged ({err}); it is ignored and what it held is computed again")
        return None


def clean_temporaries(folder: Path) -> None:
    """Temporary files a killed batch left behind (never renamed into place)."""
    for tmp in Path(folder).glob(".*.tmp"):
        tmp.unlink(missing_ok=True)
