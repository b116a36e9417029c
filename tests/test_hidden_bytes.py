"""Generated hostile children, measured from outside: how many DECODED bytes of a hidden case's
inputs reach each file a learner is handed (feedback .md and .html, Gradescope's results.json at
once and after publication, the terminal table, ``check()``, the class summary).

A hostile child knows each case's inputs (its code receives them) and writes them, encoded in an
alphabet of its choosing (letters a-p, base64, CJK at 14 bits a character, combining marks, a
random base-N alphabet), into every channel it has: an exception's message, its type's name, the
file and the code its message claims, a dict key its driver returns beside the right output
(``_harness``), the form it claims (``result_type``, ``types``), a refused call's words, and the
", line 1: ….T" shape the line-facts sentence once quoted three times a case. The grader's real
path then runs: ``exchange._case_error`` and ``held_to_facts`` (the child's words, the grader's
read of the source), ``scoring.score``, and every writer. What is counted is information, not
characters: each run of the encoding found in a file is decoded (its length times the bits a
character of that alphabet carries), after undoing the file's own escaping.

Before this suite (issue 43): 789,438 bytes through the extra key, 24,730 through the line
facts, 5,145 decoded bytes at once on Gradescope in CJK, "The result is 0, expected 4278" in the
feedback of an honest wrong ``parameter_count``.
"""
from __future__ import annotations

import base64
import html
import json
import math
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.classroom.write import feedback, gradescope, summary
from autograder.inert import LearnerText
from autograder.grading import judge
from autograder.grading.exercises import EXERCISES
from autograder.isolation import exchange
from autograder.report import feedback as terminal
from autograder.scoring import score
from autograder.spec import POINTS, CaseError

MOST_PER_LEARNER = 300  # decoded bytes of hidden inputs a learner's feedback files may hold (issue 43)
SOFTMAX = EXERCISES["softmax"]
CASES = judge.in_process_cases(SOFTMAX, 0)[:6]
EXPECTED = [judge.reference_output(c) for c in CASES]
SOURCE = {"attention": "import numpy as np\n\ndef softmax(x, axis=-1):\n    scores = x @ x.T\n    return scores\n"}


def _hidden(case) -> bytes:
    """What the child knows of a hidden case: its inputs' bytes (the first 300)."""
    data = b"".join(np.asarray(a).tobytes() for a in case.inputs["args"] if isinstance(a, np.ndarray))
    return data[:300]


# ------------------------------------------------------------------------------ encodings

class Encoding:
    """An alphabet of ``base`` characters; ``encode`` writes bytes in it, ``bits`` a character."""

    def __init__(self, name: str, alphabet: str):
        self.name, self.alphabet = name, alphabet
        self.bits = math.log2(len(alphabet))

    def encode(self, data: bytes) -> str:
        if self.name == "base64":
            return base64.b64encode(data).decode().rstrip("=")
        n, base, out = int.from_bytes(b"\x01" + data, "big"), len(self.alphabet), []
        while n:
            n, r = divmod(n, base)
            out.append(self.alphabet[r])
        return "".join(reversed(out))


