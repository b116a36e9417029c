"""Mutants nobody wrote by hand: small AST edits of ``solutions/`` (made by
``autograder.grading.catalogue``, whose mutants are also the grader's generated known bugs),
graded in process, and every sentence of the feedback checked against the mutant
(``tests/test_mutants.py`` on a sample, ``bench/mutants.py`` on all of them). While a mutant is
graded, its own edit is left out of the catalogue: it is never named by itself.

An edit changes one node of one exercise's own function or class: an arithmetic operator
swapped (+ -, * /, ** *), a comparison loosened or tightened (< <=, > >=, == !=), an integer
off by one, a float doubled, a negation dropped, a call that transposes, scales or
exponentiates dropped for its first argument, a call swapped for its sibling (max for min, sum
for mean, sqrt for square, sin for cos), an axis keyword moved, keepdims turned off.
A mutant that cannot be compiled or imported is skipped; every other one is graded by
``judge.judge_in_process`` (trusted code: our own solutions, edited).

:func:`false_sentences` re-checks what the feedback claims, from the outputs themselves:

* a named diagnosis: on each case it is attached to, the mutant's output is one of that bug's
  ways of writing it, and the mutant passes no case where that way shows;
* an intervention ("... passes with its F alone changed to G"): the named case fails, its copy
  with F changed passes;
* a minimal pair ("'a' fails and 'b' passes, and their inputs differ only in F"): a fails, b
  passes, b runs the code under test, their features differ in the one named, and no failing
  case has b's value of it;
* a relation ("Your X is the reference's ..., on every case that returned it (N, the M where it
  differs ...)"): rechecked with plain NumPy on every such case, and its counts;
* a counted aggregate ("... (in N of M failing cases)"): N failing cases have that cause, M fail;
  "the failing ones are on the rungs R": every failing case is on a rung R names;
* a mutant with full marks gets no diagnosis and no summary.
"""
from __future__ import annotations

import hashlib
import re
import signal
import time
from dataclasses import dataclass

import numpy as np

from autograder import scoring
from autograder.grading import catalogue, judge
from autograder.grading.exercises import EXERCISES
from autograder.spec import MODULE_OF, CaseError



@dataclass
class Mutant:
    exercise: str
    what: str  # "line 12: + -> -"
    implementation: object


def mutants(exercise_id: str) -> list[Mutant]:
    """Every mutant of ``exercise_id``'s function or class in ``solutions/`` that imports
    (``autograder.grading.catalogue``'s edits)."""
    return [Mutant(exercise_id, what, implementation)
            for what, _, implementation in catalogue.edits(MODULE_OF[exercise_id], exercise_id)]


def sample(exercise_ids, per_exercise: int) -> list[Mutant]:
    """A fixed sample: per exercise, the mutants whose description hashes lowest (the same on
    every run and machine, and spread over the operators)."""
    chosen = []
    for exercise_id in exercise_ids:
        every = mutants(exercise_id)
        every.sort(key=lambda m: hashlib.sha256(f"{m.exercise}:{m.what}".encode()).hexdigest())
        chosen += every[:per_exercise]
    return chosen


class _TooSlow(Exception):
    pass


def grade(mutant: Mutant, seconds: int = 20):
    """``(result, cases, outputs)`` of the mutant, or None when it runs longer than ``seconds``
    (an edited loop bound may never end)."""
    exercise = EXERCISES[mutant.exercise]

    def stop(signum, frame):
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    catalogue.EXCLUDED.add(mutant.what)  # no mutant is named by its own edit
    try:
        cases = judge.in_process_cases(exercise)
        ns = judge.reference.namespace({exercise.id: mutant.implementation})
        outputs = []
        for case in cases:
            try:
                with np.errstate(all="ignore"):
                    outputs.append(judge.run_driver(case, ns))
            except _TooSlow:
                raise
            except Exception as err:  # noqa: BLE001  the mutant's own failure, graded as the pipeline would
                outputs.append(CaseError("exception", f"{type(err).__name__}: {err}"))
        result = judge.judge_exercise(exercise, cases, outputs, [])
    except _TooSlow:
        return None
    finally:
        catalogue.EXCLUDED.discard(mutant.what)
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return result, cases, outputs


