"""``--similarity``: groups of learners whose exercise code is near-identical.

An integrity aid, not a verdict: it points an instructor at submissions worth reading.

1. **Normalise** each exercise's definition, so that renaming variables, reformatting, and
   editing comments or docstrings change nothing: docstrings dropped, every identifier
   replaced by a placeholder numbered in order of first use, printed back by ``ast.unparse``
   (which drops comments and fixes the layout) and split into tokens. Code equal to the stub
   and definitions shorter than ``MIN_TOKENS`` tokens are left out: short exercises are
   naturally alike across honest learners.
2. **Fingerprint** the tokens (winnowing, as MOSS does: hashes of every ``K``-token window,
   the smallest of each ``W`` consecutive ones kept), so that any shared run of at least
   ``K + W - 1`` tokens shows as a shared fingerprint.
3. **Leave out common code**: a fingerprint found in ``COMMON_SHARE`` of the class or more
   (at least ``COMMON_MIN`` learners) belongs to a template, a published solution or the one
   natural way to write a line, and links nobody (MOSS's ``-m``, JPlag's base code, without
   needing the template).
4. **Link** two learners on an exercise when the smaller of their sets of remaining
   fingerprints is at least ``THRESHOLD`` contained in the other (and holds at least
   ``MIN_FINGERPRINTS``), found through an inverted index (fingerprint -> learners), so the
   work grows with the shared fingerprints, not with the number of pairs; report the
   *clusters* (connected groups) and the exercises that link each.

Steps 1-2 (:mod:`.winnowing`), the costly ones, are cached per submission content hash
(``.similarity/``, written by :func:`save`): a rerun after late submissions normalises only
the new ones; steps 3-4 are a linear pass over the class's fingerprints. Steps 1-2 parse
learner code, so they run in forked processes under limits (:mod:`autograder.limited`): code
that cannot be fingerprinted there leaves only its learner out, named in ``similarity.md``
with the reason.
"""
from __future__ import annotations

import csv
import hashlib
import io
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ... import limited, stubs
from ...spec import MODULE_OF, POINTS
from ...inert import LearnerText, markdown, spreadsheet
from ..files import read_json, write_json
from .winnowing import fingerprints, normalised_tokens, pack, unpack

THRESHOLD = 0.9
MIN_TOKENS = 40
MIN_FINGERPRINTS = 4  # fewer distinctive fingerprints than this is too little to link on
COMMON_SHARE = 0.2  # of the class sharing a fingerprint: common code, not a copy
COMMON_MIN = 5
GROUP = 25  # submissions fingerprinted in one forked process (an honest one takes 20-60 ms)
CACHE_VERSION = 4  # 4: stub code left out (3 compared with stubs it never found)


def _stub_tokens() -> dict[str, list[str] | None]:
    """Each exercise's stub definition, normalised; StubsMissing if the stubs are not there."""
    return {exercise: normalised_tokens(stubs.source(module), exercise)
            for exercise, module in MODULE_OF.items()}


@dataclass
class Cluster:
    learners: list[str]
    exercises: dict[str, float]  # exercise -> the highest containment inside the cluster
    links: int  # learner pairs linked inside it


@dataclass
class Common:
    exercise: str
    learners: int  # how many share this exact (normalised) code


@dataclass
class SimilarityResult:
    clusters: list[Cluster]
    common: list[Common]
    threshold: float
    normalised: int  # submissions normalised in this run (the others came from the cache)
    cached: int
    left_out: dict[str, str] = field(default_factory=dict)  # learner -> why their code could not be compared


class Unfingerprinted(Exception):
    """A submission's code could not be fingerprinted within the limits; the message says why."""


