"""Scoring: the one place that compares a learner's output with the expected one and puts it in words.

Both graders use it, so that the same submission on the same case reads the same:
``grading/judge.py`` (the real grade: expected outputs from the solutions, known bugs run
live) and ``selfcheck.py`` (the learner release: expected outputs and the known bugs' outputs
stored). What differs between them is only where the expected and the bugs' outputs come from.

Reading order: compare two outputs (:func:`compare_outputs`), check a case's properties
(:func:`check_case`), then :func:`score` an exercise: statuses, the causes of the failing
cases grouped (each named once, with how many cases it explains), the rung of the case
ladder where the code stops being right, and the summary sentence.
"""
from __future__ import annotations

import re

import numpy as np

from .compare import array_index, compare_outputs, number
from .spec import INFO, Case, CaseError, CaseResult, ExerciseResult

# What a CaseError of each kind tells the learner; {} is the pipeline's message (for an
# exception: "ValueError: message (attention.py, line 12)").
ERROR_FEEDBACK = {
    "not_implemented": "not attempted: the stub still raises NotImplementedError",
    "missing": "not attempted: {}",
    "import": "not graded: your file does not import: {}",
    "exception": "raised {}",
    "timeout": "timed out: {}",
    "memory": "ran out of memory: {}",
    "crash": "the process running your code died: {}",
    "garbage": "returned something that is not plain data: {}",
    "harness": "the grader's harness failed before your code's result existed: {}",
}
NOT_ATTEMPTED = ("not_implemented", "missing")
ERROR_KINDS = ("import", "crash", "memory")


def points(x: float) -> str:
    """Points as a report shows them: ``7`` or ``3.43``."""
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}"


def round_points(x: float, places: int = 2) -> float:
    """The one rounding rule of every file that shows points (grades, Canvas, feedback, the
    class summary): to ``places`` decimals, halves away from zero, from the number as printed
    (``repr``), so 2.675 gives 2.68 where ``round`` gives 2.67. A total shown beside its parts
    is :func:`shown_total` of them, never the unrounded sum rounded: the parts then add up to
    it in every file."""
    from decimal import ROUND_HALF_UP, Decimal

    step = Decimal(1).scaleb(-places)
    return float(Decimal(repr(float(x))).quantize(step, ROUND_HALF_UP)) + 0.0  # + 0.0: no "-0"


def shown_total(parts, places: int = 2) -> float:
    """The total of parts as shown: the sum of the rounded parts (exact at ``places``)."""
    return round_points(sum(round_points(p, places) for p in parts), places)


def shown_points(scores) -> tuple[list[float], float]:
    """Parts and total as every score a person reads shows them (terminal, Gradescope,
    gradebook, feedback): :func:`round_points` of each part, and :func:`shown_total`, so the
    shown parts always add up to the shown total.

    ``shown_points([3.3333333, 4.4444444, 5.0]) == ([3.33, 4.44, 5.0], 12.77)``"""
    scores = list(scores)
    return [round_points(s) for s in scores], shown_total(scores)


# --- properties --------------------------------------------------------------------------------

def _probability_key(expected):
    return "weights" if "weights" in expected else "out"


def _label(key):
    return "the result" if key == "out" else key


def case_mask(case: Case, shape):
    """The case's own mask broadcast to ``shape`` (the weights'), or None when it has none.

    The mask is the ``mask`` input, or the called function's argument where its exercise
    declares it (``spec.ExerciseInfo.mask_position``); a layer's 3-D mask ``(B, Lq, Lk)`` is
    shared by the heads (a layer driver's, or ``ExerciseInfo.heads_share_mask``), so it gains
    the head axis first."""
    inputs = case.inputs
    called = INFO.get(inputs.get("function"))
    mask = inputs.get("kwargs", {}).get("mask", inputs.get("mask"))
    if mask is None and called is not None and called.mask_position is not None:
        mask = inputs["args"][called.mask_position]
    if mask is None:
        return None
    mask = np.asarray(mask).astype(bool)
    layer = case.driver.startswith("mha_") or (called is not None and called.heads_share_mask)
    if layer and mask.ndim == 3 and len(shape) == 4:
        mask = mask[:, None]
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        return None


