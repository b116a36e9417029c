"""A semester as instructors really run one (issue 45), each defect first reproduced, then
held: a course time zone, ids as Canvas compares them, two assignments with one name, an
adjustment outside its assignment, resubmissions, the term mid-way (not yet due, a future
assignment without an export, ``--only``, ``--allow-fewer``, a dropped learner, a roster
that loses half the class) and scaled points wherever a person reads them.

Classes are Gradescope exports with a Canvas roster (tests/classbuild.py), graded by the
planted stand-in (each exercise's score written in the learner's code): every number expected
below is written by hand from what the class plants.
"""
import csv
from datetime import datetime, timedelta, timezone

import pytest
from classbuild import Entry, Person, canvas_roster, planted, planted_grade, write_export

from autograder.classroom import batch, term

UTC = timezone.utc
DEADLINE = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
ADA = Person("Lovelace, Ada", "11", "0100", "ada", "ada@example.edu")
BOB = Person("Babbage, Bob", "12", "0200", "bob", "bob@example.edu")
CY = Person("Curie, Cy", "13", "0250", "cy", "cy@example.edu")
FULL = {"softmax": 5.0, "scaled_dot_product_attention": 7.0, "split_heads": 4.0}  # each exercise's points: 16


def _files(scores):
    return {"attention.py": planted(scores)}


def _batch(tmp_path, monkeypatch, capsys, download, *options, out="out"):
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    out = tmp_path / out
    status = batch.main([str(download), "--out", str(out), "--jobs", "1", "--quiet", "--unconfined", *options])
    said = capsys.readouterr()
    return status, out, said.err + said.out


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _by(path, key):
    return {row[key]: row for row in _rows(path)}


def _roster(tmp_path, people, name="roster.csv"):
    (tmp_path / name).write_text(canvas_roster(list(people)))
    return tmp_path / name


# ------------------------------------------------------------------------ 1. the time zone

def test_a_naive_deadline_is_refused_without_a_zone_and_read_in_the_course_zone(tmp_path, monkeypatch, capsys):
    # Ada hands in at 05:00 UTC on 2 March: 21:00 on 1 March in Los Angeles, before a 23:59 deadline there
    download = write_export(tmp_path / "dl", [Entry("submission_1", [ADA], datetime(2026, 3, 2, 5, 0, tzinfo=UTC),
                                                    _files({"softmax": 1.0}))])
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--deadline", "2026-03-01T23:59",
                               "--late-penalty", "10")
    assert status == 2 and "'2026-03-01T23:59' has no time zone" in said and "--tz" in said
    assert not out.exists()
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--deadline", "2026-03-01T23:59",
                               "--late-penalty", "10", "--tz", "America/Los_Angeles")
    assert status == 0, said
    assert _by(out / "grades.csv", "learner")["0100"]["status"] == "graded"  # read as UTC it was 5 h late


def test_a_naive_extension_is_read_in_the_course_zone_or_refused_naming_its_line(tmp_path, monkeypatch, capsys):
    # Bob hands in 3 h after the deadline, inside his extension to 23:59 on 2 March, Los Angeles time
    download = write_export(tmp_path / "dl", [
        Entry("submission_2", [BOB], datetime(2026, 3, 2, 10, 0, tzinfo=UTC), _files({"softmax": 1.0}))])
    extensions = tmp_path / "ext.csv"
    extensions.write_text("learner,deadline\nbob@example.edu,2026-03-02T23:59\n")
    common = ("--deadline", "2026-03-01T23:59-08:00", "--late-penalty", "10", "--extensions", str(extensions))
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, *common)
    assert status == 2 and f"{extensions}, line 2: '2026-03-02T23:59' has no time zone" in said
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, *common, "--tz", "America/Los_Angeles")
    assert status == 0, said
    row = _by(out / "grades.csv", "learner")["0200"]
    assert row["status"] == "graded" and row["final"] == "1"  # no 10 % lost (read as UTC: 18 h late, -10 %)


