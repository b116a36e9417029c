"""An exercise's summary: every cause of its failing cases once, with how many cases it
explains (:func:`sentences`), what minimal pairs of cases isolate (:func:`isolated`), how the
parts fare (:func:`by_part`), facts about the learner's failing line (:func:`line_facts`) and
the rungs of the case ladder climbed (:func:`climbed`)."""
from __future__ import annotations

import re

from ..said import slot
from ..spec import Case, CaseError
from .causes import MISMATCH_WORDS, sentence
from .diagnoses import MATCH


def _listed(items: list[str], last: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {last} " + items[-1]


def _raised_at(error: CaseError | None) -> str | None:
    """``raises ValueError at layer.py line 23 (`k = ...`)`` of an exception raised by the learner's line
    (``passes f arguments it cannot take at ...`` where a used exercise refused its arguments)."""
    if error is None or error.kind != "exception":
        return None
    found = re.match(r"(\w+)\b.*\((\w+\.py), line (\d{1,7})(?:: (.*))?\)$", error.message or "", re.S)  # a line number, bounded
    if not found:
        return None
    kind, file, line, _ = found.groups()
    rejected = _REJECTED.match(error.message or "")
    # The type and the file are the child's to say; the line's code is the grader's own read of
    # the submitted source at that line (``exchange.held_to_facts``), never the child's words.
    code = getattr(error, "source", "")
    if rejected:  # the grader's own refusal of a used exercise's arguments: not an exception of the learner's code
        verb = f"passes {slot(rejected[1], 60)} arguments it cannot take at "
    else:
        verb = f"raises {slot(kind, 60)} at "
    if not code:  # no such line in the submitted file: the number is the child's word alone, not said
        return f"{verb}{slot(file, 40)}"
    return f"{verb}{slot(file, 40)} line {line} (`{slot(code, 120)}`)"


# A call of the learner's to a used exercise, answered by the reference, that could not take its
# arguments (``causes._rejected_call``): the RuntimeError is the grader's, the learner's own
# function would raise something else, so its type is never said as theirs.
_REJECTED = re.compile(r"RuntimeError: the reference (\w+) raised ")


# A case's features key marking it as an intervention: ``[name of the graded case it copies,
# the feature changed]``. Its outcome words a cause and never earns a point (``scoring.score``).
PROBE = "intervention on"
# A case's features key marking a case that never reaches the code under test's arithmetic
# (a call that must raise, zero new tokens, an empty input): it passes whatever that arithmetic
# does, so it is never the passing side of a pair.
INERT = "runs no code under test"
# Features keys that say how a case is used, not what its inputs are.
RESERVED = ("part", PROBE, INERT, MATCH)


def probe_outcomes(cases: list[Case], outputs: list, expected: list, passes) -> dict:
    """``{(graded case's name, feature): (passed, intervention case)}`` of the cases marked
    :data:`PROBE`, by ``passes(case, output, expected)``."""
    found = {}
    for case, got, want in zip(cases, outputs, expected):
        marked = (case.features or {}).get(PROBE)
        if marked and getattr(got, "evidence", True):  # an intervention never run (or cut short) shows nothing
            found[tuple(marked)] = (passes(case, got, want), case)
    return found


def _error(output) -> CaseError | None:
    return output if isinstance(output, CaseError) else None


def _inert(case: Case) -> bool:
    return case.driver.endswith("_raises") or bool((case.features or {}).get(INERT))


def isolated(cases: list[Case], passed: list[bool], outputs: list, hints: dict, named: set,
             probes: dict | None = None) -> list[str]:
    """What interventions and minimal pairs show about the failing cases no known bug explains
    (``named``). With interventions (``probes``: a failing case's copy with one feature changed,
    run on the learner's code), a feature is blamed only where its copy passes: the outcome
    flips with that feature alone. Without them, a feature in which such a case differs from a
    passing case alone (never one that must raise or runs nothing of the learner's) names it.
    Each sentence names the assumption when the failing case raised at a line of the learner's.
    Without either, which features those failing cases share."""
    features = [{k: v for k, v in (c.features or {}).items() if k not in RESERVED} for c in cases]
    # A case the grader never ran, or whose time the cases before it spent (``CaseError.evidence``),
    # shows nothing about its inputs: never a pair's half.
    failing = [i for i, ok in enumerate(passed) if not ok and i not in named and getattr(outputs[i], "evidence", True)]
    every_failing = [i for i, ok in enumerate(passed) if not ok]  # "Correct on G": none of them has G
    passing = [i for i, ok in enumerate(passed) if ok and not _inert(cases[i])]
    probes = probes or {}
    out = []
    if probes:
        flips: dict = {}  # feature -> [(failing case, intervention case)] where the outcome flips
        for f in failing:
            for feature in features[f]:
                ok, probe = probes.get((cases[f].name, feature), (False, None))
                if ok:
                    flips.setdefault(feature, []).append((f, probe))
        for feature, found in list(flips.items())[:3]:
            f, probe = found[0]
            # "Correct on G" only where no failing case has G itself (an in-place write at angle 0
            # changes nothing, yet the code is not right at offset 0): else what the one case shows.
            if _fails_on(features, every_failing, feature, {p.features[feature] for _, p in found}):
                # A failing case has the value that passes here: the flip shows something of that one
                # input (every angle is 0 at position 0, whatever the frequency), not what the code
                # gets wrong. Nothing is said of it.
                continue
            bad = _listed(list(dict.fromkeys(features[g][feature] for g, _ in found)), "or")
            good = _listed(list(dict.fromkeys(p.features[feature] for _, p in found)), "or")
            first_bad = features[f][feature]
            hint = _hint(hints, first_bad, feature, outputs[f])
            raised = _raised_at(_error(outputs[f]))
            if raised:  # the values with which it raises the same, at the same line
                bad = _listed(list(dict.fromkeys(features[g][feature] for g, _ in found
                                                 if _raised_at(_error(outputs[g])) == raised)), "or")
                # The code's own trace (the line that raised) with the flip: what the hint is about.
                out.append(f"With {bad} your code {raised}, and the same case with {good} instead passes "
                           f"({cases[f].name!r}, {feature} alone changed)" + (f"; {hint}." if hint else "."))
            else:
                # Which inputs fail says where, not what: an observation, with no hint to change anything.
                out.append(f"{cases[f].name!r} fails with {first_bad} and passes with its {feature} alone changed to "
                           f"{probe.features[feature]}.")
        if out:
            return out
    pairs: dict = {}  # feature -> [(passing case, failing case)], in the order found
    for f in failing:
        for p in passing:
            if not features[f] or set(features[f]) != set(features[p]):
                continue
            differ = [k for k in features[f] if features[f][k] != features[p][k]]
            if len(differ) == 1 and not _probed(probes, cases[f].name, differ[0]):
                pairs.setdefault(differ[0], []).append((p, f))
    found_any = bool(pairs)
    pairs = {k: found for k, found in pairs.items()
             if not _fails_on(features, every_failing, k, {features[p][k] for p, _ in found})}
    if found_any and not pairs:  # pairs exist, but another failing case has the good value: say nothing
        return []
    if pairs:
        for feature, found in list(pairs.items())[:3]:
            p, f = found[0]
            bad = features[f][feature]
            # Every value of the feature that passes where this one fails, the rest alike.
            good = _listed(list(dict.fromkeys(features[q][feature] for q, g in found if features[g][feature] == bad)),
                           "or")
            hint = _hint(hints, bad, feature, outputs[f])
            raised = _raised_at(outputs[f] if isinstance(outputs[f], CaseError) else None)
            if raised:
                out.append(f"With {bad} your code {raised}, while a case with {good}, other features the "
                           f"same, passes ({cases[f].name!r} vs {cases[p].name!r})" + (f"; {hint}." if hint else "."))
            else:
                # The other values the failing cases have: the pair's own is not what they share.
                others = list(dict.fromkeys(features[g][feature] for g in failing
                                            if features[g].get(feature, bad) != bad))
                # A passing case with the failing one's value too: that value alone does not fail.
                also = next((q for q in passing if features[q].get(feature) == bad), None)
                notes = ([f"other failing cases have {_listed(others)}"] if others else []) + (
                    [f"{bad} passes in {cases[also].name!r}"] if also is not None else [])
                out.append(f"{cases[f].name!r} fails and {cases[p].name!r} passes, and their inputs differ only in the "
                           f"{feature}: {bad} where the passing one has {features[p][feature]}" +
                           (f" ({'; '.join(notes)})." if notes else "."))
        return out
    # Only where some passing case ran the learner's code (a case that must raise passes without
    # it); "no passing case has" is then checked against every passing case.
    if not failing or not passing or not all(features[i] for i in failing):
        return []
    every = [i for i, ok in enumerate(passed) if ok]
    shared = [v for k, v in features[failing[0]].items()
              if all(features[i].get(k) == v for i in failing) and not any(features[i].get(k) == v for i in every)]
    if not shared:
        return []
    which = "Every failing case" if not named else "Every failing case no known bug above explains"
    if len(failing) + len(named) < len(every_failing):  # some failing cases never ran, or not to their end
        which += " that ran to its own end"
    return [f"{which} has {_listed(shared)}, which no passing case has; no passing case differs from such a "
            f"failing case in a single feature, so these cases do not tell which one matters."]


def _hint(hints: dict, value, feature: str, output) -> str:
    """What the code must do where ``feature`` is ``value``; nothing for a case that ran out of time
    (what is slow there is not what the hint is about)."""
    if isinstance(output, CaseError) and output.kind == "timeout":
        return ""
    return hints.get(value) or hints.get(feature) or ""


def _fails_on(features: list[dict], failing: list[int], feature: str, good: set) -> bool:
    """Whether some failing case has one of the ``good`` values of ``feature``."""
    return any(features[i].get(feature) in good for i in failing)


def _probed(probes: dict, name: str, feature: str) -> bool:
    """Whether an intervention on ``feature`` of case ``name`` ran (and, having come here, did
    not flip the outcome): then no pair may blame that feature either."""
    return (name, feature) in probes


def by_part(cases: list[Case], passed: list[bool | None], probes: dict | None = None) -> str:
    """``By part: forward passes; masks: 2 of 4 cases fail; ...`` for cases that name the part of
    the learner's code they check (``features["part"]``), in the order first met. A failing case
    whose copy without another part's input passes (an intervention on the feature named for
    that part: a masks case's head_mask) counts against that part, not its own. ``passed[i]``
    None: case i shows nothing (not run, or cut short by time others spent); a part with such a
    case and no failing one is not said to pass."""
    parts: dict = {}
    names = {(c.features or {}).get("part") for c in cases} - {None}
    for case, ok in zip(cases, passed):
        part = (case.features or {}).get("part")
        if part and ok is False:
            part = next((f for (name, f), (flipped, _) in (probes or {}).items()
                         if name == case.name and flipped and f in names), part)
        if part:
            parts.setdefault(part, []).append(ok)
    if not parts or all(all(ok is True for ok in oks) for oks in parts.values()):
        return ""

    def said(part, oks):
        failing, unknown = oks.count(False), oks.count(None)
        if failing:
            return f"{part}: {failing} of {len(oks)} cases fail"
        if unknown:
            return f"{part}: no case fails of those that ran ({unknown} of {len(oks)} did not)"
        return f"{part} passes"

    return "By part: " + "; ".join(said(part, oks) for part, oks in parts.items()) + "."


# Facts about a construct on the line where the learner's code raised, true whatever the cause
# (said after the crash, never as a diagnosis): (pattern in the quoted line, sentence).
LINE_FACTS = (
    (re.compile(r"\b(\w+)\.T\b"), "`{0}.T` reverses every axis of an array with more than two axes ((B, L, d) "
                                    "becomes (d, L, B)); to swap the last two only, use np.swapaxes({0}, -1, -2) "
                                    "({0}.transpose(-2, -1) in torch)"),
)


def line_facts(errors: list[CaseError]) -> list[str]:
    """Facts about the line of the learner's code that raised, read from the submitted source by
    the grader itself at the line the error names (``CaseError.source``), never from the child's
    message (whose words could hold anything, a hidden case's inputs included)."""
    facts = []
    for error in errors:
        code = getattr(error, "source", "") if error.kind == "exception" else ""
        for pattern, text in LINE_FACTS if code else ():
            match = pattern.search(code)
            if match:
                fact = sentence(text.format(*(slot(g, 40) for g in match.groups()))) + "."
                if fact not in facts:
                    facts.append(fact)
    return facts


def sentences(failed: list[tuple], ladder, rungs: dict[int, list[bool]], isolated: list[str] | None,
              by_part: str = "", facts: list[str] = ()) -> str:
    """Every cause once, with how many failing cases it explains: the known bugs first (they name
    the mistake), then crashes and mismatches, each the most frequent first; then what minimal
    pairs of cases isolate (``isolated``; None when the cases have no features: then only which
    rungs of the case ladder pass, never a cause)."""
    groups: dict = {}
    for key, text, name in failed:
        group = groups.setdefault(key, [text, [], (key[0] != "bug", key[0] == "not run"), key, []])
        group[1].append(name)
        group[4].append(text)
    parts = []
    for text, names, _, key, texts in sorted(groups.values(), key=lambda g: (g[2], -len(g[1]))):  # stable: ties keep the order
        which = f": {'; '.join(names)}" if len(names) <= 2 and len(groups) > 1 else ""
        if len(set(texts)) > 1 and _general(key):
            # The cases of one cause say it in their own words (another row, another size in the
            # message): the count goes with what all of them share, the words with one case only.
            parts.append(f"{sentence(_general(key))} (in {len(names)} of {len(failed)} failing cases{which}; "
                         f"{names[0]!r}: {text.rstrip('.')}).")
            continue
        parts.append(f"{sentence(text)} (in {len(names)} of {len(failed)} failing cases{which}).")
    parts += list(facts)
    if isolated is not None:
        return " ".join(parts + isolated + ([by_part] if by_part else []))
    rungs_passed = climbed(ladder, rungs)
    return " ".join(parts + ([rungs_passed] if rungs_passed else []))


def _general(key: tuple) -> str:
    """What every failing case of a cause shares (``causes.cause``'s key), in the grader's words:
    the kind of mismatch, or the exception's type and the line that raised it."""
    if key[0] == "mismatch":
        return MISMATCH_WORDS.get(key[1], "")
    if key[0] == "rejected":
        where = key[2]
        return f"your call to {slot(key[1], 60)}" + (f" at {slot(where[0], 40)} line {where[1]}" if where else "") + (
            " passed arguments it cannot take")
    if key[0] == "exception" and key[1]:
        where = key[2]
        return f"raised {slot(key[1], 60)}" + (f" at {slot(where[0], 40)} line {where[1]}" if where else "")
    return ""


def climbed(ladder, rungs: dict[int, list[bool]]) -> str:
    """Which rungs of the case ladder pass, when every case of the simpler rungs passes and the
    first failing case is on the next one (in the exercise's own words, no case's values, never a
    cause: the failing cases may differ from the passing ones in more than the rung), else ""."""
    first_bad = min((r for r, ok in rungs.items() if not all(ok)), default=0)
    if not (0 < first_bad < len(ladder) and all(all(rungs[r]) for r in rungs if r < first_bad)):
        return ""
    passed = _listed([f"'{name}'" for name, _ in ladder[:first_bad]])  # the rungs climbed so far, simplest first
    # "Among those with ...": every rung some failing case is on, not only the first (an odd-d
    # case failing beside the positions in the thousands is among neither of the other).
    failing = [f"'{ladder[r][0]}'" for r in sorted(rungs) if not all(rungs[r]) and r < len(ladder)]
    if len(failing) < sum(1 for r in rungs if not all(rungs[r])):
        return ""
    # Said of the rungs (the grader's grouping of its cases), never "every case with <a rung's
    # words>": a failing case on a later rung has the earlier rungs' features too.
    return (f"Every case on the rung{'s' if first_bad > 1 else ''} {passed} passes; the failing ones are on the "
            f"rung{'s' if len(failing) > 1 else ''} {_listed(failing, 'or')}.")
