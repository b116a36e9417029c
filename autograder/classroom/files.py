"""Files of a batch's output folder, written so that a crash never leaves half of one
(``atomic.write_atomic``): a batch killed at any instant leaves each file either as it was
or complete. Reading is forgiving in the other direction:
a file that is damaged anyway (a disk filled up, an editor) is reported by name and treated
as absent, so its learner is graded again instead of the batch stopping on a traceback.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..atomic import write_atomic  # the one copy (report.py writes with it too)


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