def _rows_sum_to_one(case, got, expected):
    key = _probability_key(expected)
    g, e = got.get(key), expected.get(key)
    if not (isinstance(g, np.ndarray) and g.shape == e.shape and g.dtype.kind == "f"):
        return None
    axis = case.inputs.get("kwargs", {}).get("axis", -1)
    sums, want = g.astype(np.float64).sum(axis), e.astype(np.float64).sum(axis)
    bad = np.flatnonzero(~np.isclose(sums, want, rtol=0, atol=max(10 * case.rtol, 1e-6)))
    if not bad.size:
        return None
    at = array_index(bad[0], sums.shape)
    if want.flat[bad[0]] == 0:
        return (f"the fully masked row of {_label(key)} at index {at} sums to {number(sums.flat[bad[0]])}, "
                f"expected all zeros")
    return f"the rows of {_label(key)} do not sum to one: the row at index {at} sums to {number(sums.flat[bad[0]])}"


def _masked_exactly_zero(case, got, expected):
    key = _probability_key(expected)
    g = got.get(key)
    if not isinstance(g, np.ndarray) or g.shape != getattr(expected.get(key), "shape", None):
        return None
    mask = case_mask(case, g.shape)
    if mask is None:  # no mask in this case: nothing is masked
        return None
    bad = np.flatnonzero(~mask & (g != 0))
    if not bad.size:
        return None
    at = array_index(bad[0], g.shape)
    return f"{_label(key)} must be exactly 0 at masked keys: got {number(g.flat[bad[0]])} at index {at}"


def _dropout_in_training(case, got, expected):
    train, evaluated = got.get("_out_train"), got.get("out")
    if isinstance(train, np.ndarray) and isinstance(evaluated, np.ndarray) and train.shape == evaluated.shape:
        if np.allclose(train, evaluated):
            return "in training mode the output equals the eval-mode output: dropout is not applied to the weights"
    return None


PROPERTIES = {
    "rows_sum_to_one": _rows_sum_to_one,
    "masked_exactly_zero": _masked_exactly_zero,
    "dropout_in_training": _dropout_in_training,
    "inputs_unchanged": lambda case, got, expected: None,  # compared with the outputs, see compare_outputs
}


def check_case(case: Case, got, expected) -> list[str]:
    """The reasons a case fails, most telling first (properties before value mismatches)."""
    if not isinstance(got, dict):
        return [f"returned data of the wrong form ({type(got).__name__})"]
    reasons = [m for m in (PROPERTIES[p](case, got, expected) for p in case.properties) if m]
    message = compare_outputs(got, expected, case, check_inputs="inputs_unchanged" in case.properties)
    return reasons + [message] if message else reasons


def matches(got, bug_output, case: Case) -> bool:
    """Whether the learner's output is the known bug's on this case (values, not properties)."""
    try:
        return compare_outputs(got, bug_output, case, True) is None
    except Exception:  # malformed learner data matches no bug
        return False


def _same_form(got, bug_output) -> bool:
    """Whether the learner's output has the bug's arrays in the same shapes and dtypes: then a
    difference in values means the learner's code computes something else than the bug."""
    if not isinstance(got, dict) or not isinstance(bug_output, dict):
        return False
    for key, value in bug_output.items():
        if isinstance(value, np.ndarray) and not key.startswith("_"):
            mine = got.get(key)
            if not (isinstance(mine, np.ndarray) and mine.shape == value.shape and mine.dtype == value.dtype):
                return False
    return True