class Similarity:
    """The class's fingerprints, cached per submission in ``folder`` between runs."""

    def __init__(self, folder, threshold: float = THRESHOLD, warn=print, seconds: float | None = None):
        self.folder = Path(folder)
        self.threshold = threshold
        self.seconds = limited.READ_SECONDS if seconds is None else seconds  # per submission not yet cached
        self._warn = warn
        self._stubs = None
        self.normalised = self.cached = 0
        self.new: dict[str, dict] = {}  # content hash -> fingerprints computed here, for save()

    def code(self, content_hash: str, sources: dict[str, str]) -> dict[str, dict]:
        """``{exercise: {"digest": ..., "fingerprints": [...]}}`` of one submission;
        Unfingerprinted when its code cannot be read within the limits (:mod:`...limited`)."""
        found = self.code_all({content_hash: sources})[content_hash]
        if isinstance(found, Unfingerprinted):
            raise found
        return found

    def code_all(self, submissions: dict[str, dict[str, str]]) -> dict[str, dict | Unfingerprinted]:
        """:meth:`code` of each submission (content hash -> sources); an Unfingerprinted in
        place of the code of one that could not be read within the limits.

        The learner's code is parsed in forked processes under limits (:mod:`...limited`), up
        to ``GROUP`` submissions in one: a fork costs about as much as fingerprinting one
        honest submission (10-30 ms against 20-60 ms here). A group that fails is done again
        one submission at a time, so a hostile one costs at most twice its limit, and only its
        own code is left out.
        """
        found = {h: self._cached(h) for h in submissions}
        todo = [h for h, code in found.items() if code is None]
        if todo and self._stubs is None:
            self._stubs = _stub_tokens()
        for start in range(0, len(todo), GROUP):
            group = todo[start:start + GROUP]
            try:
                done = dict(zip(group, self._fingerprint([submissions[h] for h in group])))
            except Unfingerprinted as err:
                if len(group) == 1:
                    done = {group[0]: err}
                else:
                    done = {}
                    for h in group:
                        try:
                            done[h] = self._fingerprint([submissions[h]])[0]
                        except Unfingerprinted as alone:
                            done[h] = alone
            for h, packed in done.items():
                if isinstance(packed, Unfingerprinted):
                    found[h] = packed
                    continue
                self.normalised += 1
                self.new[h] = {"version": CACHE_VERSION, "exercises": packed}
                found[h] = {e: dict(c, fingerprints=unpack(c["fingerprints"])) for e, c in packed.items()}
        return found

    def _cached(self, content_hash: str) -> dict | None:
        f = self.folder / "code" / f"{content_hash}.json"
        found = self.new.get(content_hash) or (read_json(f, self._warn) if f.exists() else None)
        if isinstance(found, dict) and found.get("version") == CACHE_VERSION:
            try:
                exercises = {e: dict(c, fingerprints=unpack(c["fingerprints"]))
                             for e, c in found["exercises"].items()}
                self.cached += 1
                return exercises
            except (AttributeError, KeyError, TypeError, ValueError):
                self._warn(f"{f} is damaged; its submission's code is fingerprinted again")
        return None

    def _fingerprint(self, group: list[dict[str, str]]) -> list[dict]:
        try:  # learner bytes, parsed: in a process of its own, under limits
            packed = limited.call(_fingerprinted_all, group, self._stubs, what="fingerprinting the code",
                                  seconds=self.seconds)
        except limited.Refused as err:
            raise Unfingerprinted(str(err)) from None
        if not isinstance(packed, list) or len(packed) != len(group):
            raise Unfingerprinted("fingerprinting the code gave a malformed answer")
        return packed

    def run(self, code: dict[str, dict[str, dict]], left_out: dict[str, str] | None = None) -> SimilarityResult:
        """``code``: ``{learner: self.code(...)}`` -> clusters and common code. ``left_out``:
        learners whose code could not be fingerprinted, and why (said in the report)."""
        n = len(code)
        limit = max(COMMON_MIN, COMMON_SHARE * n)
        links: dict[tuple[str, str], dict[str, float]] = {}
        common = []
        for exercise in POINTS:
            mine = {learner: ex[exercise] for learner, ex in code.items() if exercise in ex}
            digests = Counter(c["digest"] for c in mine.values())
            common += [Common(exercise, k) for _, k in digests.most_common() if k >= limit]
            frequency = Counter(fp for c in mine.values() for fp in set(c["fingerprints"]))
            rare = {learner: {fp for fp in c["fingerprints"] if frequency[fp] < limit} for learner, c in mine.items()}
            index: dict[int, list[str]] = defaultdict(list)
            for learner in sorted(rare):
                for fp in rare[learner]:
                    index[fp].append(learner)
            shared: Counter = Counter()
            for learners in index.values():
                for i, a in enumerate(learners):
                    for b in learners[i + 1:]:
                        shared[a, b] += 1
            for (a, b), k in shared.items():
                smaller = min(len(rare[a]), len(rare[b]))
                if smaller >= MIN_FINGERPRINTS and k / smaller >= self.threshold:
                    links.setdefault((a, b), {})[exercise] = round(k / smaller, 3)
        return SimilarityResult(_clusters(links), common, self.threshold, self.normalised, self.cached,
                                dict(left_out or {}))


def _fingerprinted_all(group: list[dict[str, str]], stubs: dict) -> list[dict[str, dict]]:
    return [_fingerprinted(sources, stubs) for sources in group]


