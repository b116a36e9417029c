"""``mha-grade batch`` on Gradescope's "Export Submissions": learners named by sid or email,
a group's members each with the group's report, ``:created_at:`` for the late policy, the
roster matched by sid or email, and a bad ``submission_metadata.yml`` an error (exit 2, nothing
written), or with ``--names-from-folders`` a warning.

The export is built as Gradescope lays it out (one top folder, ``submission_<id>/`` folders,
``submission_metadata.yml`` with Ruby-symbol keys, a ``__MACOSX`` folder beside it); grading
itself is the instant stand-in of tests/test_batch.py.
"""
import csv
import shutil
import textwrap

import pytest
from test_batch import GOOD, _fake_grade

from autograder.classroom import batch
from autograder.spec import POINTS

FULL = POINTS["softmax"] + POINTS["scaled_dot_product_attention"]
DEADLINE = "2026-03-01T23:59:00+00:00"

METADATA = """\
    ---
    submission_271001:
      :submitters:
      - :name: Ada Lovelace
        :sid: '0100'
        :email: ada@example.edu
        section_name: CS-101-A
      :created_at: 2026-03-01 21:58:05.746365000 Z
      :score: 0.0
      :history: []
    submission_271002:
      :submitters:
      - :name: Bob Babbage
        :sid: '0200'
        :email: bob@example.edu
      - :name: Cy Curie
        :sid:
        :email: Cy@Example.edu
      :created_at: 2026-03-03 11:59:00.000000000 Z
      :score: 0.0
      :history:
      - :created_at: 2026-03-01 20:00:00.000000000 Z
        :score: 0.0
    submission_271003:
      :submitters:
      - :name: Dee Dalton
        :sid: '0300'
        :email: dee@example.edu
      :created_at: 2026-03-01 23:30:00.000000000 Z
      :score: 0.0
"""


def _export(tmp_path, metadata: str = METADATA):
    """What unzipping Gradescope's export gives: a folder holding the export's top folder."""
    top = tmp_path / "download" / "assignment_8046601_export"
    code = {"submission_271001": "import numpy as np\n" + GOOD,  # correct, on time
            "submission_271002": "import numpy as np\n" + GOOD,  # a group of two, 1.5 days late
            "submission_271003": "def softmax(x): return x"}  # wrong, on time
    for folder, source in code.items():
        (top / folder).mkdir(parents=True)
        (top / folder / "attention.py").write_text(source)
    (top / "submission_metadata.yml").write_text(textwrap.dedent(metadata))
    (tmp_path / "download" / "__MACOSX" / "assignment_8046601_export").mkdir(parents=True)
    return tmp_path / "download"


def _csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _grades(out):
    with open(out / "grades.csv", newline="") as f:
        return {row["learner"]: row for row in csv.DictReader(f)}


def _run(tmp_path, monkeypatch, capsys, *options, download=None):
    download = download or _export(tmp_path)
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: _fake_grade)
    out = tmp_path / "out"
    status = batch.main([str(download), "--out", str(out), "--jobs", "2", "--quiet", "--unconfined",
                         "--deadline", DEADLINE, "--late-penalty", "10", *options])
    said = capsys.readouterr()
    return status, out, said.err + said.out  # what the run did is on stdout, warnings on stderr


