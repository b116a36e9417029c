"""When a learner handed in: Gradescope's ``created_at``, from the class's export
(``submission_metadata.yml``, read by :mod:`.gradescope_export`), otherwise the newest
modification time of the submission's files; never a file inside the learner's folder (theirs
to write). ``grades.csv`` says which. And the times an instructor gives (``--deadline``, an
extension), read as ISO 8601.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from ...submission.files import folders
from ...submission.limits import MAX_FILES


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; without a time zone it is taken as UTC (and said so in --help)."""
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date and time (give e.g. 2026-03-01T23:59+01:00)") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def gradescope_time(value) -> datetime:
    """Gradescope's ``created_at``: an ISO 8601 text (``submission_metadata.json``) or, as
    ``yaml.safe_load`` reads the export's ``2026-03-01 22:58:05.746365000 Z``, a datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a date and time")
    return parse_time(value.replace(" Z", "Z"))


# Where a submission time comes from, as grades.csv and the report say it.
FROM_EXPORT = "submission_metadata.yml"
FROM_FILES = "file time"


def submitted_at(path: Path, created_at=None) -> tuple[datetime | None, str]:
    """When ``path`` was handed in, and where that time comes from: ``created_at`` when the
    class's export gives it (the instructor's file), else the newest time of the submission's
    files (the documented fallback, looked at within the walk's limits). Never a file inside
    the learner's folder: a ``submission_metadata.json`` there is the learner's to write, and
    a time it states is no fact."""
    path = Path(path)
    if created_at is not None:
        return gradescope_time(created_at), FROM_EXPORT
    try:
        if path.is_dir() and not path.is_symlink():
            newest = _newest(path)
            if newest is None:
                return None, ""
        else:
            newest = path.lstat().st_mtime
    except OSError:
        return None, ""
    return datetime.fromtimestamp(newest, timezone.utc), FROM_FILES


def _newest(folder: Path) -> float | None:
    """The newest modification time of the files in ``folder``, within the submission walk's
    limits (depth, entries: ``submission.files.folders``)."""
    newest, seen = None, 0
    for where, _, _, names in folders(folder, lambda note: None):
        for name in names:
            seen += 1
            if seen > MAX_FILES:
                return newest
            try:
                t = os.lstat(os.path.join(where, name)).st_mtime
            except OSError:
                continue
            newest = t if newest is None else max(newest, t)
    return newest