def keeps_full_marks(mutant: Mutant) -> bool:
    """Whether the mutant passes every graded case (scores only: no diagnosis is looked for)."""
    exercise = EXERCISES[mutant.exercise]
    ns = judge.reference.namespace({exercise.id: mutant.implementation})
    for case in judge.in_process_cases(exercise):
        if scoring.PROBE in case.features:
            continue
        try:
            with np.errstate(all="ignore"):
                got = judge.run_driver(case, ns)
        except Exception:  # noqa: BLE001  a crash loses the case's points
            return False
        if not _passes(case, got):
            return False
    return True


def _passes(case, got) -> bool:
    return scoring._passes(case, got, judge.reference_output(case)) if not isinstance(got, CaseError) else False


_INTERVENTION = re.compile(r"'(?P<name>[^']+)' fails(?P<local> with [^:']+?)? and passes with its (?P<feature>.+?) "
                           r"alone changed to ")
_ASSUMES = re.compile(r"instead passes \('(?P<name>[^']+)', (?P<feature>.+?) alone changed\)")
_PAIR = re.compile(r"'([^']+)' fails and '([^']+)' passes, and their inputs differ only|\('([^']+)' vs '([^']+)'\)")


def false_sentences(mutant: Mutant, graded) -> list[str]:
    """What the feedback of ``graded`` (:func:`grade`'s) claims about the mutant that is not true."""
    result, cases, outputs = graded
    exercise = EXERCISES[mutant.exercise]
    graded_at = [i for i, c in enumerate(cases) if scoring.PROBE not in c.features]
    by_name = {cases[i].name: i for i in graded_at}
    probes = {tuple(c.features[scoring.PROBE]): i for i, c in enumerate(cases) if scoring.PROBE in c.features}
    passed = {i: _passes(cases[i], outputs[i]) for i in range(len(cases))}
    wrong = []
    if result.score >= result.max_score - 1e-9:
        if result.feedback or any(r.diagnosis for r in result.cases):
            wrong.append(f"full marks, yet feedback: {result.feedback!r}")
        return wrong
    for row in result.cases:
        if not row.diagnosis:
            continue
        i = by_name[row.name]
        ways = judge.variants(judge.known_bugs(exercise)[row.diagnosis])
        expected = judge.reference_output(cases[i])
        held = False
        for way in ways:
            out = judge.bug_output(cases[i], exercise, way)
            if out is None or not scoring.matches(outputs[i], out, cases[i]):
                continue
            # That way shows nowhere the mutant passes.
            if all(not passed[j] or judge.bug_output(cases[j], exercise, way) is None
                   or scoring.compare_outputs(judge.bug_output(cases[j], exercise, way),
                                              judge.reference_output(cases[j]), cases[j], True) is None
                   for j in graded_at):
                held = True
        if not held:
            wrong.append(f"{row.name!r}: diagnosis {row.diagnosis[:60]!r} is not the mutant's output there "
                         f"(expected output {'exists' if expected is not None else 'missing'})")
    failing = [i for i in graded_at if not passed[i]]

    def fails_on(feature, value) -> bool:  # "Correct on <value>" is false when a failing case has it
        return any(cases[i].features.get(feature) == value for i in failing)

    for pattern in (_INTERVENTION, _ASSUMES):
        for found in pattern.finditer(result.feedback):
            name, feature, local = found["name"], found["feature"], found.groupdict().get("local")
            probe = probes.get((name, feature))
            if probe is None or passed[by_name[name]] or not passed[probe]:
                wrong.append(f"intervention on {feature!r} of {name!r} does not flip the outcome")
            elif not local and fails_on(feature, cases[probe].features[feature]):
                wrong.append(f"'Correct on {cases[probe].features[feature]}', yet a failing case has it")
    for found in _PAIR.finditer(result.feedback):
        bad, good = (found[1], found[2]) if found[1] else (found[3], found[4])
        f, p = by_name[bad], by_name[good]
        features = [{k: v for k, v in cases[i].features.items() if k not in scoring.summary.RESERVED} for i in (f, p)]
        differ = [k for k in features[0] if features[0][k] != features[1].get(k)]
        if passed[f] or not passed[p] or len(differ) != 1 or scoring.summary._inert(cases[p]):
            wrong.append(f"pair {bad!r} / {good!r} is no minimal pair of this mutant's outcomes")
        elif fails_on(differ[0], features[1][differ[0]]):
            wrong.append(f"'Correct on {features[1][differ[0]]}', yet a failing case has it")
    return wrong