def stated_diagnoses(cases: list[Case], outputs: list, passed: list[bool], bugs) -> dict[str, list[int]]:
    """``{diagnosis: [failing cases it explains]}``, for the diagnoses that hold as claims.

    ``bugs(i)`` maps each known bug that shows on case i (its output differs from the expected
    one) to its outputs there, one per way of writing it (None where that way does not show);
    ``bugs(i, diagnosis)`` is that one bug's entry (None when it does not show), so that a
    grader running the bugs live runs only those a claim needs.
    A way of writing a bug holds when the learner's output is that way's on some failing
    cases, the learner passes no case where it shows (right where the bug is wrong: not that
    bug), and the learner's output differs from it, in the same form, on no more cases than it
    matches (one match among many differences is a coincidence). Only then is the sentence
    "your output matches ..." stated, and only on the cases it matches."""
    failing = [i for i, ok in enumerate(passed) if not ok and not isinstance(outputs[i], CaseError)]
    support: dict = {}
    for i in failing:
        for diagnosis, outs in bugs(i).items():
            for v, out in enumerate(outs):
                if out is not None and matches(outputs[i], out, cases[i]):
                    support.setdefault((diagnosis, v), []).append(i)
    stated: dict[str, list[int]] = {}
    for (diagnosis, v), explained in support.items():
        against = 0
        for j, got in enumerate(outputs):
            if j in explained or isinstance(got, CaseError):
                continue
            outs = bugs(j, diagnosis) or ()
            out = outs[v] if v < len(outs) else None
            if out is None:
                continue
            if passed[j]:
                break
            against += _same_form(got, out)
        else:
            if against <= len(explained):
                stated[diagnosis] = sorted(set(stated.get(diagnosis, [])) | set(explained))
    return stated


# --- an exercise's verdict ---------------------------------------------------------------------

def status(kinds: list[str], n_cases: int, score_: float, max_score: float) -> str:
    """all cases "not_implemented"/"missing" -> not attempted; any timeout -> timed out;
    import/crash/memory -> error; else passed / partial / failed by score."""
    if kinds and len(kinds) == n_cases and all(k in NOT_ATTEMPTED for k in kinds):
        return "not attempted"
    if "timeout" in kinds:
        return "timed out"
    if any(k in ERROR_KINDS for k in kinds):
        return "error"
    if score_ >= max_score - 1e-9:
        return "passed"
    return "partial" if score_ > 0 else "failed"


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def error_feedback(error: CaseError) -> str:
    """A CaseError in words; an exception without a message says so instead of showing ':  '."""
    message = re.sub(r"^(\w+):\s*(?=\(|$)", r"\1 (with no message) ", error.message or "").strip()
    if error.kind == "import":  # "masking.py: SyntaxError: ..." -> which file, then why
        found = re.match(r"(\w+\.py): (.*)$", message, re.S)
        if found:
            return f"not graded: your file {found[1]} does not import: {found[2]}"
    if error.kind == "exception":
        rejected = _rejected_call(message)
        if rejected:
            return rejected
    return ERROR_FEEDBACK.get(error.kind, error.kind + ": {}").format(message or "no details")


def _rejected_call(message: str) -> str | None:
    """A call of the learner's to a used exercise (answered by the reference) whose arguments it
    cannot take, worded from the learner's side: what the call passed and what it lacks."""
    found = re.match(r"RuntimeError: the reference (\w+) raised (.*?)(?: \((\w+\.py), line (\d+)(?:: (.*))?\))?$",
                     message, re.S)
    if not found:
        return None
    name, why, file, line, code = found.groups()
    where = f" at {file} line {line}" + (f" (`{code}`)" if code else "") if file else ""
    return f"your call to {name}{where} passed arguments it cannot take: {why}"


# The kind of a mismatch, from the sentence that states it (grouping causes, never shown).
_KINDS = (("has shape", "shape"), ("dtype", "dtype"), (" is float", "dtype"), ("has NaN", "NaN"),
          ("has inf", "inf"), ("exactly 0 at masked", "masked"), ("fully masked row", "empty rows"),
          ("sum to one", "rows"), ("modified in place", "inputs"), ("returned", "form"),
          ("no gradient", "gradient"), ("expected an", "form"), ("could not run after your", "harness"))