HEX = Encoding("a-p", "abcdefghijklmnop")
B64 = Encoding("base64", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
CJK = Encoding("cjk", "".join(chr(0x4E00 + i) for i in range(1 << 14)))
MARKS = Encoding("combining marks", "".join(chr(0x300 + i) for i in range(112)))
# Letters a base-N alphabet may use: printable, no whitespace (a writer folds whitespace runs).
_LETTERS = st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"))
encodings = st.one_of(st.sampled_from([HEX, B64, CJK, MARKS]),
                      st.builds(lambda s: Encoding("base-N", "".join(dict.fromkeys(s))),
                                st.text(_LETTERS, min_size=2, max_size=80)).filter(lambda e: len(e.alphabet) >= 2))


def decoded_bytes(text: str, encoded: list[str], enc: Encoding, min_bits: int = 32) -> int:
    """Decoded bytes of ``encoded`` (one string per case) that ``text`` holds: each maximal run
    of an encoded string found in the text, ``bits`` a character, each character counted once;
    a run shorter than ``min_bits`` of information is chance (an alphabet of "-|" meets a table)."""
    min_run = max(2, math.ceil(min_bits / enc.bits))
    found = 0.0
    for e in encoded:
        i = 0
        while i < len(e):
            lo, hi = i, len(e)  # the longest e[i:j] in text, by bisection (a prefix found implies shorter ones are)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if e[i:mid] in text:
                    lo = mid
                else:
                    hi = mid - 1
            if lo - i >= min_run:
                found += (lo - i) * enc.bits / 8
                i = lo
            else:
                i += 1
    return int(found)


def unescaped(text: str, fmt: str) -> str:
    """A file's text as its reader sees it: entities and Markdown's backslashes undone."""
    if fmt in ("markdown", "html"):
        text = html.unescape(text)
        text = re.sub(r"\\(.)", r"\1", text)
    return text


# ------------------------------------------------------------------------------ hostile children

CHANNELS = ("message", "type", "claimed code", "line facts", "harness key", "result type", "types", "refused call")


def hostile_output(channel: str, words: str, case, expected):
    """What a hostile child sends for a case, on one channel, as the grader's exchange reads it."""
    if channel in ("harness key", "result type", "types"):
        out = dict(expected)
        if channel == "harness key":  # the right output, and one extra string key
            out["_harness"] = words
        else:
            del out["out"]
            out["result_type"] = words if channel == "result type" else expected["result_type"]
            out["types"] = {"out": words} if channel == "types" else expected["types"]
        return out
    ident = "E" + re.sub(r"\W", "", words)[:2000] or "E"
    message = {"message": f"ValueError: {words} (attention.py, line 4: scores = x @ x.T)",
               "type": f"{ident}: no (attention.py, line 4: scores = x @ x.T)",
               "claimed code": f"ValueError: boom (attention.py, line 4: {words})",
               "line facts": f"ValueError: , line 1: {ident}.T (attention.py, line 4: {ident}.T)",
               "refused call": f"RuntimeError: the reference {ident} raised {words} (attention.py, line 4: {words})",
               }[channel]
    held = exchange.held_to_facts([exchange._case_error(["exception", message])], SOURCE, "attention", "softmax")
    return held[0]


def outputs_of(report: dict) -> dict[str, tuple[str, str]]:
    """Every learner file, as ``name: (text, format)``."""
    from mha_exercises.check import verdict

    who = LearnerText("learner", "id")
    row = {"final": report["score"], "score": report["score"], "late": "", "status": "graded"}
    md = feedback.to_markdown(who, report, row, "Attention")
    results = gradescope.results(report)
    visible = [results["output"]] + [t["output"] for t in results["tests"] if t["visibility"] == "visible"]
    later = [t["output"] for t in results["tests"] if t["visibility"] != "visible"]
    from autograder.spec import CaseResult, ExerciseResult

    ex = report["exercises"][0]
    result = ExerciseResult(ex["id"], ex["status"], ex["score"], ex["max_score"],
                            [CaseResult(**{k: c[k] for k in ("name", "score", "max_score", "passed", "feedback",
                                                             "diagnosis", "cause")}) for c in ex["cases"]],
                            ex["feedback"], ex["notes"])
    return {"feedback.md": (md, "markdown"), "feedback.html": (feedback.to_html(md, "Attention", who), "html"),
            "results.json (visible)": ("\n".join(visible), "text"),
            "results.json (after publication)": ("\n".join(later), "text"),
            "terminal": (terminal(result), "text"), "check()": (verdict(report), "text"),
            "summary.md": (summary.to_markdown(summary.summarize({"learner": report})), "markdown")}


def graded(channel: str, enc: Encoding) -> tuple[dict, list[str]]:
    encoded = [enc.encode(_hidden(c)) for c in CASES]
    outputs = [hostile_output(channel, "LEAK" + e, c, x) for e, c, x in zip(encoded, CASES, EXPECTED)]
    result = score("softmax", POINTS["softmax"], CASES, outputs, EXPECTED, lambda i, d=None: {} if d is None else None)
    import dataclasses

    report = {"seed": 4242, "score": result.score, "max_score": float(POINTS["softmax"]),
              "exercises": [dataclasses.asdict(result)], "intake": {"taken": ["attention.py"], "ignored": []}}
    return json.loads(json.dumps(report)), encoded  # as a batch reads it back


@settings(max_examples=24, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(channel=st.sampled_from(CHANNELS), enc=encodings)
def test_no_learner_file_holds_more_than_a_few_hundred_decoded_bytes_of_hidden_inputs(channel, enc):
    report, encoded = graded(channel, enc)
    files = outputs_of(report)
    found = {name: decoded_bytes(unescaped(text, fmt), encoded, enc) for name, (text, fmt) in files.items()}
    # every writer went through the one renderer: no slot's or value's mark is left in a file
    assert not [name for name, (text, _) in files.items() if any(m in text for m in "\x0e\x0f\x10\x11")]
    assert found["feedback.md"] + found["feedback.html"] < MOST_PER_LEARNER, (channel, enc.name, found)
    assert found["results.json (visible)"] <= gradescope.VISIBLE_BYTES, found
    for name in ("results.json (after publication)", "summary.md"):
        assert found[name] <= gradescope.DETAILS_BYTES, (name, found)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(channel=st.sampled_from(CHANNELS), enc=st.sampled_from([HEX, CJK]))
def test_each_visible_gradescope_output_holds_at_most_its_bytes(channel, enc):
    report, encoded = graded(channel, enc)
    results = gradescope.results(report)
    for t in results["tests"]:
        if t["visibility"] == "visible":
            learner = sum(len(m.encode()) for e in encoded for m in re.findall(
                "[" + re.escape("".join(sorted(set(e)))[:5000]) + "]{4,}", t["output"]) if m in e)
            assert learner <= gradescope.LEARNER_CHARS, (channel, enc.name, learner)


def test_the_line_facts_sentence_quotes_the_grader_s_read_of_the_source():
    """``raise ValueError(", line 1: LEAK….T")``: the sentence about ``k.T`` once took its name from
    the child's message, three times a case (24,730 bytes); now from the submitted line alone."""
    report, encoded = graded("line facts", HEX)
    text = report["exercises"][0]["feedback"]
    # line 4 of the submitted source is "scores = x @ x.T": the fact names x, whatever the child said
    assert "reverses every axis" in text and "`x.T`" in re.sub("[\x0e\x0f]", "", text)
    md = outputs_of(report)["feedback.md"][0]
    assert decoded_bytes(unescaped(md, "markdown"), encoded, HEX) < 60


def test_an_extra_string_key_beside_the_right_output_stays_in_its_slot():
    report, encoded = graded("harness key", HEX)
    assert sum(len(c["feedback"]) for c in report["exercises"][0]["cases"]) > 1000  # the attack is real
    files = outputs_of(report)
    for name in ("feedback.md", "feedback.html"):
        assert decoded_bytes(unescaped(*files[name]), encoded, HEX) < MOST_PER_LEARNER / 2, name


def test_an_honest_wrong_parameter_count_never_shows_the_expected_value():
    """"The result is 0, expected 4278" in the feedback of an honest wrong parameter_count."""
    exercise = EXERCISES["parameter_count"]
    cases = judge.in_process_cases(exercise, 0)
    expected = [judge.reference_output(c) for c in cases]
    outputs = [dict(x, out=0) for x in expected]
    result = score("parameter_count", POINTS["parameter_count"], cases, outputs, expected,
                   lambda i, d=None: {} if d is None else None)
    import dataclasses

    report = json.loads(json.dumps({"seed": 4242, "score": 0.0, "max_score": 3.0,
                                    "exercises": [dataclasses.asdict(result)], "intake": {}}))
    values = {str(x["out"]) for x in expected}
    assert any(v in result.feedback for v in values)  # the grader knows them (its own terminal may say them)
    files = outputs_of(report)
    for name, (text, _) in files.items():
        if name in ("terminal", "check()"):  # the instructor's terminal; check() runs on the public practice cases
            continue
        shown = set(re.findall(r"\d+", text))
        assert not values & shown, (name, values & shown, text[:400])


# ------------------------------------------------- the outside review's findings (review_grader.md)

def test_a_count_the_child_claims_is_its_own_number_in_a_slot():
    """F1: ``{"result_type": "tuple", "len": <4,100 digits of the inputs>}``: the count was said as
    grader words, 14,236 verified bytes in one feedback file."""
    digits = [str(int.from_bytes(b"\x01" + _hidden(c), "big")) for c in CASES]
    outputs = [{"result_type": "tuple", "len": int(d), "types": {}} for d in digits]
    result = score("softmax", POINTS["softmax"], CASES, outputs, EXPECTED, lambda i, d=None: {} if d is None else None)
    import dataclasses

    report = json.loads(json.dumps({"seed": 4242, "score": 0.0, "max_score": 5.0,
                                    "exercises": [dataclasses.asdict(result)], "intake": {}}))
    files = outputs_of(report)
    digits_alphabet = Encoding("digits", "0123456789")
    for name in ("feedback.md", "feedback.html", "results.json (after publication)"):
        assert decoded_bytes(unescaped(*files[name]), digits, digits_alphabet) < 60, name


def test_the_properties_say_the_child_s_names_and_words_in_slots():
    """F2 and F3: the names and class names of ``_linears`` and the words of ``_memory["stopped"]``
    were grader words (17,760 and 9,000 verified bytes)."""
    from autograder.said import Budget, learner_bytes, render
    from autograder.scoring import properties

    leak = "LEAK" + "abcdefghijklmnop" * 600
    said = properties._projections_are_linear(None, {"_linears": {"W_q": leak, leak: leak, "W_k": leak}}, {})
    assert said and learner_bytes(said) <= 2 * 20 + 3 * (40 + 80) + 60  # each slot capped where it is made
    assert len(render(said, "markdown", Budget(240, 80)).encode()) < 500
    for name, check in vars(properties).items():
        if name.startswith("_never_holds") and callable(check):
            import inspect

            if "stopped" in inspect.getsource(check):
                assert "LEAK" * 2 not in inspect.getsource(check)
    assert "slot(used['stopped']" in __import__("inspect").getsource(properties)


def test_a_line_number_the_child_claims_is_bounded_and_checked_against_the_file():
    """F10: "line <1,880 digits>" in the child's message was said whole by the raised-at sentence."""
    from autograder.scoring import summary

    long = CaseError("exception", "ValueError: float32 (attention.py, line " + "7" * 1880 + ")")
    assert "7777777" not in (summary._raised_at(long) or "")
    missing = CaseError("exception", "ValueError: x (attention.py, line 4242)")  # no such line in the file
    assert "4242" not in (summary._raised_at(missing) or "")
    real = CaseError("exception", "ValueError: x (attention.py, line 4: scores)", source="scores = x @ x.T")
    assert "line 4" in summary._raised_at(real)


def test_a_shape_the_learner_returns_is_the_learner_s():
    """F6: ``np.empty((0, t1, ..., t31))``: the shape, said as a grader fact, carried 66 verified bytes."""
    from autograder.compare import compare_arrays
    from autograder.said import learner_bytes

    said = compare_arrays("the result", np.empty((0,) + (2,) * 31), np.zeros((3, 4)), 1e-5, 1e-6)
    assert learner_bytes(said) <= 42  # 40 characters, the cut ("…") 3 bytes