_AXES = {"last axis": -1, "second-to-last axis": -2, "third-to-last axis": -3, "fourth-to-last axis": -4}
_AXIS = r"(?:its )?(last axis|second-to-last axis|third-to-last axis|fourth-to-last axis)(?: \(\w+\))?"
_RELATION = re.compile(r"Your (?P<label>[\w ]+?) is (?:the reference's )?(?P<what>.+?), on every case that returned it"
                       r"(?P<finite> with only finite entries)? \((?P<rows>\d+)(?: of the \d+)?, the (?P<differ>\d+) where "
                       r"it differs from the reference's among them\)\.")


def _relation_arrays(result, cases, outputs, label):
    """(got, want, case) as float arrays of every graded case that returned the array ``label`` names."""
    rows = []
    for case, got in zip(cases, outputs):
        if scoring.PROBE in case.features or not isinstance(got, dict):
            continue
        want = judge.reference_output(case)
        keys = [k for k in want if isinstance(want[k], np.ndarray) and not k.startswith("_")
                and k not in ("result_type", "len", "types", "args_after", "kwargs_after")]
        key = "out" if label == "result" else label
        if key not in keys or not isinstance(got.get(key), np.ndarray) or got[key].dtype.kind not in "biuf":
            continue
        rows.append((got[key].astype(float), want[key].astype(float), case))
    return rows


