"""A gradebook an instructor can act on without checking it by hand: the shown parts add up
to the shown total in every file, one id per learner in every file, misnamed files taken or
named, stale files moved aside, a run that would lose learners refused, late wording that
matches the penalty, and extensions and adjustments that survive a rerun.

A class is a Gradescope export with a Canvas roster (tests/classbuild.py); grading is the
planted stand-in (each exercise's score written in the learner's code), so every number
expected here is known exactly.
"""
import csv
import json
import re
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from classbuild import EXERCISES, Entry, Person, canvas_roster, planted, planted_grade, write_export

from autograder.classroom import batch
from autograder.classroom.rules.late import LatePolicy
from autograder.inert import LearnerText
from autograder.spec import POINTS
from autograder.submission import load
from test_batch import BODY

DEADLINE = datetime(2026, 3, 1, 23, 59, tzinfo=timezone.utc)
ADA = Person("Lovelace, Ada", "11", "0100", "ada", "ada@example.edu")
BOB = Person("Babbage, Bob", "12", "0200", "bob", "bob@example.edu")
CY = Person("Curie, Cy", "13", "0250", "cy", "Cy@Example.edu")
DEE = Person("Dalton, Dee", "14", "0300", "dee", "dee@example.edu")
THIRD = 10 / 3  # an exercise score whose rounding the total must not round again
# The three exercises' points, from the spec: every expected number below is derived from them
# and from what the class plants, so a change of points moves the expectations, not the checks.
SOFTMAX, ATTENTION, SPLIT = (Decimal(POINTS[e]) for e in EXERCISES)
MAXIMUM = SOFTMAX + ATTENTION + SPLIT
# Ada's thirds stay below each maximum, and Bob's -3 leaves his attention above 0
assert min(SOFTMAX, ATTENTION, SPLIT) > Decimal(THIRD) and ATTENTION > 3, "the class below needs other points"
JUST_UNDER = ATTENTION - Decimal("0.005")  # Bob's: half up, it shows as the full ATTENTION


def _two(x) -> Decimal:
    """The stated rounding: to cents, halves up, from the number as written."""
    return Decimal(str(x)).quantize(Decimal("0.01"), ROUND_HALF_UP)


def _shown(x) -> str:
    """As a class file writes points: ``7``, ``3.5``, ``12.01``."""
    return f"{_two(x):f}".rstrip("0").rstrip(".")


DEE_TOTAL = _two("1.005") + ATTENTION + SPLIT  # her softmax shows 1.01; the other two are full
BOB_TOTAL = SOFTMAX + ATTENTION  # his JUST_UNDER shows as the full points


def _entries():
    return [
        Entry("submission_1", [ADA], DEADLINE - timedelta(hours=1),
              {"attention.py": planted({"softmax": THIRD, "scaled_dot_product_attention": THIRD})
               + BODY.replace("import numpy as np\n", ""),
               "heads.py": planted({"split_heads": THIRD})}),
        # a group of two, 5 minutes late
        Entry("submission_2", [BOB, CY], DEADLINE + timedelta(minutes=5),
              {"hw/attention.py": planted({"softmax": float(SOFTMAX),
                                           "scaled_dot_product_attention": float(JUST_UNDER)})}),
        # misnamed files: Attention.py and "heads (1).py" are taken; 3 days late
        Entry("submission_3", [DEE], DEADLINE + timedelta(days=2, hours=3),
              {"Attention.py": planted({"softmax": 1.005, "scaled_dot_product_attention": float(ATTENTION)})
               + BODY.replace("import numpy as np\n", ""),
               "heads (1).py": planted({"split_heads": float(SPLIT)})}),
    ]


def _class(tmp_path, entries=None, people=(ADA, BOB, CY, DEE)):
    download = write_export(tmp_path / "download", entries or _entries())
    roster = tmp_path / "roster.csv"
    roster.write_text(canvas_roster(list(people)))
    return download, roster


def _run(tmp_path, monkeypatch, capsys, download, *options):
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    out = tmp_path / "out"
    status = batch.main([str(download), "--out", str(out), "--jobs", "2", "--quiet", "--unconfined",
                         "--deadline", DEADLINE.isoformat(), "--late-penalty", "10", *options])
    return status, out, capsys.readouterr().err


def _grades(out):
    with open(out / "grades.csv", newline="") as f:
        return {row["learner"]: row for row in csv.DictReader(f)}