def test_an_export_is_graded_per_submission_and_reported_per_submitter(tmp_path, monkeypatch, capsys):
    status, out, err = _run(tmp_path, monkeypatch, capsys)
    assert status == 0 and "3 submissions (3 graded" in err and "warn" not in err.lower()
    grades = _grades(out)
    # Named by sid (leading zero kept), by email where the sid is empty; the group's two have a row each.
    assert sorted(grades) == ["0100", "0200", "0300", "Cy@Example.edu"]
    assert grades["0100"]["final"] == str(FULL) and grades["0100"]["status"] == "graded"
    # The group handed in 1.5 days late by :created_at: (the file times are today's): 2 started days, -20%.
    for member in ("0200", "Cy@Example.edu"):
        row = grades[member]
        assert row["total"] == str(FULL) and float(row["final"]) == round(FULL * 0.8, 2)
        assert row["status"] == "late" and row["late_penalty"] == "1 day 12 h late: -20% (2 started days at 10% a day)"
        assert row["submitted_at"] == "2026-03-03T11:59:00+00:00"
    assert grades["0300"]["total"] == "0" and grades["0300"]["status"] == "graded"
    # The group was graded once, under its members' names.
    assert sorted(p.name for p in (out / "reports").iterdir()) == ["0100.json", "0200+Cy@Example.edu.json",
                                                                   "0300.json"]
    # Without a roster, canvas.csv has every submitter, by name and sid.
    canvas = _csv(out / "canvas.csv")
    assert canvas[2:] == [["Ada Lovelace", "", "0100", "", "", str(FULL)],
                          ["Bob Babbage", "", "0200", "", "", str(round(FULL * 0.8, 2))],
                          ["Dee Dalton", "", "0300", "", "", "0"],
                          ["Cy Curie", "", "Cy@Example.edu", "", "", str(round(FULL * 0.8, 2))]]
    for member in ("0200", "Cy@Example.edu"):
        assert "1 day 12 h late: -20%" in (out / "feedback" / f"{member}.md").read_text()


def test_the_roster_matches_sids_and_emails(tmp_path, monkeypatch, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
                      "\"Lovelace, Ada\",11,0100,ada,A\n\"Babbage, Bob\",12,0200,bob,A\n"
                      "\"Curie, Cy\",13,0250,cy@example.edu,B\n\"Eve, Eve\",14,0400,eve,B\n")
    status, out, err = _run(tmp_path, monkeypatch, capsys, "--roster", str(roster), "--assignment", "HW3")
    assert status == 0 and "1 on the roster without a submission" in err
    assert "not on the roster" in err and "0300" in err  # Dee: graded, kept out of canvas.csv
    late = str(round(FULL * 0.8, 2))
    canvas = _csv(out / "canvas.csv")
    assert canvas[0][-1] == "HW3" and canvas[1][-1] == str(FULL)
    assert canvas[2:] == [["Lovelace, Ada", "11", "0100", "ada", "A", str(FULL)],
                          ["Babbage, Bob", "12", "0200", "bob", "A", late],
                          ["Curie, Cy", "13", "0250", "cy@example.edu", "B", late],  # by email, any case
                          ["Eve, Eve", "14", "0400", "eve", "B", "0"]]
    grades = _grades(out)
    assert grades["cy@example.edu"]["final"] == late and grades["eve"]["status"] == "no submission"
    assert grades["0300"]["status"] == "graded"