def _relation_holds(what, g, e, case) -> bool:
    """The claim ``what`` ("the reference's <what>") of one case, checked with the plainest code."""
    tol = dict(rtol=max(case.rtol, case.features.get(scoring.MATCH, {}).get("rtol", 0)),
               atol=max(case.atol, case.features.get(scoring.MATCH, {}).get("atol", 0)), equal_nan=True)
    sizes = case.inputs.get("sizes") or {}

    def same(a, b):
        return a.shape == b.shape and np.allclose(a, b, **tol)

    if what.startswith("a table like the reference's laid out in two halves"):
        n = e.shape[-1]
        j = np.arange(n // 2)
        unit = lambda a, x, y: np.allclose(a[:, x] ** 2 + a[:, y] ** 2, 1, atol=10 * (tol["rtol"] + tol["atol"]))  # noqa: E731
        return g.ndim == 2 and unit(g, j, j + n // 2) and unit(e, 2 * j, 2 * j + 1)
    if what.startswith("normalised over the whole array"):
        return abs(float(g.sum()) - 1) <= 1e-6 and any(np.allclose(e.sum(axis=a), 1, atol=1e-6) for a in range(e.ndim))
    found = re.match(r"multiplied by (.+)$", what)
    if found:
        name = found[1]
        q = {"−1 (the sign flipped)": -1.0, "2": 2.0, "1/2": 0.5}.get(name)
        if q is None:
            inverse, root = name.startswith("1/"), "√" in name
            n = sizes[name.replace("1/", "").replace("√", "")]
            q = (n ** 0.5 if root else n) ** (-1 if inverse else 1)
        return same(g, q * e)
    found = re.match(rf"with {_AXIS} and {_AXIS} swapped$", what)
    if found:
        return same(g, np.swapaxes(e, _AXES[found[1]], _AXES[found[2]]))
    found = re.match(r"with its axes in another order \((.+)\)$", what)
    if found:
        moved = re.findall(rf"{_AXIS} of yours is the {_AXIS} of the reference's", found[1])
        perm = list(range(e.ndim))
        for mine, theirs in moved:
            perm[_AXES[mine] + e.ndim] = _AXES[theirs] + e.ndim
        return sorted(perm) == list(range(e.ndim)) and same(g, e.transpose(perm))
    found = re.match(rf"with the entries along {_AXIS} (.+)$", what)
    if found:
        axis, how = _AXES[found[1]], found[2]
        n = e.shape[axis]
        j = np.arange(n)
        if how.startswith("in another order: the reference's even-numbered entries first"):
            order = np.concatenate([j[0::2], j[1::2]])
        elif how.startswith("in another order: the reference's two halves interleaved"):
            order = np.argsort(np.concatenate([j[0::2], j[1::2]]))
        elif how.startswith("in another order: each pair of neighbours swapped"):
            order = j ^ 1
        elif how == "in reverse order":
            order = j[::-1]
        else:
            k = int(re.match(r"rotated by (\d+): entry j of yours is entry j ([+−])", how)[1])
            order = (j + (k if "+ " in how.split("entry j")[2] else -k)) % n
        return same(g, np.take(e, order, axis=axis))
    found = re.match(rf"moved by one along {_AXIS}: entry t of yours is entry t ([−+]) 1", what)
    if found:
        axis = _AXES[found[1]]
        n = e.shape[axis]
        a, b = (np.arange(1, n), np.arange(n - 1)) if found[2] == "−" else (np.arange(n - 1), np.arange(1, n))
        return g.shape == e.shape and same(np.take(g, a, axis=axis), np.take(e, b, axis=axis))
    found = re.match(rf"with (entries missing|extra entries) at the (end|start) along {_AXIS}, the rest the same", what)
    if found:
        axis = _AXES[found[3]]
        short, long_ = (g, e) if found[1] == "entries missing" else (e, g)
        m, n = short.shape[axis], long_.shape[axis]
        if short.ndim != long_.ndim or m >= n:
            return False
        return same(short, np.take(long_, np.arange(m) if found[2] == "end" else np.arange(n - m, n), axis=axis))
    return False


_COUNT = re.compile(r" \(in (?P<n>\d+) of (?P<m>\d+) failing cases")


def counted_sentences(words: str):
    """``(text, n, m)`` of each "text (in n of m failing cases...)." sentence: they open the summary,
    one after the other; each ends where the parenthesis its count opens closes."""
    at = 0
    while True:
        found = _COUNT.search(words, at)
        if not found:
            return
        depth, end = 0, found.start() + 1
        for end in range(found.start() + 1, len(words)):
            depth += {"(": 1, ")": -1}.get(words[end], 0)
            if depth == 0:
                break
        yield words[at:found.start()].strip(), int(found["n"]), int(found["m"])
        at = end + 2  # past ")."


def false_aggregates(graded) -> list[str]:
    """Each sentence that counts cases counts only the cases it is true of: "X (in N of M failing
    cases)" has N failing cases whose own feedback is X, M failing cases in all; "the failing ones
    are on the rungs R" has every failing case on one of the rungs R names."""
    from autograder.said import plain

    result, cases, outputs = graded
    exercise = EXERCISES[result.id]
    words = plain(result.feedback or "")
    rows = [r for r in result.cases]
    failing = [r for r in rows if not r.passed]
    wrong = []
    for text, n, m in counted_sentences(words):
        if m != len(failing):
            wrong.append(f"{text[:50]!r}: 'of {m} failing cases', {len(failing)} fail")
        general = next((k for k, w in scoring.MISMATCH_WORDS.items() if text.lower() == w.lower()), None)
        raised = re.match(r"Raised ([\w.]+)(?: at (\S+) line (\d+))?$", text)
        if general:  # "<the kind of mismatch> (in N of M ...; 'case': its own words)"
            own = [r for r in failing if not r.diagnosis and r.cause.get("kind") == "mismatch" and r.cause.get("what") == general]
        elif re.match(r"Your call to \w+(?: at \S+ line \d+)? passed arguments it cannot take$", text):
            own = [r for r in failing if not r.diagnosis and "passed arguments it cannot take" in plain(r.feedback or "")]
        elif raised:
            own = [r for r in failing if not r.diagnosis and r.cause.get("type") == raised[1]
                   and (not raised[2] or (r.cause.get("file"), str(r.cause.get("line"))) == (raised[2], raised[3]))]
        else:
            own = [r for r in failing if plain(r.feedback or "").lower().startswith(text.lower().rstrip("."))
                   or (r.diagnosis and text.lower().startswith(plain(r.diagnosis).lower()[:60]))]
        if len(own) != n:
            wrong.append(f"{text[:50]!r}: 'in {n} of {m}', true of {len(own)}")
    among = re.search(r"the failing ones are on the rungs? (.+?)\.(?: |$)", words)
    if among:
        names = {name for name, _ in exercise.ladder if name in among[1]}
        rung_of = {c.name: c.rung for c in cases if scoring.PROBE not in c.features}
        off = [r.name for r in failing if exercise.ladder[rung_of[r.name]][0] not in names]
        if off:
            wrong.append(f"'the failing ones are on the rungs {among[1][:40]}', yet {off[:2]} is not")
    return wrong


def false_relations(graded) -> list[str]:
    """Each "on every case that returned it" relation checked on every such case, and its counts."""
    result, cases, outputs = graded
    wrong = []
    for found in _RELATION.finditer(result.feedback or ""):
        rows = _relation_arrays(result, cases, outputs, found["label"])
        if found["finite"]:
            rows = [r for r in rows if np.all(np.isfinite(r[0]))]
        differ = [r for r in rows if not (r[0].shape == r[1].shape and np.allclose(
            r[0], r[1], rtol=r[2].rtol, atol=r[2].atol, equal_nan=True))]
        if int(found["rows"]) != len(rows) or int(found["differ"]) > len(differ):
            wrong.append(f"relation counts {found['rows']}/{found['differ']}, cases show {len(rows)}/{len(differ)}")
        bad = [c.name for g, e, c in rows if not _relation_holds(found["what"], g, e, c)]
        if bad:
            wrong.append(f"relation {found['what'][:60]!r} does not hold on {bad[:2]}")
    return wrong


def named(result) -> bool:
    """Whether the feedback names a cause: a known bug, a relation between the output and the
    reference's that holds on every case, or a feature blamed by an intervention or a pair."""
    return any(r.diagnosis for r in result.cases) or bool(
        re.search(r", on every case that returned it|your code raises .*(?:instead passes|, passes \()",
                  result.feedback or ""))


def located(result) -> bool:
    """Whether the feedback says where the code fails without naming what: an intervention or a
    minimal pair of cases (which inputs fail), or a relation said of the failing cases only."""
    return bool(re.search(r"alone changed to |, and their inputs differ only in |where your \w+ differs from",
                          result.feedback or ""))


def _search_off():
    """The catalogue and the relations turned off (for timing what the search costs)."""
    saved = (catalogue.of, scoring.relations.found)
    catalogue.of = lambda exercise_id: {}
    scoring.relations.found = lambda cases, outputs, expected: []
    return saved


def _search_on(saved):
    catalogue.of, scoring.relations.found = saved


def run(chosen: list[Mutant], seconds: int = 20, timed: bool = False) -> dict:
    """Grade ``chosen``: per exercise ``{"mutants", "killed", "named", "truly" (named, and no false
    sentence), "slow", "false": [...], "unnamed": [...]}``."""
    table: dict = {}
    for mutant in chosen:
        row = table.setdefault(mutant.exercise, {"mutants": 0, "killed": 0, "named": 0, "truly": 0, "located": 0,
                                                 "slow": 0, "false": [], "unnamed": [], "seconds": 0.0})
        row["mutants"] += 1
        started = time.perf_counter()
        graded = grade(mutant, seconds)
        if timed:  # the same grading without the search: what the catalogue and the relations cost
            row["seconds"] += time.perf_counter() - started
            saved = _search_off()
            try:
                started = time.perf_counter()
                grade(mutant, seconds)
                row["seconds_off"] = row.get("seconds_off", 0.0) + time.perf_counter() - started
            finally:
                _search_on(saved)
        if graded is None:
            row["slow"] += 1
            continue
        result = graded[0]
        wrong = false_sentences(mutant, graded) + false_relations(graded) + false_aggregates(graded)
        if result.score < result.max_score - 1e-9:
            row["killed"] += 1
            row["named"] += named(result)
            row["truly"] += named(result) and not wrong  # every sentence of it true
            row["located"] += located(result) and not named(result)
            if not named(result):
                row["unnamed"].append(f"{mutant.what}: {result.feedback}")
        row["false"] += [f"{mutant.what}: {w}" for w in wrong]
    return table
