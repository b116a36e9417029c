"""A 60-learner semester, mid-way, graded by ``mha-grade term`` as an instructor runs it (issue
45): the course time zone with deadlines written without a zone, an assignment in the future
with no export yet, extensions still running, a resubmission, SIS User IDs whose leading zeros
a spreadsheet stripped from the roster, adjustments by any id, points scaled for Canvas, and
a learner dropped from the roster after handing in twice.

Every expected cell below is written by hand from the rules of book/guides/term.md, not
computed by the grader or by a copy of its rules: the default is the same for most learners,
and each learner the plan treats otherwise is listed with the arithmetic that gives the cell.
Grading is the planted stand-in (each exercise's score written in the learner's code).
"""
import csv
from datetime import datetime, timedelta, timezone

from classbuild import Entry, Person, canvas_roster, planted, planted_grade, write_export

from autograder.classroom import batch, term

UTC = timezone.utc
LA = timezone(timedelta(hours=-8))  # Los Angeles in February and early March 2026 (DST starts 8 March)
# Each assignment grades softmax (5 points) and scaled_dot_product_attention (7): 12 raw points.
FULL = planted({"softmax": 5.0, "scaled_dot_product_attention": 7.0})
PEOPLE = [Person(f"Learner{i:02d}, Ann", str(5000 + i), f"0004123{i:02d}", f"s{i:02d}", f"s{i:02d}@uni.example")
          for i in range(60)]
STRIPPED = {i for i in range(60) if i % 10 == 0}  # the roster's SIS User ID lost its zeros: 000412310 -> 412310
DROPPED = 59  # handed in A1 and A2, then left the roster


def _roster():
    rows = []
    for i, p in enumerate(PEOPLE[:DROPPED]):
        sis = str(int(p.sis_user)) if i in STRIPPED else p.sis_user
        rows.append(Person(p.name, p.canvas_id, sis, p.login, p.email))
    return canvas_roster(rows)


def _entry(number, i, when, code=FULL, suffix=""):
    return Entry(f"submission_{number}{i:02d}{suffix}", [PEOPLE[i]], when.astimezone(UTC), {"attention.py": code})


def _build(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "roster.csv").write_text(_roster())
    # A1 HW1: due 2026-02-01 23:59 in Los Angeles = 2026-02-02 07:59 UTC; 10 % per started day
    d1 = datetime(2026, 2, 1, 23, 59, tzinfo=LA)
    a1 = [_entry(1, i, d1 - timedelta(hours=3)) for i in range(60) if i not in (3, 7, 11, 15)]
    a1 += [_entry(1, 3, d1 + timedelta(hours=2)),  # 2 h late
           _entry(1, 11, datetime(2026, 2, 2, 5, 0, tzinfo=UTC)),  # 21:00 in LA: on time (5 h late if read as UTC)
           _entry(1, 15, d1 - timedelta(hours=3), planted({"softmax": 2.0, "scaled_dot_product_attention": 7.0}))]
    write_export(folder / "a1", a1, assignment=9001)
    # A2 HW2: due 2026-02-15 23:59 LA; 20 % per started day; 24 points in Canvas
    d2 = datetime(2026, 2, 15, 23, 59, tzinfo=LA)
    a2 = [_entry(2, i, d2 - timedelta(hours=3)) for i in range(60) if i not in (4, 5, 7)]
    a2 += [_entry(2, 4, d2 - timedelta(days=2), planted({"scaled_dot_product_attention": 7.0}), "a"),  # older: 7
           _entry(2, 4, d2 - timedelta(hours=1), FULL, "b"),  # the resubmission: full
           _entry(2, 5, d2 + timedelta(hours=36))]  # 1.5 days late
    write_export(folder / "a2", a2, assignment=9002)
    (folder / "a2-adjustments.csv").write_text(
        "learner,exercise,points,reason\ns08,total,1,extra credit\n000412309,softmax,-2,the docstring was copied\n")
    # A3 HW3: due in 2099, no export yet. A4 HW4: due 2026-03-01 23:59 LA, extensions
    d4 = datetime(2026, 3, 1, 23, 59, tzinfo=LA)
    a4 = [_entry(4, i, d4 - timedelta(hours=3)) for i in range(59) if i not in (7, 12, 13, 14, 17)]
    a4 += [_entry(4, 17, datetime(2026, 3, 3, 20, 0, tzinfo=LA))]  # inside the extension to 3 March 23:59 LA
    write_export(folder / "a4", a4, assignment=9004)
    (folder / "a4-extensions.csv").write_text(
        "learner,deadline\ns12,2099-01-01T00:00\n000412313,2099-01-01T00:00\n412314,2099-01-01T00:00\n"
        "s16,2099-01-01T00:00\ns17,2026-03-03T23:59\n")
    assignment = ('[[assignment]]\nname = "{}"\nexercises = ["softmax", "scaled_dot_product_attention"]\n'
                  'submissions = "{}"\ndeadline = "{}"\nlate_penalty = {}\n')
    (folder / "term.toml").write_text(
        '[term]\nname = "Spring 2026"\nroster = "roster.csv"\ntimezone = "America/Los_Angeles"\n\n'
        + assignment.format("HW1", "a1", "2026-02-01T23:59", 10) + "\n"
        + assignment.format("HW2", "a2", "2026-02-15T23:59", 20) + 'points = 24\nadjustments = "a2-adjustments.csv"\n\n'
        + assignment.format("HW3", "a3", "2099-03-01T23:59", 10) + 'points = 10\n\n'
        + assignment.format("HW4", "a4", "2026-03-01T23:59", 10) + 'extensions = "a4-extensions.csv"\n')