def _canvas(out):
    with open(out / "canvas.csv", newline="") as f:
        return {row["SIS Login ID"]: row for row in list(csv.DictReader(f))[1:]}


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def _feedback_numbers(text):
    """(exercise points shown, total shown, score shown) of a feedback file."""
    parts = [Decimal(m) for m in re.findall(r"^\| `\w+` \| ([\d.]+)/", text, re.M)]
    total = Decimal(re.search(r"^\| \*\*total\*\* \| \*\*([\d.]+)/", text, re.M).group(1))
    score = Decimal(re.search(r"\*\*Score: ([\d.]+)", text).group(1))
    return parts, total, score


def test_the_shown_parts_add_up_to_the_shown_total_in_every_file(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0, err
    grades, canvas = _grades(out), _canvas(out)
    columns = ["softmax", "scaled_dot_product_attention", "split_heads"]
    for learner, row in grades.items():
        assert sum(Decimal(row[c]) for c in columns) == Decimal(row["total"]), row
        # Canvas shows the final as grades.csv does, on time or late alike
        assert canvas[learner]["Multi-head attention"] == row["final"]
        parts, total, score = _feedback_numbers((out / "feedback" / f"{learner}.md").read_text())
        assert sum(parts) == total == Decimal(row["total"]) and score == Decimal(row["final"])
    # 3 x 3.333...: the parts show 3.33 each, so the total is 9.99, not 10
    assert grades["ada"]["total"] == "9.99" and grades["ada"]["final"] == "9.99"
    # half up from the printed number (1.005 -> 1.01, not binary rounding's 1.0); late: 2 days 3 hours, -30%
    assert grades["dee"]["softmax"] == "1.01" and grades["dee"]["total"] == _shown(DEE_TOTAL)
    # the penalty applies to the shown total (x.x1 * 0.7 ends in 7 thousandths: rounds up, never a tie)
    raw = DEE_TOTAL - Decimal("0.005")  # the unrounded sum, which the penalty must not start from
    assert grades["dee"]["final"] == _shown(DEE_TOTAL * Decimal("0.7")) != _shown(raw * Decimal("0.7"))
    assert grades["bob"]["scaled_dot_product_attention"] == _shown(ATTENTION)
    assert grades["bob"]["final"] == _shown(BOB_TOTAL * Decimal("0.9"))


def test_one_id_per_learner_in_every_file(tmp_path, monkeypatch, capsys):
    entries = _entries()
    entries[2].files["attention.py"] = entries[0].files["attention.py"]  # Dee hands in Ada's code
    download, roster = _class(tmp_path, entries)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster), "--similarity")
    assert status == 0, err
    grades = _grades(out)
    assert sorted(grades) == ["ada", "bob", "cy", "dee"]
    # the roster's id, with the id the submission came with beside it
    assert grades["ada"]["submitted_as"] == "0100" and grades["bob"]["submitted_as"] == "0200+0250"
    assert set(_canvas(out)) == set(grades)
    assert sorted(p.name for p in (out / "reports").iterdir()) == ["ada.json", "bob+cy.json", "dee.json"]
    for name in ("ada", "bob+cy", "dee"):
        report = json.loads((out / "reports" / f"{name}.json").read_text())
        assert report["learner"] == name
    assert sorted(p.stem for p in (out / "feedback").glob("*.md")) == ["ada", "bob", "cy", "dee"]
    assert "feedback for cy" in (out / "feedback" / "cy.md").read_text()
    similar = (out / "similarity.md").read_text() + (out / "similarity.csv").read_text()
    assert "ada" in similar and "dee" in similar
    for sid in ("0100", "0200", "0250", "0300"):  # no Gradescope sid names anyone anywhere
        for f in [out / "similarity.md", out / "similarity.csv", out / "summary.md"]:
            assert sid not in f.read_text(), (sid, f)


def test_a_stranger_keeps_their_own_id_and_is_named_in_the_warning(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path, people=(ADA, BOB, CY))
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0 and "not on the roster, graded but left out of canvas.csv: 0300" in err
    assert _grades(out)["0300"]["submitted_as"] == "0300" and "dee" not in _canvas(out)


