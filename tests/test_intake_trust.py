"""Intake believes only the instructor, and ambiguity costs only those involved (issue 43,
items 4 and 5): each attack below was first reproduced (a learner's folder read as the
export, a submission dated by its zip entries, one learner's chosen sid stopping the class),
then held.

* The export is the folder the instructor names, or the one folder the class folder holds
  and nothing else; a learner's folder among zips is a submission, whatever it holds.
* A submission's time is the export's, the submitted file's own, or its folder's change
  time; never a time inside what the learner sent. With a deadline and no trusted time the
  row says so and Canvas gets a blank.
* A SID equal to a group's joined name, to another learner's roster email or hashed file
  name, or a roster alias matching two submissions: the submissions involved are held
  (``held.csv``, a reason each; their learners' rows ``held``, blank in Canvas), everyone
  else is graded, every file is written, exit status 3; a term writes its gradebook.
"""
import csv
import json
import os
import zipfile
from datetime import datetime, timedelta, timezone

from classbuild import Entry, Person, canvas_roster, planted, planted_grade, write_export

from autograder.classroom import batch, term
from autograder.classroom.intake.gradescope_export import safe_name

UTC = timezone.utc
DEADLINE = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
ADA = Person("Lovelace, Ada", "11", "100", "ada", "ada@example.edu")
BOB = Person("Babbage, Bob", "12", "200", "bob", "bob@example.edu")
CY = Person("Curie, Cy", "13", "300", "cy", "cy@example.edu")
DEE = Person("Dalton, Dee", "14", "400", "dee", "dee@example.edu")
CODE = planted({"softmax": 3.0})


def _batch(tmp_path, monkeypatch, capsys, download, *options):
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    out = tmp_path / "out"
    status = batch.main([str(download), "--out", str(out), "--jobs", "1", "--quiet", "--unconfined", *options])
    said = capsys.readouterr()
    return status, out, said.err + said.out


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _by(path, key):
    return {row[key]: row for row in _rows(path)}


def _zip(path, files, date=(2026, 2, 20, 12, 0, 0)):
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(zipfile.ZipInfo(name, date), text)
    os.utime(path, (DEADLINE.timestamp() - 3600,) * 2)  # collected an hour before the deadline


# ------------------------------------------------------------- 4. intake from instructor facts

def test_a_learners_folder_among_zips_is_never_the_export(tmp_path, monkeypatch, capsys):
    root = tmp_path / "class"
    root.mkdir()
    for who in ("bob", "cy"):
        _zip(root / f"{who}.zip", {"attention.py": CODE})
    mal = root / "mal"
    (mal / "submission_1").mkdir(parents=True)
    (mal / "submission_1" / "attention.py").write_text(planted({"softmax": 5.0}))
    (mal / "attention.py").write_text(planted({"softmax": 5.0}))
    # she claims 2020, and to be bob and cy, late by a year
    (mal / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Bob\n    :sid: bob\n  - :name: Cy\n    :sid: cy\n"
        "  :created_at: 2027-03-01 00:00:00.000000000 Z\nsubmission_2:\n  :submitters:\n  - :sid: mal\n"
        "  :created_at: 2020-01-01 00:00:00.000000000 Z\n")
    status, out, said = _batch(tmp_path, monkeypatch, capsys, root, "--deadline", DEADLINE.isoformat(),
                               "--late-penalty", "100")
    assert status == 0, said
    grades = _by(out / "grades.csv", "learner")
    assert sorted(grades) == ["bob", "cy", "mal"]  # every learner graded, each in their own row
    assert grades["bob"]["final"] == grades["cy"]["final"] == "3" and grades["bob"]["time_source"] == "file time"
    # her time is when her folder was put there (now: after the deadline), never 2020: it proves
    # nothing of when she handed in, so neither on time nor late
    assert grades["mal"]["time_source"] == "folder change time" and grades["mal"]["status"] == "no trusted time"
    assert not grades["mal"]["submitted_at"].startswith("2020")


