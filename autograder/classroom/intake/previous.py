"""What the output folder OUT holds of its last run, read before anything is graded.

* ``class.json``: how many learners the last run graded (had a submission), of how many.
  A run that would grade fewer (a damaged download, the wrong folder, a roster that no longer
  matches the submissions) is refused before it writes anything: exit status 2, one line
  with both counts, every earlier file byte-identical. ``--allow-fewer`` replaces them.
* ``roster.csv``: the roster of the last run. A new roster that drops more than a tenth of
  its learners (and at least :data:`DROPPED` of them) at once (the other section's export,
  say, whose learners would silently leave canvas.csv) is refused the same way, naming how
  many and a few of them; ``--allow-fewer`` accepts it.
* ``.seed``: the seed of the randomized cases, drawn once for this folder (mode 0600) and
  reused; ``--seed`` sets it, and a seed that differs from the stored one regrades everyone.
"""
from __future__ import annotations

import csv
import json
import secrets
from pathlib import Path
from typing import Callable

from .. import files
from . import BatchError

RECORD = "class.json"
DROPPED = 3  # learners a new roster may drop at once, below a tenth of the last one, unasked
SEED_FILE = ".seed"


def resolve_seed(out: Path, given: int | None, say: Callable[[str], None]) -> int:
    """The seed of this output folder: drawn once, stored (0600), reused; ``--seed`` sets it."""
    f = Path(out) / SEED_FILE
    stored = None
    if f.exists():
        try:
            stored = int(f.read_text().strip())
        except (OSError, ValueError):
            say(f"{f} is damaged; a new seed is stored and every submission is graded again")
    if given is None and stored is not None:
        return stored
    seed = given if given is not None else secrets.randbits(63)
    if stored is not None and stored != seed:
        say(f"--seed differs from the seed stored in {f}: every submission is graded again with the new "
            f"seed, which replaces the stored one")
    if stored != seed:
        files.write_atomic(f, f"{seed}\n", mode=0o600)
    return seed


def graded_learners(ready) -> int:
    """Learners with a submission in this run (a group's members each count), a held one's
    included: a submission held for an ambiguous identity is no learner lost."""
    held = {who for h in getattr(ready, "held", []) for who in h["submitters"]}
    return len({ready.owner[who.id] for people in ready.claims.values() for who in people}
               | set(getattr(ready, "held_people", {})) | {ready.owner.get(who, who) for who in held})


def _previous(out: Path) -> tuple[int, str] | None:
    """(learners graded by OUT's last run, where that comes from), or None for a new folder."""
    try:
        return int(json.loads((out / RECORD).read_text())["graded_learners"]), str(out / RECORD)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:  # a folder written before class.json existed: its gradebook says it
        with open(out / "grades.csv", newline="", encoding="utf-8") as f:
            return sum(row.get("status") != "no submission" for row in csv.DictReader(f)), str(out / "grades.csv")
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def check_loss(out: Path, ready, allow_fewer: bool) -> None:
    """BatchError when this run would grade fewer learners than OUT's last one."""
    previous = _previous(Path(out))
    now = graded_learners(ready)
    if previous is None or allow_fewer or now >= previous[0]:
        return
    raise BatchError(f"{out} holds the grades of {previous[0]} learners with a submission ({previous[1]}); this "
                     f"run finds {now}: nothing was written, so as not to replace them. Check the class folder and "
                     "the roster, write into another --out, or pass --allow-fewer to replace them")


def check_roster_loss(out: Path, ready, allow_fewer: bool) -> None:
    """BatchError when the roster drops many of the learners of OUT's last roster at once."""
    from .roster import RosterError, read_roster, same  # deferred: an import cycle through intake

    kept = Path(out) / "roster.csv"
    if allow_fewer or ready.learners is None or not kept.is_file():
        return
    try:
        before = read_roster(kept)
    except RosterError:
        return  # a damaged copy: the new roster replaces it
    now = {same(a) for who in ready.learners for a in who.aliases}
    gone = [who.id for who in before if not any(same(a) in now for a in who.aliases)]
    if len(gone) >= DROPPED and len(gone) * 10 > len(before):
        raise BatchError(f"the roster drops {len(gone)} of the {len(before)} learners of the last run's ({kept}): "
                         f"{', '.join(gone[:5])}{' ...' if len(gone) > 5 else ''}; nothing was written, so as not "
                         "to take them out of canvas.csv. Check the roster (another section's?), or pass "
                         "--allow-fewer to replace it")