def test_misnamed_files_are_taken_or_named_and_the_batch_lists_them(tmp_path, monkeypatch, capsys):
    entries = _entries()
    entries[0].files["heads.py"] = ""
    entries[0].files.pop("heads.py")
    entries[0].files["haeds.py"] = planted({"split_heads": 4})  # a close spelling: named, not taken
    download, roster = _class(tmp_path, entries)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster), "--anonymize")
    assert status == 0, err
    grades = _grades(out)
    assert grades["dee"]["split_heads"] == _shown(SPLIT) and grades["dee"]["softmax"] == "1.01"  # taken
    assert grades["ada"]["split_heads"] == "0"  # not taken
    dee = _rendered((out / "feedback" / "dee.md").read_text())
    assert "attention.py (Attention.py, misnamed: graded as this module)" in dee
    assert "heads.py (heads (1).py, misnamed: graded as this module)" in dee
    ada = _rendered((out / "feedback" / "ada.md").read_text())
    assert "Not graded: haeds.py (did you mean heads.py? Name it exactly so)" in ada and "not graded: did" not in ada
    summary = (out / "summary.md").read_text()
    line = next(x for x in summary.splitlines() if x.startswith("- Misnamed files"))
    assert "2 of 3 submissions" in line and "ada (haeds.py: did you mean heads.py?)" in line
    assert "dee (Attention.py taken as attention.py; heads (1).py taken as heads.py)" in line
    assert "misnamed files in 2 submission(s), taken or named in a \"did you mean\" in their feedback " \
           "(listed in summary.md): ada, dee" in err
    anonymous = (out / "anonymous" / "summary.md").read_text()
    assert "Misnamed files" in anonymous and "learner-" in anonymous
    assert not re.search(r"\b(ada|dee|0100|0300)\b", anonymous)


@pytest.mark.parametrize("name, module, taken", [
    ("Attention.py", "attention", True), ("heads (1).py", "heads", True), ("heads-1.py", "heads", True),
    ("masking copy.py", "masking", True), ("Attention (2).PY", "attention", True), ("atention.py", "attention", False),
    ("utils.py", None, False), ("test_attention.py", None, False)])
def test_a_file_named_like_a_module(tmp_path, name, module, taken):
    (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "layer.py").write_text("y = 2\n")
    sub = load(tmp_path)
    if taken:
        assert sub.sources[module] == "x = 1\n" and sub.misnamed == (f"{name} taken as {module}.py",)
    else:
        assert set(sub.sources) == {"layer"}
        assert sub.misnamed == ((f"{name}: did you mean {module}.py?",) if module else ())


def test_a_misnamed_copy_never_replaces_the_rightly_named_file(tmp_path):
    (tmp_path / "attention.py").write_text("right = 1\n")
    (tmp_path / "attention (1).py").write_text("copy = 1\n")
    sub = load(tmp_path)
    assert sub.sources["attention"] == "right = 1\n" and sub.misnamed == ()
    assert any("attention (1).py (named like attention.py" in i for i in sub.ignored)


def test_a_run_that_would_grade_fewer_learners_is_refused_and_files_of_others_move_aside(tmp_path, monkeypatch,
                                                                                          capsys):
    download, roster = _class(tmp_path)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download)  # no roster: named by sid
    assert status == 0 and sorted(_grades(out)) == ["0100", "0200", "0250", "0300"], err
    # the same class with the roster: the same learners under the roster's ids; the sids' files move aside
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0, err
    assert sorted(p.name for p in (out / "feedback").iterdir()) == [
        f"{x}.{e}" for x in ("ada", "bob", "cy", "dee") for e in ("html", "md")]
    assert sorted(p.name for p in (out / "stale" / "feedback").iterdir()) == [
        f"{x}.{e}" for x in ("0100", "0200", "0250", "0300") for e in ("html", "md")]
    assert sorted(p.name for p in (out / "reports").iterdir()) == ["ada.json", "bob+cy.json", "dee.json"]
    assert "11 file(s) of learners not in this run moved to" in err and str(out / "stale") in err
    # Dee's submission is gone from the download: 3 learners with a submission where there were 4
    before = _snapshot(out)
    metadata = download / "assignment_8046601_export" / "submission_metadata.yml"
    write_export(tmp_path / "smaller", _entries()[:2])
    import shutil
    shutil.rmtree(download / "assignment_8046601_export" / "submission_3")
    metadata.write_text((tmp_path / "smaller" / "assignment_8046601_export" / "submission_metadata.yml").read_text())
    status, _, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "holds the grades of 4 learners with a submission" in err and "this run finds 3" in err
    assert _snapshot(out) == before
    status, _, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster), "--allow-fewer")
    assert status == 0 and _grades(out)["dee"]["status"] == "no submission"
    assert (out / "stale" / "reports" / "dee.json").exists()