def test_a_learners_folder_holding_only_submission_folders_is_her_submission(tmp_path, monkeypatch, capsys):
    root = tmp_path / "class"
    root.mkdir()
    _zip(root / "bob.zip", {"attention.py": CODE})
    (root / "mal" / "submission_1").mkdir(parents=True)
    (root / "mal" / "submission_1" / "attention.py").write_text(CODE)
    status, out, said = _batch(tmp_path, monkeypatch, capsys, root)
    assert status == 0, said
    assert sorted(_by(out / "grades.csv", "learner")) == ["bob", "mal"]


def test_an_unzipped_submission_is_dated_by_its_folder_never_its_zip_entries(tmp_path, monkeypatch, capsys):
    root = tmp_path / "class"
    (root / "mal").mkdir(parents=True)
    _zip(tmp_path / "mal.zip", {"attention.py": CODE}, date=(1980, 1, 1, 0, 0, 0))
    with zipfile.ZipFile(tmp_path / "mal.zip") as z:  # unzipped by the instructor: the entries' dates kept
        z.extractall(root / "mal")
        os.utime(root / "mal" / "attention.py", (315532800, 315532800))  # 1980-01-01, as unzip sets it
    status, out, said = _batch(tmp_path, monkeypatch, capsys, root, "--deadline", DEADLINE.isoformat(),
                               "--late-cutoff", "1")
    assert status == 0, said
    row = _by(out / "grades.csv", "learner")["mal"]
    assert row["time_source"] == "folder change time" and not row["submitted_at"].startswith("1980")
    # Put there now, months after the deadline: when it was handed in is unknown (the outside
    # review's F7: an honest learner whose zip the instructor unzipped late was charged -100 %).
    assert row["status"] == "no trusted time" and row["final"] == "3", row
    assert row["late_penalty"].startswith("collected after the deadline (folder change time")
    assert _by(out / "canvas.csv", "Student")["mal"]["Multi-head attention"] == ""


def test_a_collection_time_shows_a_submission_on_time_never_late(tmp_path, monkeypatch, capsys):
    """A folder's change time (when the instructor put it there) bounds the hand-in from above:
    before the deadline it proves the submission on time; after it, it proves nothing (never late)."""
    root = tmp_path / "class"
    (root / "early").mkdir(parents=True)
    (root / "early" / "attention.py").write_text(CODE)
    deadline = datetime.now(UTC) + timedelta(seconds=1)  # after the folder's change time
    while datetime.now(UTC) <= deadline + timedelta(seconds=0.1):  # past it (file times are coarse)
        pass
    (root / "later").mkdir()
    (root / "later" / "attention.py").write_text(CODE)
    status, out, said = _batch(tmp_path, monkeypatch, capsys, root, "--deadline", deadline.isoformat(),
                               "--late-penalty", "10")
    assert status == 0, said
    grades = _by(out / "grades.csv", "learner")
    assert grades["early"]["status"] == "graded" and grades["early"]["final"] == "3"
    assert grades["later"]["status"] == "no trusted time" and grades["later"]["final"] == "3"
    assert "late" not in {grades["early"]["status"], grades["later"]["status"]}


def test_no_trusted_time_with_a_deadline_says_so_and_grants_nothing(tmp_path, monkeypatch, capsys):
    root = tmp_path / "class"
    root.mkdir()
    _zip(root / "bob.zip", {"attention.py": CODE})
    _zip(root / "mal.zip", {"attention.py": CODE})
    os.utime(root / "mal.zip", (315532800, 315532800))  # a 1980 file time: no hand-in's
    status, out, said = _batch(tmp_path, monkeypatch, capsys, root, "--deadline", DEADLINE.isoformat(),
                               "--late-penalty", "10")
    assert status == 0, said
    grades = _by(out / "grades.csv", "learner")
    assert grades["bob"]["status"] == "graded" and grades["bob"]["canvas"] == "3"
    assert grades["mal"]["status"] == "no trusted time" and grades["mal"]["time_source"] == "no trusted time"
    assert grades["mal"]["late_penalty"].startswith("no trusted submission time")
    assert _by(out / "canvas.csv", "Student")["mal"]["Multi-head attention"] == ""  # blank, never on time


# -------------------------------------------------------- 5. ambiguity costs only those involved

