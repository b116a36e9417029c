"""One class graded by several processes or machines: ``batch --shard i/N`` and ``mha-grade merge``.

A shard grades a stable part of the class: the submissions whose name (their identity in the
class files) hashes to ``i`` modulo ``N`` (:func:`mine`), the same part on every machine and
every rerun, whatever order the folder lists them in. It writes only what grading gives,
into ``OUT/parts/i-of-N/`` (its reports, its ``hashes.json``, ``part.json``), never the class
files: N shards may share OUT on a network volume and never write the same file. Its index
comes from ``--shard i/N``, or, given ``--shard N``, from the scheduler: Kubernetes' Indexed
Jobs set ``JOB_COMPLETION_INDEX`` (0 to N-1), a Slurm array ``SLURM_ARRAY_TASK_ID`` (counted
from ``SLURM_ARRAY_TASK_MIN``).

Every shard grades with one seed, the class's: ``--seed``, or the one already stored in
``OUT/.seed`` (a shard never draws one: N shards would draw N). ``mha-grade merge DIR --out
OUT`` with the batch's other options then gathers the parts into OUT (:func:`gather`) and
runs the batch there with nothing left to grade: every grade is reused by the batch's own
rule (the submission's sources, the grader, the seed and the options unchanged,
``hashes.json``), so the class files are those one run writes, byte for byte. A submission
no part graded, or graded from other sources or with another grader or options, is refused
by name (exit status 2): the merge grades nothing itself.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from . import files
from .intake import BatchError

PARTS = "parts"
PART = "part.json"
INDEX_VARIABLES = ("JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID")


def parse(text: str, environ=os.environ) -> tuple[int, int]:
    """``(i, N)`` from ``--shard i/N``, or from ``--shard N`` and the scheduler's index."""
    index, slash, count = text.strip().rpartition("/")
    try:
        n = int(count)
    except ValueError:
        raise BatchError(f"--shard {text!r}: give i/N (this shard's index, from 0, and how many) or N") from None
    if not slash:
        index = _scheduled(environ)
        if index is None:
            raise BatchError(f"--shard {text}: no index given (i/N) and none of {', '.join(INDEX_VARIABLES)} is set")
    try:
        i = int(index)
    except ValueError:
        raise BatchError(f"--shard {text!r}: the index {index!r} is not a whole number") from None
    if n < 1 or not 0 <= i < n:
        raise BatchError(f"--shard {text}: the index must be from 0 to N-1 and N at least 1 (here {i} of {n})")
    return i, n


def _scheduled(environ) -> str | None:
    if environ.get("JOB_COMPLETION_INDEX", "").strip():
        return environ["JOB_COMPLETION_INDEX"].strip()
    task = environ.get("SLURM_ARRAY_TASK_ID", "").strip()
    if not task:
        return None
    try:  # an array --array=1-4 counts from 1: the shard's index is the task's place in it
        return str(int(task) - int(environ.get("SLURM_ARRAY_TASK_MIN", "0") or 0))
    except ValueError:
        return task  # said by parse


def mine(learner: str, shard: tuple[int, int]) -> bool:
    """Whether ``learner``'s submission is shard ``shard``'s: by a hash of its name, stable."""
    i, n = shard
    return int.from_bytes(hashlib.sha256(learner.encode()).digest()[:8], "big") % n == i


def folder(out: Path, shard: tuple[int, int]) -> Path:
    return Path(out) / PARTS / f"{shard[0]}-of-{shard[1]}"


def shared_seed(out: Path, given: int | None) -> int:
    """The class's seed for a shard: ``--seed``, else OUT's stored one; never drawn here."""
    if given is not None:
        return given
    try:
        return int((Path(out) / ".seed").read_text().strip())
    except (OSError, ValueError):
        raise BatchError(f"--shard: every shard must grade with the class's seed, and {out} stores none: pass "
                         "--seed N to every shard and to the merge (keep it secret), or store it in "
                         f"{Path(out) / '.seed'} first") from None


def write_part(part: Path, shard: tuple[int, int], seed: int, learners: list[str]) -> None:
    files.write_json(Path(part) / PART, {"shard": list(shard), "seed": seed, "learners": sorted(learners)})


def gather(out: Path, warn) -> int:
    """Copy every part's reports and grades' hashes into OUT; the parts' seed into ``OUT/.seed``.
    BatchError if a part is missing, or the parts disagree (their count, their seed). Returns
    the parts' seed."""
    out = Path(out)
    found = sorted((out / PARTS).glob("*-of-*")) if (out / PARTS).is_dir() else []
    parts = {}
    for part in found:
        record = files.read_json(part / PART, warn)
        if not isinstance(record, dict) or not isinstance(record.get("shard"), list):
            raise BatchError(f"{part} has no {PART}: its shard did not finish; run it again")
        parts[tuple(record["shard"])] = (part, record)
    counts = {n for _, n in parts}
    if not parts:
        raise BatchError(f"{out / PARTS} holds no part: run `mha-grade batch ... --out {out} --shard i/N` first")
    if len(counts) > 1:
        raise BatchError(f"{out / PARTS} holds parts of {' and '.join(map(str, sorted(counts)))} shards: remove "
                         "the parts of the other split")
    n = counts.pop()
    missing = [f"{i}-of-{n}" for i in range(n) if (i, n) not in parts]
    if missing:
        raise BatchError(f"{out / PARTS}: part(s) {', '.join(missing)} missing: run those shards, then merge")
    seeds = {record["seed"] for _, record in parts.values()}
    if len(seeds) != 1:
        raise BatchError(f"{out / PARTS}: the shards graded with different seeds: grade them again with one --seed")
    seed = seeds.pop()
    stored = out / ".seed"
    if stored.exists() and stored.read_text().strip() != str(seed):
        raise BatchError(f"the shards graded with another seed than the one stored in {stored}")
    files.write_atomic(stored, f"{seed}\n", mode=0o600)
    hashes = files.read_json(out / "hashes.json", warn) or {}
    (out / "reports").mkdir(parents=True, exist_ok=True)
    errors = []
    for key in sorted(parts):
        part, record = parts[key]
        known = files.read_json(part / "hashes.json", warn) or {}
        for learner in record["learners"]:
            report = part / "reports" / f"{learner}.json"
            if learner in known and report.is_file():
                shutil.copyfile(report, out / "reports" / f"{learner}.json")
                hashes[learner] = known[learner]
        if (part / "grader-errors.log").is_file():
            errors.append((part / "grader-errors.log").read_text(encoding="utf-8", errors="replace"))
    files.write_json(out / "hashes.json", hashes)
    if errors:
        with open(out / "grader-errors.log", "a", encoding="utf-8") as f:
            f.write("".join(errors))
    return seed