@pytest.mark.parametrize("late, words", [
    (timedelta(minutes=5), "5 min late: -10% (1 started day at 10% a day)"),
    (timedelta(minutes=5, seconds=10), "5 min 10 s late: -10% (1 started day at 10% a day)"),
    (timedelta(seconds=20), "20 s late: -10% (1 started day at 10% a day)"),
    (timedelta(milliseconds=300), "less than 1 s late: -10% (1 started day at 10% a day)"),
    (timedelta(days=1, seconds=30), "1 day 30 s late: -20% (2 started days at 10% a day)"),
    (timedelta(days=1, hours=12), "1 day 12 h late: -20% (2 started days at 10% a day)"),
    (timedelta(days=2, hours=23, minutes=59, seconds=59), "2 days 23 h 59 min 59 s late: -30% (3 started days at 10% a day)"),
    (timedelta(days=3, hours=2), "3 days 2 h late, after the 3-day cutoff: 0 points"),
])
def test_late_wording_matches_the_penalty(late, words):
    policy = LatePolicy(DEADLINE, 10, 3)
    final, days, why = policy.apply(9.99, DEADLINE + late)
    assert why == words and days == pytest.approx(late.total_seconds() / 86400)
    percent = 100 if "cutoff" in words else int(re.search(r"-(\d+)%", words).group(1))
    assert final == round(9.99 * (100 - percent) / 100, 2)


def test_an_extension_and_an_adjustment_survive_a_rerun(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path)
    extensions, adjustments = tmp_path / "extensions.csv", tmp_path / "adjustments.csv"
    extensions.write_text("learner,deadline\n0300,2026-03-04T23:59:00Z\n")  # Dee by her sid: 3 more days
    adjustments.write_text("learner,exercise,points,reason\n"
                           "ada@example.edu,total,2,extra credit: found a typo in the notes\n"
                           "bob,scaled_dot_product_attention,-3,\"the scale was copied, not derived\"\n")
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--extensions", str(extensions), "--adjustments", str(adjustments))
    assert status == 0, err
    grades = _grades(out)
    assert grades["dee"]["status"] == "graded" and grades["dee"]["final"] == _shown(DEE_TOTAL)
    assert grades["dee"]["late_penalty"] == "extended deadline 2026-03-04T23:59+00:00"
    assert grades["ada"]["total"] == "9.99" and grades["ada"]["adjustment"] == "2" and grades["ada"]["final"] == "11.99"
    # an exercise's adjustment changes that exercise, before the late penalty (5 minutes: -10%)
    assert grades["bob"]["scaled_dot_product_attention"] == _shown(ATTENTION - 3)
    assert grades["bob"]["total"] == _shown(BOB_TOTAL - 3)
    assert grades["bob"]["final"] == _shown((BOB_TOTAL - 3) * Decimal("0.9"))
    assert grades["cy"]["final"] == _shown(BOB_TOTAL * Decimal("0.9"))  # Cy's row is hers: no adjustment
    ada = (out / "feedback" / "ada.md").read_text()
    assert f"**Score: 11.99 / {_shown(MAXIMUM)}** (graded 9.99; adjusted +2)" in ada
    assert "- +2 points on the total: extra credit: found a typo in the notes" in ada
    bob = (out / "feedback" / "bob.md").read_text()
    assert "- -3 points on `scaled_dot_product_attention`: the scale was copied, not derived" in bob
    assert (f"| `scaled_dot_product_attention` | {_shown(ATTENTION - 3)}/{_shown(ATTENTION)} | "
            f"partial (graded {_shown(ATTENTION)}, adjusted -3) |") in bob
    first = (out / "grades.csv").read_bytes(), (out / "canvas.csv").read_bytes(), ada
    # rerun without the options: the copies kept in OUT apply, and the run says so
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster), "--force")
    assert status == 0 and "adjustments: 2 kept from the last run" in err and "extensions: 1 kept" in err
    assert ((out / "grades.csv").read_bytes(), (out / "canvas.csv").read_bytes(),
            (out / "feedback" / "ada.md").read_text()) == first
    summary = (out / "summary.md").read_text()
    assert "adjustments (2 learners)" in summary