def _fingerprinted(sources: dict[str, str], stubs: dict) -> dict[str, dict]:
    """``{exercise: {"digest": ..., "fingerprints": packed}}`` of one submission's sources."""
    exercises = {}
    for exercise, module in MODULE_OF.items():
        tokens = normalised_tokens(sources.get(module, ""), exercise)
        if tokens and tokens != stubs.get(exercise) and len(tokens) >= MIN_TOKENS:
            exercises[exercise] = {"digest": hashlib.sha256("\0".join(tokens).encode()).hexdigest()[:24],
                                   "fingerprints": pack(fingerprints(tokens))}
    return exercises


def save(folder, new: dict[str, dict]) -> None:
    """Cache the fingerprints a finder computed (its ``new``); done once the batch is sure to
    run, so that a refused command writes nothing."""
    for content_hash, entry in new.items():
        write_json(Path(folder) / "code" / f"{content_hash}.json", entry)


def _clusters(links: dict[tuple[str, str], dict[str, float]]) -> list[Cluster]:
    parent: dict[str, str] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        parent[root(a)] = root(b)
    groups: dict[str, Cluster] = {}
    for (a, b), exercises in links.items():
        c = groups.setdefault(root(a), Cluster([], {}, 0))
        c.links += 1
        for learner in (a, b):
            if learner not in c.learners:
                c.learners.append(learner)
        for e, r in exercises.items():
            c.exercises[e] = max(r, c.exercises.get(e, 0.0))
    order = {e: i for i, e in enumerate(POINTS)}
    for c in groups.values():
        c.learners.sort()
        c.exercises = dict(sorted(c.exercises.items(), key=lambda kv: order.get(kv[0], 99)))
    return sorted(groups.values(), key=lambda c: (-len(c.learners), -len(c.exercises), c.learners))


def clusters_csv(result: SimilarityResult, rename=lambda x: x) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["cluster", "size", "learners", "exercises (highest containment)", "linked_pairs"])
    for i, c in enumerate(result.clusters, 1):
        # a submission's name may start with + - @ (a sid "+1-555"): a cell, not a formula
        w.writerow([i, len(c.learners), spreadsheet(" ".join(rename(x) for x in c.learners)),
                    " ".join(f"{e}:{r:.2f}" for e, r in c.exercises.items()), c.links])
    return out.getvalue()


def clusters_markdown(result: SimilarityResult, rename=lambda x: x) -> str:
    lines = ["# Near-identical exercise code", "",
             f"Learners are grouped when, for one of their exercises, at least {result.threshold:.0%} of the "
             f"distinctive fingerprints of one's code (names, comments and layout normalised; code found "
             f"in {COMMON_SHARE:.0%} of the class or more, stub code and definitions under {MIN_TOKENS} "
             f"tokens left out) are in the other's. A pointer for reading, not a verdict.", ""]
    if result.common:
        lines += ["Code shared exactly by many learners (a template, a published solution, or the one "
                  "natural way to write it) links nobody:", ""]
        lines += [f"- `{c.exercise}`: {c.learners} learners" for c in result.common]
        lines += [""]
    if not result.clusters:
        lines += ["No cluster above the threshold."]
    for i, c in enumerate(result.clusters, 1):
        ex = ", ".join(f"`{e}` ({r:.2f})" for e, r in c.exercises.items())
        names = ", ".join(markdown(rename(x)) for x in c.learners)
        lines.append(f"{i}. {len(c.learners)} learners: {names}; "
                     f"exercises: {ex}")
    if result.left_out:
        lines += ["", "Not compared (their code could not be fingerprinted within the grader's limits):", ""]
        lines += [f"- {markdown(rename(learner))}: {LearnerText(why, 'a refusal').markdown(cap=200)}"
                  for learner, why in sorted(result.left_out.items())]
    return "\n".join(lines) + "\n"


def clusters_table(result: SimilarityResult, limit: int = 20):
    from rich.table import Table

    table = Table(title=f"Near-identical exercise code (containment >= {result.threshold:g}): "
                        f"{len(result.clusters)} cluster(s)"
                        + (f", the {limit} largest shown (all in similarity.md)" if len(result.clusters) > limit else ""))
    for name in ("learners", "exercises (highest containment)"):
        table.add_column(name, overflow="fold")
    for c in result.clusters[:limit]:
        table.add_row(", ".join(c.learners), ", ".join(f"{e} ({r:.2f})" for e, r in c.exercises.items()))
    return table