BAD = {
    "syntax": ("unreadable (ScannerError", METADATA.replace("    submission_271003:", "    submission_271003: :\n   - [")),
    # cut mid-entry, as an interrupted download leaves it: still YAML, one submission short
    "truncated": ("unreadable (ParserError", METADATA[:METADATA.index("    submission_271003:") + 30]),
    "not_a_table": ("not a table of submission folders", "- submission_271001\n"),
    "unlisted": ("does not list submission_271003", METADATA[:METADATA.index("    submission_271003:")]),
    "absent": ("lists submission_999, which is not a submission folder beside it",
               METADATA + "    submission_999:\n      :submitters: []\n"),
    "no_submitters": ("submission_271001: no :submitters:", METADATA.replace(
        "      :submitters:\n      - :name: Ada Lovelace\n        :sid: '0100'\n"
        "        :email: ada@example.edu\n        section_name: CS-101-A\n", "      :submitters: []\n")),
    "no_ids": ("submitter Ada Lovelace has neither :sid: nor :email:",
               METADATA.replace(":sid: '0100'", ":sid: ''").replace(":email: ada@example.edu", ":email:")),
    "no_time": ("submission_271002: :created_at: None is not a date and time",
                METADATA.replace("      :created_at: 2026-03-03 11:59:00.000000000 Z\n", "")),
    "bad_time": ("'yesterday' is not a date and time", METADATA.replace("2026-03-01 23:30:00.000000000 Z", "yesterday")),
}
ROSTER = ("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
          "\"Lovelace, Ada\",11,0100,ada,A\n\"Babbage, Bob\",12,0200,bob,A\n"
          "\"Curie, Cy\",13,0250,cy@example.edu,B\n\"Dalton, Dee\",14,0300,dee,B\n")


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_metadata_stops_the_batch_and_the_earlier_outputs_stay_as_they_were(tmp_path, monkeypatch, capsys, case):
    why, metadata = BAD[case]
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    download = _export(tmp_path)
    status, out, err = _run(tmp_path, monkeypatch, capsys, "--roster", str(roster), download=download)
    assert status == 0 and len(_grades(out)) == 4, err
    before = _snapshot(out)
    (download / "assignment_8046601_export" / "submission_metadata.yml").write_text(textwrap.dedent(metadata))
    for options in (["--roster", str(roster)], []):  # the names matter with a roster, and without one
        status, _, err = _run(tmp_path, monkeypatch, capsys, *options, download=download)
        assert status == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert why in err and "--names-from-folders" in err and "nothing was graded or written" in err
        assert _snapshot(out) == before  # byte-identical, not even touched


@pytest.mark.parametrize("case", sorted(BAD))
def test_names_from_folders_grades_a_damaged_export_by_its_folders_with_one_warning(tmp_path, monkeypatch, capsys,
                                                                                    case):
    why, metadata = BAD[case]
    download = _export(tmp_path, metadata)
    status, out, err = _run(tmp_path, monkeypatch, capsys, "--names-from-folders", download=download)
    assert status == 0, err
    warning = [line for line in err.splitlines() if "submission_metadata.yml" in line]
    assert len(warning) == 1 and "Traceback" not in err, err
    assert str(download / "assignment_8046601_export" / "submission_metadata.yml") in warning[0]
    assert why in warning[0] and warning[0].endswith("the submissions are named by their folders instead")
    assert sorted(_grades(out)) == ["submission_271001", "submission_271002", "submission_271003"]
    # Its times are not trusted either: :created_at: said on time, and the folders, put there today
    # (after the deadline), date nothing: the row says so instead of granting on-time or charging late.
    assert _grades(out)["submission_271001"]["status"] == "no trusted time"


@pytest.mark.parametrize("layout", ["empty", "folders"])
def test_an_export_without_its_metadata_is_never_graded_as_one_learner(tmp_path, monkeypatch, capsys, layout):
    download = tmp_path / "download"
    top = download / "assignment_1_export"
    top.mkdir(parents=True)
    if layout == "folders":
        for folder in ("submission_1", "submission_2"):
            (top / folder).mkdir()
            (top / folder / "attention.py").write_text("import numpy as np\n" + GOOD)
    status, out, err = _run(tmp_path, monkeypatch, capsys, download=download)
    assert status == 2 and f"{top} is laid out as Gradescope's export but has no submission_metadata.yml" in err
    assert not out.exists()
    status, out, err = _run(tmp_path, monkeypatch, capsys, "--names-from-folders", download=download)
    if layout == "empty":
        assert status == 2 and "no submissions in" in err and not out.exists()
    else:  # told to: each folder is a learner, never the export's own folder
        assert status == 0 and sorted(_grades(out)) == ["submission_1", "submission_2"]


def test_the_export_zip_itself_is_refused_with_what_to_do(tmp_path, capsys):
    download = _export(tmp_path)
    archive = shutil.make_archive(str(tmp_path / "submissions"), "zip", download)
    assert batch.main([archive, "--out", str(tmp_path / "out"), "--quiet", "--unconfined"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a zip: unzip it and give its folder" in err
    assert not (tmp_path / "out").exists()