def test_a_term_without_a_time_zone_refuses_a_naive_deadline_naming_its_line(tmp_path):
    (tmp_path / "term.toml").write_text('[term]\nname = "T"\n\n[[assignment]]\nname = "A1"\nchapters = [1]\n'
                                        'submissions = "a1"\ndeadline = "2026-03-01T23:59"\n')
    with pytest.raises(term.TermError, match=r"term.toml, assignment 'A1', line 8: deadline: .* has no time zone"):
        term.read_term(tmp_path / "term.toml")
    text = (tmp_path / "term.toml").read_text().replace('name = "T"', 'name = "T"\ntimezone = "Europe/Paris"')
    (tmp_path / "term.toml").write_text(text)
    _, [a] = term.read_term(tmp_path / "term.toml")
    assert a["due"] == datetime(2026, 3, 1, 22, 59, tzinfo=UTC)  # 23:59 in Paris, in winter


# ------------------------------------------------------------ 2. identity as Canvas has it

def test_two_assignments_with_one_name_are_refused(tmp_path):
    (tmp_path / "term.toml").write_text(
        '[term]\nname = "T"\n\n'
        '[[assignment]]\nname = "HW1"\nfolder = "hw1"\nchapters = [1]\nsubmissions = "a"\ndeadline = "2026-03-01T23:59Z"\n\n'
        '[[assignment]]\nname = "HW1 "\nfolder = "hw2"\nchapters = [2]\nsubmissions = "b"\ndeadline = "2026-03-08T23:59Z"\n')
    with pytest.raises(term.TermError, match="assignments 1 and 2 are both named 'HW1 '"):
        term.read_term(tmp_path / "term.toml")


def test_an_excel_stripped_sis_id_and_a_changed_case_still_name_the_learner(tmp_path, monkeypatch, capsys):
    # Gradescope has sid 000412345 and EMAIL in capitals; the roster, saved by a spreadsheet, 412345
    eve = Person("Eve, Ng", "15", "000412345", "eve", "eve@example.edu")
    stripped = Person("Eve, Ng", "15", "412345", "eve", "Eve@Example.EDU ")
    fay = Person("Fay, Ok", "16", "0300", "fay", "fay@example.edu")
    download = write_export(tmp_path / "dl", [
        Entry("submission_1", [eve], DEADLINE - timedelta(hours=1), _files({"softmax": 2.0})),
        Entry("submission_2", [fay], DEADLINE - timedelta(hours=1), _files({"softmax": 1.0}))])
    roster = _roster(tmp_path, [stripped, Person("Fay, Ok", "16", "300", "FAY", "fay@example.edu")])
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0, said
    assert "not on the roster" not in said
    canvas = _by(out / "canvas.csv", "SIS Login ID")
    assert canvas["eve"]["Multi-head attention"] == "2" and canvas["FAY"]["Multi-head attention"] == "1"
    assert sorted(_by(out / "grades.csv", "learner")) == ["FAY", "eve"]  # no phantom row


def test_two_roster_rows_one_id_by_canvas_rules_are_refused_naming_both_lines(tmp_path, monkeypatch, capsys):
    download = write_export(tmp_path / "dl", [Entry("submission_1", [ADA], DEADLINE, _files({"softmax": 2.0}))])
    roster = _roster(tmp_path, [ADA, Person("Other, Al", "17", "100", "al", "al@example.edu")])
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 2 and "line 4 has the SIS User ID '100' of line 3" in said and not out.exists()


# ------------------------------------------------- 3. controls validated against the assignment

def test_an_adjustment_for_an_exercise_outside_the_assignment_is_refused_naming_its_line(tmp_path, monkeypatch,
                                                                                          capsys):
    download = write_export(tmp_path / "dl", [Entry("submission_1", [ADA], DEADLINE, _files({"softmax": 2.0}))])
    adjustments = tmp_path / "adj.csv"
    adjustments.write_text("learner,exercise,points,reason\n0100,total,1,quiz\nada@example.edu,split_heads,2,regraded\n")
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "-e", "softmax",
                               "--adjustments", str(adjustments))
    assert status == 2 and f"{adjustments}, line 3: split_heads is not an exercise of this assignment" in said
    assert not out.exists()  # no feedback promising "+2 points on split_heads"


# -------------------------------------------------------------------------- 4. resubmissions