@pytest.mark.parametrize("text, why", [
    ("learner,exercise,points,reason\nzed,total,1,x\n", "adjustments.csv, line 2: zed is not a learner of this class"),
    ("learner,exercise,points,reason\nada,softmaxx,1,x\n", "line 2: softmaxx is neither an exercise id nor 'total'"),
    ("learner,exercise,points,reason\nada,total,lots,x\n", "line 2: points 'lots' is not a number"),
    ("learner,exercise,points,reason\nada,total,1,\n", "line 2: no reason"),
    ("learner,points\nada,1\n", "no column exercise, reason"),
])
def test_a_bad_adjustments_file_is_refused_before_anything_is_written(tmp_path, monkeypatch, capsys, text, why):
    download, roster = _class(tmp_path)
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text(text)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--adjustments", str(adjustments))
    assert status == 2 and why in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_the_summary_counts_learners_and_submissions_apart_and_names_mistakes(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path, people=(ADA, BOB, CY, DEE, Person("Eve, Eve", "15", "0400", "eve", "e@x")))
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0, err
    summary = (out / "summary.md").read_text()
    assert "5 learners, 4 with a submission (1 without); 3 submissions" in summary
    # before penalties, per submission as graded (unrounded): Ada 3 x 10/3, Bob's group, Dee
    graded = (10 + SOFTMAX + JUST_UNDER + Decimal("1.005") + ATTENTION + SPLIT) / 3
    # after, per learner with a submission (Bob and Cy each count): the finals grades.csv shows
    finals = (Decimal("9.99") + 2 * _two(BOB_TOTAL * Decimal("0.9")) + _two(DEE_TOTAL * Decimal("0.7"))) / 4
    assert f"mean {_two(graded)}, median" in summary and f"mean {_two(finals)}." in summary
    assert f"Total out of {_shown(MAXIMUM)}," in summary
    assert ("1. Softmax without subtracting the max first (exp overflows to inf, then inf/inf = NaN, at logits of "
            "1e4) (`softmax`): 2 of 3 submissions") in summary


def test_each_summary_line_names_its_diagnosis_in_full():
    """Two off-by-ones of causal_mask were one line, "Mask is off by one", saying neither."""
    from autograder.classroom.write.summary import summarize, to_markdown

    said = ["your mask is off by one: it hides the diagonal (j < i); a query may see its own key (j <= i)",
            "your mask is off by one: it lets each query see the next key (j <= i + 1)"]
    reports = {f"s{i}": {"score": 0.0, "max_score": 4.0, "exercises": [{
        "id": "causal_mask", "status": "failed", "score": 0.0, "max_score": 4.0,
        "cases": [{"name": "L=4", "passed": False, "diagnosis": said[i % 2 if i < 3 else 0]}]}]} for i in range(4)}
    lines = [x for x in to_markdown(summarize(reports)).splitlines() if x[:3] in ("1. ", "2. ")]
    assert lines == [f"1. {said[0][5:].capitalize()} (`causal_mask`): 3 of 4 submissions",
                     f"2. {said[1][5:].capitalize()} (`causal_mask`): 1 of 4 submissions"]


def test_the_summary_rounds_its_means_as_every_shown_score():
    from autograder.classroom.write.summary import ClassStats, to_markdown

    # means halfway between two cents: halves up, as grades.csv rounds (float formatting gives 10.62 and 2.67)
    totals, finals = ["10.62", "10.63"], ["2.67", "2.68"]
    stats = ClassStats(2, float(MAXIMUM), [float(t) for t in totals], [(0.0, float(MAXIMUM), 2)], [], 0,
                       submissions=2, graded_learners=2, finals=[float(f) for f in finals])
    text = to_markdown(stats)
    graded, final = (_two(sum(map(Decimal, xs)) / 2) for xs in (totals, finals))
    assert f"mean {graded}, median {graded}." in text and f"mean {final}." in text


@pytest.mark.parametrize("error, kind", [
    ("import", "Import errors"), ("crash", "Crashed"), ("memory", "Crashed")])
def test_the_summary_names_an_import_error_as_one_whatever_its_words(error, kind):
    import dataclasses

    from autograder.classroom.write.summary import summarize, to_markdown
    from autograder.scoring import score
    from autograder.spec import Case, CaseError

    # an exercise scored as the grader scores it, its one case failing with this kind of error
    result = score("softmax", POINTS["softmax"], [Case("float32", "call", {})],
                   [CaseError(error, "attention.py: SyntaxError: invalid syntax (attention.py, line 3)")],
                   [None], lambda *a: {})
    report = {"score": 0.0, "max_score": float(POINTS["softmax"]), "exercises": [dataclasses.asdict(result)]}
    summary = to_markdown(summarize({"ada": report}))
    assert result.status == "error" and f"- {kind} " in summary and summary.count("1 of 1 submissions: ada") == 1


def _rendered(markdown: str) -> str:
    """Feedback as read: learner text in it is Markdown-escaped (``inert.markdown``)."""
    return re.sub(r"\\([^\w\s])", r"\1", markdown)


