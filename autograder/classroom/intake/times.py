"""When a learner handed in, from the instructor's facts only: Gradescope's ``created_at``,
from the class's export (``submission_metadata.yml``, read by :mod:`.gradescope_export`);
else a submitted file's own modification time as collected (a ``.zip`` or ``.ipynb`` in the
class folder); else a submission folder's change time (when it was put there). Never a time
inside what the learner sent: the files of an unzipped submission carry the dates of its zip
entries (1980-01-01 when the learner wants), and a ``submission_metadata.json`` in the
learner's folder is theirs to write. ``grades.csv`` says which. A time before 1981 or in the
future is no fact: the row says so, and no lateness is granted or charged from it.

And the times an instructor gives (``--deadline``, an extension), read as ISO 8601: a time
without a zone is read in the course's time zone (``--tz``, or ``timezone`` in the term
file); with neither, it is refused.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def zone(name: str | None):
    """The course's time zone named ``name`` (IANA: ``America/Los_Angeles``, ``Europe/Paris``,
    ``UTC``), or None; ValueError naming it when there is no such zone."""
    if name is None:
        return None
    try:
        return ZoneInfo(str(name).strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not a time zone (give an IANA name such as America/Los_Angeles, "
                         "Europe/Paris or UTC)") from None


def parse_time(text: str, tz=None) -> datetime:
    """An ISO 8601 time. Without a zone it is read in ``tz`` (the course's time zone); with
    no ``tz`` it is refused: read as UTC it would move every deadline by hours, silently."""
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date and time (give e.g. 2026-03-01T23:59+01:00)") from None
    if t.tzinfo is not None:
        return t
    if tz is None:
        raise ValueError(f"{text!r} has no time zone: write it with one (e.g. {t.isoformat(timespec='minutes')}"
                         "-08:00), or give the course's time zone (--tz, or timezone in the term file's [term])")
    return t.replace(tzinfo=tz)


def gradescope_time(value) -> datetime:
    """Gradescope's ``created_at``: an ISO 8601 text (``submission_metadata.json``) or, as
    ``yaml.safe_load`` reads the export's ``2026-03-01 22:58:05.746365000 Z``, a datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a date and time")
    return parse_time(value.replace(" Z", "Z"), timezone.utc)  # Gradescope's times are UTC


# Where a submission time comes from, as grades.csv and the report say it.
FROM_EXPORT = "submission_metadata.yml"
FROM_FILES = "file time"  # a submitted .zip's or .ipynb's own modification time
FROM_FOLDER = "folder change time"  # when the submission's folder was put in the class folder
UNTRUSTED = "no trusted time"
EARLIEST = datetime(1981, 1, 1, tzinfo=timezone.utc)  # before it: a zip entry's date, not a hand-in


def submitted_at(path: Path, created_at=None, now: datetime | None = None) -> tuple[datetime | None, str]:
    """When ``path`` was handed in, and where that time comes from: ``created_at`` when the
    class's export gives it (the instructor's file); else the submitted file's own time, or
    the submission folder's change time (never the times of the files inside it: an unzipped
    submission's files carry its zip entries' dates, the learner's to choose). ``(None,
    UNTRUSTED)`` when there is none, or it is before 1981 or in the future."""
    path = Path(path)
    if created_at is not None:
        return gradescope_time(created_at), FROM_EXPORT
    try:
        info = path.lstat()
    except OSError:
        return None, UNTRUSTED
    folder = path.is_dir() and not path.is_symlink()
    when = datetime.fromtimestamp(info.st_ctime if folder else info.st_mtime, timezone.utc)
    if when < EARLIEST or when > (now or datetime.now(timezone.utc)):
        return None, UNTRUSTED
    return when, FROM_FOLDER if folder else FROM_FILES