def _cause(result: CaseResult, error: CaseError | None, reasons: list[str]):
    """(key, text): what makes one failing case fail, the key shared by the cases with the same cause."""
    if result.diagnosis:
        return ("bug", result.diagnosis), sentence(result.diagnosis)
    if error is not None:
        if error.kind == "exception":  # the same exception type at the same line of the learner's code
            where = re.search(r"\((\S+), line (\d+)", error.message or "")
            return ("exception", (error.message or "").split(":")[0], where and where.groups()), result.feedback
        return (error.kind,), result.feedback
    first = reasons[0] if reasons else result.feedback
    kind = next((k for words, k in _KINDS if words in first), "values")
    return ("mismatch", kind, first.split(" ")[0]), first


def _listed(items: list[str], last: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {last} " + items[-1]


def _raised_at(error: CaseError | None) -> str | None:
    """``ValueError at layer.py line 23 (`k = ...`)`` of an exception raised by the learner's line."""
    if error is None or error.kind != "exception":
        return None
    found = re.match(r"(\w+)\b.*\((\w+\.py), line (\d+)(?:: (.*))?\)$", error.message or "", re.S)
    if not found:
        return None
    kind, file, line, code = found.groups()
    return f"{kind} at {file} line {line}" + (f" (`{code}`)" if code else "")


def _isolated(cases: list[Case], passed: list[bool], outputs: list, hints: dict, named: set) -> list[str]:
    """What minimal pairs show about the failing cases no known bug explains (``named``): for
    each feature in which such a case differs from a passing case alone, a sentence naming it
    (and the assumption, when the failing case raised at a line of the learner's). Without such
    a pair, which features those failing cases share."""
    features = [{k: v for k, v in (c.features or {}).items() if k != "part"} for c in cases]
    failing = [i for i, ok in enumerate(passed) if not ok and i not in named]
    passing = [i for i, ok in enumerate(passed) if ok]
    pairs: dict = {}  # feature -> [(passing case, failing case)], in the order found
    for f in failing:
        for p in passing:
            if not features[f] or set(features[f]) != set(features[p]):
                continue
            differ = [k for k in features[f] if features[f][k] != features[p][k]]
            if len(differ) == 1:
                pairs.setdefault(differ[0], []).append((p, f))
    if pairs:
        out = []
        for feature, found in list(pairs.items())[:3]:
            p, f = found[0]
            bad = features[f][feature]
            # Every value of the feature that passes where this one fails, the rest alike.
            good = _listed(list(dict.fromkeys(features[q][feature] for q, g in found if features[g][feature] == bad)),
                           "or")
            hint = hints.get(bad) or hints.get(feature) or ""
            raised = _raised_at(outputs[f] if isinstance(outputs[f], CaseError) else None)
            if raised:
                out.append(f"Your code assumes {good}: with {bad} it raises {raised}, while a case with {good}, other "
                           f"features the same, passes ({cases[f].name!r} vs {cases[p].name!r})"
                           + (f"; {hint}." if hint else "."))
            else:
                out.append(f"Correct on {good}; fails on {bad}, other features the same ({cases[f].name!r} fails, "
                           f"{cases[p].name!r} passes)" + (f": {hint}." if hint else "."))
        return out
    if not failing or not passing or not all(features[i] for i in failing):
        return []
    shared = [v for k, v in features[failing[0]].items()
              if all(features[i].get(k) == v for i in failing) and not any(features[i].get(k) == v for i in passing)]
    if not shared:
        return []
    which = "Every failing case" if not named else "Every failing case no known bug above explains"
    return [f"{which} has {_listed(shared)}, which no passing case has; no passing case differs from such a "
            f"failing case in a single feature, so these cases do not tell which one matters."]


def _by_part(cases: list[Case], passed: list[bool]) -> str:
    """``By part: forward passes; masks: 2 of 4 cases fail; ...`` for cases that name the part of
    the learner's code they check (``features["part"]``), in the order first met."""
    parts: dict = {}
    for case, ok in zip(cases, passed):
        if (case.features or {}).get("part"):
            parts.setdefault(case.features["part"], []).append(ok)
    if not parts or all(all(oks) for oks in parts.values()):
        return ""
    words = [f"{part} passes" if all(oks) else f"{part}: {oks.count(False)} of {len(oks)} cases fail"
             for part, oks in parts.items()]
    return "By part: " + "; ".join(words) + "."


# Facts about a construct on the line where the learner's code raised, true whatever the cause
# (said after the crash, never as a diagnosis): (pattern in the quoted line, sentence).
LINE_FACTS = (
    (re.compile(r"\b(\w+)\.T\b"), "`{0}.T` reverses every axis of an array with more than two axes ((B, L, d) "
                                    "becomes (d, L, B)); to swap the last two only, use np.swapaxes({0}, -1, -2) "
                                    "({0}.transpose(-2, -1) in torch)"),
)


def _line_facts(errors: list[CaseError]) -> list[str]:
    facts = []
    for error in errors:
        found = re.search(r", line \d+: (.*)\)$", error.message or "", re.S)
        for pattern, text in LINE_FACTS if found else ():
            match = pattern.search(found[1])
            if match and sentence(text.format(*match.groups())) + "." not in facts:
                facts.append(sentence(text.format(*match.groups())) + ".")
    return facts


def _summary(failed: list[tuple], ladder, rungs: dict[int, list[bool]], isolated: list[str] | None,
             by_part: str = "", facts: list[str] = ()) -> str:
    """Every cause once, with how many failing cases it explains: the known bugs first (they name
    the mistake), then crashes and mismatches, each the most frequent first; then what minimal
    pairs of cases isolate (``isolated``; None when the cases have no features: then only which
    rungs of the case ladder pass, never a cause)."""
    groups: dict = {}
    for key, text, name in failed:
        groups.setdefault(key, [text, [], key[0] != "bug"])[1].append(name)
    parts = []
    for text, names, _ in sorted(groups.values(), key=lambda g: (g[2], -len(g[1]))):  # stable: ties keep the order
        which = f": {'; '.join(names)}" if len(names) <= 2 and len(groups) > 1 else ""
        parts.append(f"{sentence(text)} (in {len(names)} of {len(failed)} failing cases{which}).")
    parts += list(facts)
    if isolated is not None:
        return " ".join(parts + isolated + ([by_part] if by_part else []))
    climbed = _ladder(ladder, rungs)
    return " ".join(parts + ([climbed] if climbed else []))


def _ladder(ladder, rungs: dict[int, list[bool]]) -> str:
    """Which rungs of the case ladder pass, when every case of the simpler rungs passes and the
    first failing case is on the next one (in the exercise's own words, no case's values, never a
    cause: the failing cases may differ from the passing ones in more than the rung), else ""."""
    first_bad = min((r for r, ok in rungs.items() if not all(ok)), default=0)
    if not (0 < first_bad < len(ladder) and all(all(rungs[r]) for r in rungs if r < first_bad)):
        return ""
    passed = _listed([name for name, _ in ladder[:first_bad]])  # the rungs climbed so far, simplest first
    return f"Every case with {passed} passes; the failing ones are among those with {ladder[first_bad][0]}."


# A mismatch's kind (``_KINDS``) as an immediately visible output names it: in the grader's
# words only, never a value of the case.
MISMATCH_WORDS = {
    "shape": "the output has the wrong shape", "dtype": "the output has the wrong dtype",
    "NaN": "the output holds NaN", "inf": "the output holds inf",
    "masked": "masked positions are not exactly 0", "empty rows": "fully masked rows are not all zeros",
    "rows": "rows do not sum to one", "inputs": "an input was modified in place",
    "form": "the output has the wrong form (type or number of values)",
    "gradient": "no gradient reached an input or parameter", "values": "the values differ from the reference's",
    "harness": "the grader's layer could not run on what your code returned",
}
# describe()'s tail in the learner's process: "(attention.py, line 12: the line's code)".
_WHERE = re.compile(r" \(([^\s(),]+), line (\d{1,9})(?::.*)?\)$")


def cause_parts(error: CaseError | None, reasons: list[str]) -> dict:
    """What makes a failing case fail, as parts (``CaseResult.cause``): for an error of the
    learner's code its kind, exception type, file, line and message apart; for a wrong output
    the kind of mismatch. A writer can then show the parts it may, and cut the learner's."""
    if error is None:
        first = reasons[0] if reasons else ""
        return {"kind": "mismatch", "what": next((k for words, k in _KINDS if words in first), "values")}
    parts: dict = {"kind": error.kind}
    if error.kind not in ("exception", "import", "garbage"):
        return parts  # the grader's own words (a timeout, a crash, the stub, a missing function)
    text = error.message or ""
    if error.kind == "import":
        text = re.sub(r"^\w+\.py: ", "", text)
    if error.kind != "garbage":
        head, colon, rest = text.partition(": ")
        if colon and head and " " not in head:
            parts["type"], text = head, rest
        elif re.match(r"\w+ \(", text):  # "SystemExit (exiting is not a result)"
            parts["type"], text = text.split(" ", 1)
        where = _WHERE.search(text)
        if where:
            parts["file"], parts["line"] = where.group(1), int(where.group(2))
            text = text[:where.start()]
    parts["text"] = text.strip()
    return parts


def score(exercise_id: str, max_points: float, cases: list[Case], outputs: list, expected: list,
          bugs, ladder=(), notes=(), hints=None) -> ExerciseResult:
    """Score an exercise from the learner's ``outputs`` (driver data or CaseError per case).

    ``expected[i]`` is the expected output of case i (used where ``outputs[i]`` is data).
    ``bugs(i)`` maps the known bugs that show on case i to their outputs there, one per way of
    writing the bug (None where that way does not show): see :func:`stated_diagnoses`, which
    keeps only the diagnoses that hold. Where several hold for a case, the one that explains
    most failing cases names its cause."""
    outputs = list(outputs) + [CaseError("crash", "no result came back")] * (len(cases) - len(outputs))
    total = sum(c.weight for c in cases) or 1.0
    results, reasons_of = [], {}
    for i, (case, got) in enumerate(zip(cases, outputs)):
        share = max_points * case.weight / total
        if isinstance(got, CaseError):
            results.append(CaseResult(case.name, 0.0, share, False, error_feedback(got)))
            continue
        try:
            reasons = check_case(case, got, expected[i])
        except Exception as err:  # malformed data from the learner's process, never a grader crash
            reasons = [f"returned data the grader cannot read ({type(err).__name__})"]
        if reasons:
            reasons_of[i] = reasons
        results.append(CaseResult(case.name, 0.0 if reasons else share, share, not reasons, "; ".join(reasons[:2])))
    passed = [r.passed for r in results]
    stated = stated_diagnoses(cases, outputs, passed, bugs) if reasons_of else {}
    for i in reasons_of:
        found = [d for d, explained in stated.items() if i in explained]
        if found:
            best = max(found, key=lambda d: len(stated[d]))  # max keeps the first of equals: the bugs' order
            results[i].diagnosis = best
            results[i].feedback = f"{sentence(best)} ({results[i].feedback})"
    failed, rungs = [], {}
    for i, (case, result) in enumerate(zip(cases, results)):
        rungs.setdefault(case.rung, []).append(result.passed)
        if not result.passed:
            error = outputs[i] if isinstance(outputs[i], CaseError) else None
            failed.append((*_cause(result, error, reasons_of.get(i, [])), case.name))
            result.cause = cause_parts(error, reasons_of.get(i, []))
    named = {i for i, r in enumerate(results) if r.diagnosis}
    isolated = _isolated(cases, passed, outputs, hints or {}, named) if any(c.features for c in cases) else None
    kinds = [o.kind for o in outputs if isinstance(o, CaseError)]
    points_ = round(sum(r.score for r in results), 9)  # case shares are fractions of the points
    return ExerciseResult(exercise_id, status(kinds, len(cases), points_, max_points), points_, float(max_points),
                          results, _summary(failed, ladder, rungs, isolated, _by_part(cases, passed),
                                   _line_facts([o for o in outputs if isinstance(o, CaseError)])) if failed else "",
                          list(notes), ladder=_ladder(ladder, rungs) if failed else "")