def test_feedback_shows_where_a_hidden_case_fails_never_its_values():
    from autograder.classroom.write import feedback

    said = ("The mask is wrong at 3 of 16 entries, first at index (0, 1): got True, expected False (in 2 of 3 "
            "failing cases). Out differs from the reference at 2 of 4 entries; the largest error is 0.1 at index "
            "(1,) (got 0.31, expected 0.29; tolerance rtol=1e-05, atol=1e-08). Out has NaN at 1 of 4 entries, "
            "first at index (0,) (expected 0.5).")
    report = {"score": 0.0, "max_score": 4.0, "exercises": [
        {"id": "causal_mask", "status": "failed", "score": 0.0, "max_score": 4.0, "feedback": said, "cases": []}]}
    row = {"parts": {"causal_mask": 0.0}, "score": 0.0, "final": 0.0, "late": "", "adjustments": []}
    text = _rendered(feedback.to_markdown(LearnerText("ada", "learner id"), report, row, "HW"))
    for value in ("True", "False", "0.31", "0.29", "0.5", "expected"):
        assert value not in text
    assert "first at index (0, 1) (in 2 of 3 failing cases)." in text and "at index (1,)." in text


def test_an_exercise_adjustment_stops_at_the_exercise_maximum_and_says_so(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path, people=(ADA, BOB, CY, DEE, Person("Eve, Eve", "15", "0400", "eve", "e@x")))
    adjustments = tmp_path / "adjustments.csv"
    # Ada's softmax (3.33 shown) gains its whole maximum: it stops at the maximum
    adjustments.write_text(f"learner,exercise,points,reason\nada,softmax,{SOFTMAX},regraded\n"
                           "eve,softmax,2,emailed\neve,total,-1,late quiz\n")
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--adjustments", str(adjustments))
    assert status == 0, err
    grades = _grades(out)
    gained = SOFTMAX - Decimal("3.33")  # up to the maximum, not the whole adjustment
    assert grades["ada"]["softmax"] == _shown(SOFTMAX) and grades["ada"]["total"] == _shown(Decimal("9.99") + gained)
    ada = (out / "feedback" / "ada.md").read_text()
    assert (f"- +{_shown(SOFTMAX)} points on `softmax` (an exercise's points stay between 0 and its maximum: "
            f"+{_shown(gained)}): regraded") in ada
    eve = (out / "feedback" / "eve.md").read_text()
    assert grades["eve"]["final"] == "0" and f"**Score: 0 / {_shown(MAXIMUM)}** (adjusted -1)" in eve  # never < 0
    assert "on `softmax` (no submission: nothing to adjust there): emailed" in eve


@pytest.mark.parametrize("diagnosis, name", [
    ("your output matches softmax without subtracting the max first (exp overflows to inf, then inf/inf = NaN, "
     "at logits of 1e4)", "softmax without subtracting the max first"),
    ("your output matches attention scaled by 1/d_k instead of 1/sqrt(d_k)", "attention scaled by 1/d_k instead of "
                                                                              "1/sqrt(d_k)"),
    ("your mask is off by one: it hides the diagonal (j < i); a query may see its own key", "mask is off by one"),
    ("your cache concatenates on the head axis (dim=1): the sequence axis is dim=-2",
     "cache concatenates on the head axis (dim=1)"),
])
def test_a_diagnosis_is_named_as_the_mistake(diagnosis, name):
    from autograder.classroom.write.summary import mistake

    assert mistake(diagnosis) == name


def test_every_final_score_a_run_changes_is_in_the_history(tmp_path, monkeypatch, capsys):
    """The first run, then each change of a final (an adjustment, an extension, a learner
    removed from the roster and one added), each with its reason; a rerun changing nothing adds nothing."""
    download, roster = _class(tmp_path)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    first = _grades(out)

    def history():
        with open(out / "history.csv", newline="") as f:
            return [(h["learner"], h["final_before"], h["final_after"], h["reason"]) for h in csv.DictReader(f)]

    assert status == 0 and history() == [(x, "", first[x]["final"], "first run") for x in ("ada", "bob", "cy", "dee")]
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text("learner,exercise,points,reason\nada,total,2,extra credit\n")
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--adjustments", str(adjustments))
    assert status == 0 and "1 final score(s) changed since the last run" in err and "ada 9.99 -> 11.99" in err
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0 and "changed since the last run" not in err  # the kept adjustment changes nothing
    assert history()[4:] == [("ada", "9.99", "11.99", "adjustment")]
    extensions = tmp_path / "extensions.csv"
    extensions.write_text("learner,deadline\ndee,2026-03-04T23:59:00Z\n")
    eve = Person("Eve, Eve", "15", "0400", "eve", "e@x")
    roster.write_text(canvas_roster([ADA, BOB, CY, DEE, eve]))
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--extensions", str(extensions))
    assert status == 0, err
    assert history()[5:] == [("dee", first["dee"]["final"], _shown(DEE_TOTAL), "extension"),
                             ("eve", "", "0", "added (roster change or a new submitter)")]
    roster.write_text(canvas_roster([ADA, BOB, CY, DEE]))  # Eve dropped
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0 and history()[7:] == [("eve", "0", "", "removed (roster change, or their submission is gone)")]