# What Canvas gets, by hand. Most learners hand in everything on time, full: HW1 12 (raw), HW2
# 24 (12 of 12 scaled to 24), HW3 blank (not yet due), HW4 12.
DEFAULT = {"HW1": "12", "HW2": "24", "HW3": "", "HW4": "12"}
CANVAS = {
    "s03": {"HW1": "10.8"},  # 2 h late: 1 started day at 10 %: 12 x 0.9
    "s04": {"HW2": "24"},  # the newer, full submission counts (the older: 7 of 12, 14)
    "s05": {"HW2": "14.4"},  # 36 h late: 2 started days at 20 %: 12 x 0.6 = 7.2, scaled x 2
    "s07": {"HW1": "0", "HW2": "0", "HW4": "0"},  # handed in nothing that is due
    "s08": {"HW2": "26"},  # +1 on the total: 13, scaled x 2
    "s09": {"HW2": "20"},  # softmax -2: 3 + 7 = 10, scaled x 2
    "s11": {"HW1": "12"},  # 21:00 in Los Angeles: on time
    "s12": {"HW4": ""}, "s13": {"HW4": ""}, "s14": {"HW4": ""},  # extensions running: blank, not 0
    "s15": {"HW1": "9"},  # softmax 2 of 5: 2 + 7
    "s16": {"HW4": ""},  # handed in, but the extension runs: blank
    "s17": {"HW4": "12"},  # inside the extension, read in Los Angeles (as UTC: 4 h late, 10.8)
}
STATUS = {("s03", "HW1"): "late", ("s05", "HW2"): "late", ("s07", "HW1"): "no submission",
          ("s07", "HW2"): "no submission", ("s07", "HW4"): "no submission", ("s12", "HW4"): "not yet due",
          ("s13", "HW4"): "not yet due", ("s14", "HW4"): "not yet due", ("s16", "HW4"): "not yet due"}
POSSIBLE = {"HW1": "12", "HW2": "24", "HW3": "10", "HW4": "12"}
# The dropped learner: their two grades stay in term.csv under their Gradescope sid, with a status
# that says so; they are not in canvas.csv.
DROPPED_ROWS = {("000412359", "HW1"): ("12", "12", "graded (not on the roster)"),
                ("000412359", "HW2"): ("24", "24", "graded (not on the roster)")}


def test_a_sixty_learner_semester_mid_way_gives_the_gradebook_worked_out_by_hand(tmp_path, monkeypatch, capsys):
    _build(tmp_path)
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: planted_grade)
    status = term.main([str(tmp_path / "term.toml"), "--out", str(tmp_path / "out"), "--unconfined", "--quiet",
                        "--jobs", "1", "--seed", "11"])
    said = capsys.readouterr().err
    assert status == 0, said
    assert "HW3: not yet due (2099-03-01T23:59) and no submissions yet" in said
    with open(tmp_path / "out" / "canvas.csv", newline="") as f:
        canvas = list(csv.DictReader(f))
    assert [canvas[0][n] for n in POSSIBLE] == list(POSSIBLE.values())
    assert [row["SIS Login ID"] for row in canvas[1:]] == [f"s{i:02d}" for i in range(DROPPED)]
    wrong = [(row["SIS Login ID"], n, row[n]) for row in canvas[1:] for n in DEFAULT
             if row[n] != CANVAS.get(row["SIS Login ID"], {}).get(n, DEFAULT[n])]
    assert wrong == []
    # the stripped ids kept their learners: the roster's own SIS User ID in Canvas's file
    assert canvas[1]["SIS User ID"] == "412300" and canvas[2]["SIS User ID"] == "000412301"
    with open(tmp_path / "out" / "term.csv", newline="") as f:
        rows = {(r["learner"], r["assignment"]): (r["final"], r["points_possible"], r["status"])
                for r in csv.DictReader(f)}
    expected = {}
    for i in range(DROPPED):
        login = f"s{i:02d}"
        for n in DEFAULT:
            final = CANVAS.get(login, {}).get(n, DEFAULT[n])
            status = STATUS.get((login, n), "not yet due" if n == "HW3" else "graded")
            expected[(login, n)] = (final, POSSIBLE[n], status)
    expected.update(DROPPED_ROWS)
    assert {k: v for k, v in rows.items() if expected.get(k) != v} == {}
    assert set(expected) - set(rows) == set()
    # the resubmission is named where the instructor reads it
    with open(tmp_path / "out" / "HW2" / "grades.csv", newline="") as f:
        s04 = next(r for r in csv.DictReader(f) if r["learner"] == "s04")
    assert s04["replaces"] == "submission_204a (2026-02-14T07:59:00+00:00)"