def _export_class(tmp_path, entries, people=(ADA, BOB, CY, DEE)):
    download = write_export(tmp_path / "dl", entries)
    (tmp_path / "roster.csv").write_text(canvas_roster(list(people)))
    return download, tmp_path / "roster.csv"


def _held_run(tmp_path, monkeypatch, capsys, entries, people=(ADA, BOB, CY, DEE)):
    download, roster = _export_class(tmp_path, entries, people)
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--roster", str(roster),
                               "--deadline", DEADLINE.isoformat())
    assert status == batch.PARTIAL == 3, said
    for name in ("grades.csv", "canvas.csv", "held.csv", "summary.md", "history.csv"):
        assert (out / name).is_file(), name
    return out, said


def _on_time(folder, people, score=3.0):
    return Entry(folder, people, DEADLINE - timedelta(hours=1), {"attention.py": planted({"softmax": score})})


def test_a_sid_equal_to_a_groups_joined_name_holds_both_and_grades_the_rest(tmp_path, monkeypatch, capsys):
    mal = Person("Mal, M", "", "100+200", "", "mal@example.edu")
    out, said = _held_run(tmp_path, monkeypatch, capsys, [
        _on_time("submission_1", [ADA, BOB], 5.0), _on_time("submission_2", [mal], 1.0),
        _on_time("submission_3", [CY], 2.0)])
    held = _rows(out / "held.csv")
    assert sorted(h["submission"] for h in held) == ["submission_1", "submission_2"]
    assert all("file name 100+200" in h["reason"] for h in held)
    grades = _by(out / "grades.csv", "learner")
    assert grades["cy"]["final"] == "2" and grades["cy"]["status"] == "graded"
    assert grades["ada"]["status"] == grades["bob"]["status"] == "held" and grades["ada"]["final"] == "0"
    canvas = _by(out / "canvas.csv", "SIS Login ID")
    assert canvas["ada"]["Multi-head attention"] == canvas["bob"]["Multi-head attention"] == ""
    assert canvas["cy"]["Multi-head attention"] == "2" and canvas["dee"]["Multi-head attention"] == "0"
    feedback = (out / "feedback" / "ada.md").read_text()
    assert "Your submission is held" in feedback and "mal" not in feedback.lower()


def test_a_sid_equal_to_another_learners_email_holds_both(tmp_path, monkeypatch, capsys):
    mal = Person("Mal, M", "", "bob@example.edu", "", "mal@example.edu")
    out, said = _held_run(tmp_path, monkeypatch, capsys, [
        _on_time("submission_1", [BOB], 5.0), _on_time("submission_2", [mal], 1.0),
        _on_time("submission_3", [CY], 2.0)])
    assert sorted(h["submission"] for h in _rows(out / "held.csv")) == ["submission_1", "submission_2"]
    grades = _by(out / "grades.csv", "learner")
    assert grades["bob"]["status"] == "held" and grades["cy"]["final"] == "2"
    assert "bob@example.edu" not in grades and "mal@example.edu" not in grades  # no row for the held stranger


def test_a_sid_equal_to_another_learners_hashed_file_name_holds_both(tmp_path, monkeypatch, capsys):
    odd = Person("Odd, O", "", "100 1", "", "odd@example.edu")
    mal = Person("Mal, M", "", safe_name("100 1"), "", "mal@example.edu")  # safe_name is public
    out, said = _held_run(tmp_path, monkeypatch, capsys, [
        _on_time("submission_1", [odd], 5.0), _on_time("submission_2", [mal], 1.0),
        _on_time("submission_3", [CY], 2.0)], people=(CY,))
    assert sorted(h["submission"] for h in _rows(out / "held.csv")) == ["submission_1", "submission_2"]
    assert _by(out / "grades.csv", "learner")["cy"]["final"] == "2"
    assert not (out / "feedback" / f"{safe_name('100 1')}.md").exists()  # nobody's grade under that name