def test_the_newest_submission_counts_and_the_older_is_named(tmp_path, monkeypatch, capsys):
    download = write_export(tmp_path / "dl", [
        Entry("submission_1", [ADA], DEADLINE - timedelta(days=2), _files({"softmax": 1.0})),  # partial, older
        Entry("submission_2", [ADA], DEADLINE - timedelta(hours=1), _files(FULL)),
        Entry("submission_3", [BOB], DEADLINE - timedelta(hours=1), _files({"softmax": 2.0}))])
    roster = _roster(tmp_path, [ADA, BOB])
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0, said
    grades = _by(out / "grades.csv", "learner")
    assert grades["ada"]["final"] == "16" and grades["ada"]["replaces"] == "submission_1 (2026-02-27T23:59:00+00:00)"
    assert _by(out / "canvas.csv", "SIS Login ID")["ada"]["Multi-head attention"] == "16"
    assert sorted(grades) == ["ada", "bob"]  # the older one is no row of its own
    [first] = [r for r in _rows(out / "history.csv") if r["learner"] == "ada"]
    assert first["reason"] == "first run; replaces submission_1 (2026-02-27T23:59:00+00:00)"


# ------------------------------------------------------------------------ 5. the term mid-way

FUTURE = "2099-06-01T23:59:00+00:00"


def _term(tmp_path, people, assignments, roster_people=None, timezone_line=""):
    """A term file over exports built here: ``assignments``: (name, deadline, entries or None)."""
    _roster(tmp_path, roster_people or people)
    toml = ['[term]', 'name = "T"', 'roster = "roster.csv"', timezone_line, '']
    for number, (name, deadline, entries, extra) in enumerate(assignments, 1):
        if entries is not None:
            write_export(tmp_path / f"a{number}", entries, assignment=100 + number)
        toml += ['[[assignment]]', f'name = "{name}"', 'exercises = ["softmax", "scaled_dot_product_attention"]',
                 f'submissions = "a{number}"', f'deadline = "{deadline}"', 'late_penalty = 10', *extra, '']
    (tmp_path / "term.toml").write_text("\n".join(toml))
    return tmp_path / "term.toml"


def _run_term(tmp_path, monkeypatch, capsys, *options):
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    status = term.main([str(tmp_path / "term.toml"), "--out", str(tmp_path / "out"), "--unconfined", "--jobs", "1",
                        "--quiet", "--seed", "3", *options])
    said = capsys.readouterr()
    return status, tmp_path / "out", said.err + said.out


def test_a_term_mid_way_blank_not_zero_skips_a_future_export_and_keeps_extensions_running(tmp_path, monkeypatch,
                                                                                           capsys):
    on_time = DEADLINE - timedelta(hours=2)
    (tmp_path / "ext.csv").write_text(f"learner,deadline\nbob,{FUTURE}\n")
    _term(tmp_path, [ADA, BOB], [
        ("A1", DEADLINE.isoformat(), [Entry("submission_1", [ADA], on_time, _files({"softmax": 3.0}))],
         ['extensions = "ext.csv"', 'points = 10']),
        ("A2", FUTURE, None, ['points = 10']),  # no export yet
        ("A3", FUTURE, None, [])])  # its folder made, empty
    (tmp_path / "a3").mkdir()
    status, out, said = _run_term(tmp_path, monkeypatch, capsys)
    assert status == 0, said
    assert "A2: not yet due (2099-06-01T23:59:00+00:00) and no submissions yet" in said
    assert f"A3: not yet due (2099-06-01T23:59:00+00:00) and no submissions yet ({tmp_path / 'a3'} is empty)" in said
    canvas = _by(out / "canvas.csv", "SIS Login ID")
    # Ada: 3 of 12 points (softmax 5 + attention 7), scaled to 10: 2.5. Bob's extension runs: blank,
    # not 0. A2: blank for all.
    assert (canvas["ada"]["A1"], canvas["ada"]["A2"], canvas["bob"]["A1"], canvas["bob"]["A2"]) == ("2.5", "", "", "")
    assert canvas[""]["A1"] == "10" and canvas[""]["A2"] == "10"  # the Points Possible row
    cells = {(r["learner"], r["assignment"]): (r["final"], r["status"], r["raw_final"]) for r in _rows(out / "term.csv")}
    assert cells == {("ada", "A1"): ("2.5", "graded", "3"), ("bob", "A1"): ("", "not yet due", "0"),
                     ("ada", "A2"): ("", "not yet due", ""), ("bob", "A2"): ("", "not yet due", ""),
                     ("ada", "A3"): ("", "not yet due", ""), ("bob", "A3"): ("", "not yet due", "")}