def test_an_exercise_of_a_misnamed_file_says_so_never_not_attempted():
    """atention.py read "not attempted" beside "not graded" twice: the file was handed in, misnamed."""
    from autograder.classroom.write import feedback

    report = {"score": 0.0, "max_score": 12.0, "intake": {"taken": ["heads.py"], "ignored": [
        "hw/atention.py (did you mean attention.py? Name it exactly so)"]},
        "exercises": [{"id": e, "status": "not attempted", "score": 0.0, "max_score": float(POINTS[e]),
                       "cases": [], "notes": [], "feedback": ""} for e in ("softmax", "split_heads")]}
    row = {"parts": {}, "score": 0.0, "final": 0.0, "late": "", "adjusted": 0.0, "adjustments": []}
    text = _rendered(feedback.to_markdown(LearnerText("ada", "a learner's id"), report, row, "A1"))
    assert "| `softmax` | 0/5 | not graded: no attention.py (see hw/atention.py above) |" in text
    assert "| `split_heads` | 0/4 | not attempted |" in text  # heads.py is there: that one was not attempted
    assert text.lower().count("not graded") == 2  # the file's line and its exercise's, each once


@pytest.mark.parametrize("column, twin, lines", [
    ("SIS User ID", Person("Twin, Tom", "21", ADA.sis_user, "tom", "tom@example.edu"), (3, 7)),
    ("ID", Person("Twin, Tom", ADA.canvas_id, "0900", "tom", "tom@example.edu"), (3, 7)),
    ("SIS Login ID", Person("Twin, Tom", "21", "0900", BOB.login, "tom@example.edu"), (4, 7)),
])
def test_a_person_id_twice_in_the_roster_is_refused_naming_both_rows(tmp_path, monkeypatch, capsys, column, twin,
                                                                      lines):
    """A duplicated SIS User ID credited one learner's submission to the other (exit 0)."""
    download, roster = _class(tmp_path, people=(ADA, BOB, CY, DEE, twin))
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 2 and not out.exists() and len(err.strip().splitlines()) == 1
    assert f"line {lines[1]} has the {column} " in err and f"of line {lines[0]} ({column})" in err, err


@pytest.mark.parametrize("text, why", [
    ("learner,exercise,points,reason\nada,total,1,5,reason\n",
     "adjustments.csv, line 2: 5 fields where the header has 4"),
    ("learner,exercise,points,reason\nada,total,1\n", "adjustments.csv, line 2: 3 fields where the header has 4"),
    ("learner,exercise,points,reason,note\nada,total,1,x,y\n",
     "line 1: the header is learner,exercise,points,reason,note; it must be learner,exercise,points,reason"),
    ("learner,points,exercise,reason\nada,1,total,x\n", "it must be learner,exercise,points,reason"),
])
def test_an_adjustments_row_with_a_field_too_many_or_few_is_refused_with_its_line(tmp_path, monkeypatch, capsys,
                                                                                   text, why):
    """`jjones9,total,1,5,reason` became +1 with the reason "5"."""
    download, roster = _class(tmp_path)
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text(text)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--adjustments", str(adjustments))
    assert status == 2 and why in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_a_quoted_reason_may_hold_commas_and_an_extension_row_has_two_fields(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path)
    adjustments, extensions = tmp_path / "adjustments.csv", tmp_path / "extensions.csv"
    adjustments.write_text('Learner, Exercise ,POINTS,reason\nada,total,1,"late quiz, agreed, by email"\n')
    extensions.write_text("learner,due_at\ndee,2026-03-04T23:59:00Z,extra\n")
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--adjustments", str(adjustments), "--extensions", str(extensions))
    assert status == 2 and "extensions.csv, line 2: 3 fields where the header has 2" in err
    extensions.write_text("learner,due_at\ndee,2026-03-04T23:59:00Z\n")
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--adjustments", str(adjustments), "--extensions", str(extensions))
    assert status == 0, err
    assert _grades(out)["ada"]["adjustments"] == "total +1: late quiz, agreed, by email"
    assert "- +1 point on the total: late quiz, agreed, by email" in (out / "feedback" / "ada.md").read_text()