def test_a_roster_alias_matching_two_submissions_holds_both(tmp_path, monkeypatch, capsys):
    # Ada hands in under her sid, and again (or someone else does) under her SIS login as a sid
    other = Person("Ada L", "", "ada", "", "al@example.edu")
    out, said = _held_run(tmp_path, monkeypatch, capsys, [
        _on_time("submission_1", [Person("Lovelace, Ada", "", "100", "", "ada@uni.example")], 5.0),
        _on_time("submission_2", [other], 1.0), _on_time("submission_3", [CY], 2.0)])
    held = _rows(out / "held.csv")
    assert sorted(h["submission"] for h in held) == ["100", "ada"]
    assert all("ada is a submitter of 100 and ada" in h["reason"] for h in held)
    grades = _by(out / "grades.csv", "learner")
    assert grades["ada"]["status"] == "held" and grades["cy"]["status"] == "graded"


def test_a_term_with_a_held_submission_writes_its_gradebook_with_those_cells_marked(tmp_path, monkeypatch, capsys):
    mal = Person("Mal, M", "", "bob@example.edu", "", "mal@example.edu")
    _export_class(tmp_path, [_on_time("submission_1", [BOB], 5.0), _on_time("submission_2", [mal], 1.0),
                             _on_time("submission_3", [CY], 2.0)])
    (tmp_path / "term.toml").write_text(
        '[term]\nname = "T"\nroster = "roster.csv"\n\n[[assignment]]\nname = "A1"\n'
        'exercises = ["softmax", "scaled_dot_product_attention"]\nsubmissions = "dl"\n'
        f'deadline = "{DEADLINE.isoformat()}"\n')
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    status = term.main([str(tmp_path / "term.toml"), "--out", str(tmp_path / "out"), "--unconfined", "--quiet",
                        "--jobs", "1", "--seed", "1"])
    said = capsys.readouterr().err
    assert status == 3, said
    cells = {r["learner"]: (r["final"], r["status"]) for r in _rows(tmp_path / "out" / "term.csv")}
    assert cells["bob"] == ("", "held") and cells["cy"] == ("2", "graded") and cells["ada"] == ("0", "no submission")
    canvas = _by(tmp_path / "out" / "canvas.csv", "SIS Login ID")
    assert canvas["bob"]["A1"] == "" and canvas["cy"]["A1"] == "2"


def test_a_refusal_in_the_progress_json_carries_no_escape_and_no_markup(tmp_path, monkeypatch, capsys):
    # a folder named by a learner, refused by name: OSC 52 (the clipboard), ESC[2J, an <img onerror>
    folder = tmp_path / "x\x1b]52;c;ZXZpbA==\x07\x1b[2J<img src=x onerror=alert(1)>"
    folder.mkdir()
    events = tmp_path / "progress.jsonl"
    status, out, said = _batch(tmp_path, monkeypatch, capsys, folder, "--progress-json", str(events))
    assert status == 2 and "no submissions in" in said
    [line] = [json.loads(line) for line in events.read_text().splitlines()]
    message = line["message"]
    assert line["event"] == "refused" and "no submissions in" in message
    assert "\x1b" not in message and "\x07" not in message and "<img" not in message
    assert "\\x1b]52" in message and "&lt;img src=x onerror=alert(1)&gt;" in message  # shown, inert


def test_a_collision_appearing_at_a_rerun_is_held_never_refused_as_learners_lost(tmp_path, monkeypatch, capsys):
    entries = [_on_time("submission_1", [BOB], 5.0), _on_time("submission_3", [CY], 2.0)]
    download, roster = _export_class(tmp_path, entries)
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0, said
    mal = Person("Mal, M", "", "bob@example.edu", "", "mal@example.edu")
    download = write_export(tmp_path / "dl2", [*entries, _on_time("submission_2", [mal], 1.0)])
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 3, said  # not 2 ("fewer learners"): bob's is held, cy's graded again
    grades = _by(out / "grades.csv", "learner")
    assert grades["bob"]["status"] == "held" and grades["cy"]["final"] == "2"


def test_a_stray_file_beside_the_export_folder_leaves_it_the_export(tmp_path, monkeypatch, capsys):
    download, roster = _export_class(tmp_path, [_on_time("submission_1", [BOB], 5.0)])
    (download / "README.txt").write_text("downloaded from Gradescope")
    status, out, said = _batch(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 0, said
    assert _by(out / "grades.csv", "learner")["bob"]["final"] == "5"