def test_only_grades_one_assignment_and_the_gradebook_says_what_is_not_graded(tmp_path, monkeypatch, capsys):
    entry = [Entry("submission_1", [ADA], DEADLINE - timedelta(hours=2), _files({"softmax": 2.0}))]
    _term(tmp_path, [ADA], [("A1", DEADLINE.isoformat(), entry, []), ("A2", DEADLINE.isoformat(), entry, [])])
    status, out, said = _run_term(tmp_path, monkeypatch, capsys, "--only", "A2")
    assert status == 0, said
    cells = {(r["learner"], r["assignment"]): (r["final"], r["status"]) for r in _rows(out / "term.csv")}
    assert cells == {("ada", "A1"): ("", "not graded"), ("ada", "A2"): ("2", "graded")}
    assert not (out / "A1").exists()


def test_a_dropped_learner_keeps_earlier_grades_and_a_roster_losing_half_is_refused(tmp_path, monkeypatch, capsys):
    people = [Person(f"L{i}, N", str(20 + i), f"05{i:02d}", f"l{i}", f"l{i}@example.edu") for i in range(8)]
    entries = [Entry(f"submission_{i}", [p], DEADLINE - timedelta(hours=2), _files({"softmax": 2.0}))
               for i, p in enumerate(people)]
    _term(tmp_path, people, [("A1", DEADLINE.isoformat(), entries, [])])
    status, out, said = _run_term(tmp_path, monkeypatch, capsys)
    assert status == 0, said
    # the other section's roster: 4 of the 8
    _roster(tmp_path, people[:4])
    before = (out / "canvas.csv").read_bytes()
    status, _, said = _run_term(tmp_path, monkeypatch, capsys)
    assert status == 2 and "the roster drops 4 of the 8 learners" in said and "--allow-fewer" in said
    assert (out / "canvas.csv").read_bytes() == before
    # one learner dropped: allowed; their A1 grade stays in term.csv, with their status
    _roster(tmp_path, people[:7])
    status, _, said = _run_term(tmp_path, monkeypatch, capsys)
    assert status == 0, said
    cells = {r["learner"]: (r["final"], r["status"]) for r in _rows(out / "term.csv")}
    assert cells["0507"] == ("2", "graded (not on the roster)") and cells["l0"] == ("2", "graded")
    assert "l7" not in _by(out / "canvas.csv", "SIS Login ID")
    # told to: the half roster replaces it
    _roster(tmp_path, people[:4])
    status, _, said = _run_term(tmp_path, monkeypatch, capsys, "--allow-fewer")
    assert status == 0, said
    assert sorted(_by(out / "canvas.csv", "SIS Login ID")) == ["", "l0", "l1", "l2", "l3"]  # "": Points Possible


# ---------------------------------------------------------------------- 6. scaled everywhere

def test_scaled_points_with_the_raw_beside_in_history_feedback_and_term_csv(tmp_path, monkeypatch, capsys):
    entry = [Entry("submission_1", [ADA], DEADLINE - timedelta(hours=2), _files({"softmax": 3.0}))]
    _term(tmp_path, [ADA], [("A1", DEADLINE.isoformat(), entry, ["points = 20"])])
    status, out, said = _run_term(tmp_path, monkeypatch, capsys)
    assert status == 0, said
    # 3 of 12 points (softmax 5 + attention 7), scaled to 20: 5
    assert _by(out / "A1" / "canvas.csv", "SIS Login ID")["ada"]["A1"] == "5"
    [history] = _rows(out / "A1" / "history.csv")
    assert history["final_after"] == "5 (3/12 raw)"
    feedback = (out / "A1" / "feedback" / "ada.md").read_text()
    assert "**Score: 5 / 20** (3 / 12 points graded)" in feedback
    [row] = _rows(out / "term.csv")
    assert (row["final"], row["points_possible"], row["raw_final"], row["raw_possible"]) == ("5", "20", "3", "12")