def test_the_roster_is_kept_in_out_and_a_rerun_without_it_says_so(tmp_path, monkeypatch, capsys):
    """A rerun that forgot --roster blamed line 2 of the kept extensions.csv ("not on the roster")."""
    download, roster = _class(tmp_path)
    extensions = tmp_path / "extensions.csv"
    extensions.write_text("learner,deadline\n14,2026-03-04T23:59:00Z\n")  # Dee by her Canvas ID: the roster's only
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                            "--extensions", str(extensions))
    assert status == 0 and (out / "roster.csv").read_text() == roster.read_text()
    first = (out / "grades.csv").read_bytes(), (out / "canvas.csv").read_bytes()
    status, out, err = _run(tmp_path, monkeypatch, capsys, download)
    assert status == 0 and f"roster: the one kept from the last run ({out / 'roster.csv'})" in err, err
    assert ((out / "grades.csv").read_bytes(), (out / "canvas.csv").read_bytes()) == first
    # a folder that keeps no roster (an older one): the extension's learner is unknown, and why is said
    (out / "roster.csv").unlink()
    status, _, err = _run(tmp_path, monkeypatch, capsys, download)
    assert status == 2 and "no --roster was given and OUT keeps none" in err


def test_tables_go_to_stdout_and_progress_to_stderr(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path)
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    out = tmp_path / "out"
    status = batch.main([str(download), "--out", str(out), "--jobs", "1", "--unconfined", "--roster", str(roster)])
    said = capsys.readouterr()
    assert status == 0 and "Class summary" in said.out and "submissions (3 graded" in said.out
    assert "Class summary" not in said.err and "grading" in said.err


def test_progress_json_is_one_event_per_line(tmp_path, monkeypatch, capsys):
    download, roster = _class(tmp_path)
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    log = tmp_path / "progress.jsonl"
    status = batch.main([str(download), "--out", str(tmp_path / "out"), "--jobs", "1", "--unconfined", "--quiet",
                         "--roster", str(roster), "--progress-json", str(log)])
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert status == 0 and [e["event"] for e in events] == ["start", "graded", "graded", "graded", "end"]
    assert events[0]["to_grade"] == 3 and [e["done"] for e in events[1:4]] == [1, 2, 3]
    assert sorted(e["learner"] for e in events[1:4]) == ["ada", "bob+cy", "dee"]
    assert events[-1]["graded"] == 3
    status = batch.main([str(download), "--out", str(tmp_path / "out"), "--quiet", "--unconfined",
                         "--roster", str(roster), "--progress-json"])
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    assert status == 0 and [e["event"] for e in lines] == ["start", "end"] and lines[0]["to_grade"] == 0


@given(seconds=st.floats(min_value=1.0, max_value=40 * 86400.0, allow_nan=False),
       penalty=st.sampled_from([0.0, 5.0, 10.0, 33.0]))
def test_the_late_time_said_is_the_time_measured_and_the_penalty_says_its_own_rounding(seconds, penalty):
    """"5 min 10 s late" was "6 minutes late": the words add up to the whole seconds measured,
    and the started days and the percent per day are said beside them."""
    policy = LatePolicy(DEADLINE, penalty)
    late = timedelta(seconds=seconds)  # to the microsecond, as times are
    seconds = late.total_seconds()
    _, _, why = policy.apply(10.0, DEADLINE + late)
    words = why.split(" late")[0]
    units = {"day": 86400, "days": 86400, "h": 3600, "min": 60, "s": 1}
    said = re.findall(r"(\d+) (days?|h|min|s)\b", words)
    assert " ".join(f"{n} {u}" for n, u in said) == words  # nothing else in them
    assert sum(int(n) * units[u] for n, u in said) == int(seconds)
    days = -(-seconds // 86400)
    if penalty:
        percent = min(100.0, days * penalty)
        assert why.endswith(f"late: -{percent:g}% ({days:g} started day{'s' if days > 1 else ''} at {penalty:g}% a day"
                            + (", at most 100%)" if percent == 100 else ")")), why
    else:
        assert why.endswith("late: no penalty")
