"""Batch grading of a class: parallel graders, hostile submissions, caching, summary, similarity.

Most tests grade with a small stand-in for the pipeline (``_fake_grade``: no torch, instant),
so they test the batch machinery itself; ``test_batch_with_the_real_pipeline`` runs the real
isolated grader on a three-learner class and one exercise.
"""
import csv
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from autograder.classroom import batch, intake, similarity
from autograder.classroom.write import summary
from autograder.spec import POINTS

ROOT = Path(__file__).resolve().parent.parent

GOOD = "def softmax(x, axis=-1):\n    e = np.exp(x - x.max(axis=axis, keepdims=True))\n    return e / e.sum(axis=axis, keepdims=True)\n"


def _fake_grade(path, exercises=None, seed=0):
    """Stand-in for runner.grade_submission: behaviour chosen by the submission's files."""
    p = Path(path)
    code = (p / "attention.py").read_text() if (p / "attention.py").exists() else ""
    if "HANG" in code:
        time.sleep(60)
    if "EXIT" in code:
        os._exit(3)
    if "RAISE" in code:
        raise RuntimeError("grader bug")
    ok = "np.exp" in code
    diagnosis = None if ok or not code else "your output matches softmax without max subtraction"
    ids = exercises or ["softmax", "scaled_dot_product_attention"]
    exs = [{"id": e, "status": "passed" if ok else ("failed" if code else "not attempted"),
            "score": float(POINTS[e]) if ok else 0.0, "max_score": float(POINTS[e]),
            "cases": [{"name": "float32", "score": 0.0, "max_score": 1.0, "passed": ok, "feedback": "",
                       "diagnosis": diagnosis}], "feedback": "", "notes": []} for e in ids]
    return {"submission": str(p), "score": sum(e["score"] for e in exs),
            "max_score": float(sum(POINTS[e] for e in ids)), "exercises": exs, "seed": seed,
            "grader_pid": os.getpid()}


def _fake_grade_unzipped(path, exercises=None, seed=0):
    """:func:`_fake_grade` of a folder or of a zip (unzipped aside first)."""
    if Path(path).suffix != ".zip":
        return _fake_grade(path, exercises, seed)
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as where:
        zipfile.ZipFile(path).extractall(where)
        report = _fake_grade(where, exercises, seed)
    return {**report, "submission": str(path)}


def _class(tmp_path, learners: dict[str, str]) -> Path:
    root = tmp_path / "class"
    for learner, code in learners.items():
        (root / learner).mkdir(parents=True)
        if code is not None:
            (root / learner / "attention.py").write_text(code)
    return root


def _grades(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv") as f:
        return {row["learner"]: row for row in csv.DictReader(f)}


def test_hostile_submissions_cost_only_their_own_time(tmp_path):
    root = _class(tmp_path, {"ada": "import numpy as np\n" + GOOD, "bob": "x = 1  # HANG",
                             "cy": "EXIT", "dee": "RAISE", "eve": None, "fay": "def softmax(x): return x"})
    out = tmp_path / "out"
    start = time.perf_counter()
    result = batch.run_batch(root, out, jobs=2, timeout=2.0, grade=_fake_grade, progress=False)
    wall = time.perf_counter() - start
    # Only the hang waits for its deadline (2 s); everything else is graded meanwhile by the other grader.
    assert wall < 10
    grades = _grades(out)
    assert sorted(grades) == ["ada", "bob", "cy", "dee", "eve", "fay"]
    assert float(grades["ada"]["total"]) == POINTS["softmax"] + POINTS["scaled_dot_product_attention"]
    assert grades["ada"]["softmax"] == str(POINTS["softmax"]) and grades["ada"]["error"] == ""
    assert "longer than 2 s" in grades["bob"]["error"]
    assert "died" in grades["cy"]["error"]
    # A grader that raised: tried again, then the learner is told what failed, never the traceback.
    said = json.loads((out / "reports" / "dee.json").read_text())["error"]
    assert "the grader failed (RuntimeError)" in said and "in 3 tries" in said, said
    assert "Traceback" not in said and "grader bug" not in said and str(ROOT) not in said
    assert "RuntimeError: grader bug" in next(o.error for o in result.outcomes if o.learner == "dee")
    for learner in ("bob", "cy", "dee"):
        report = json.loads((out / "reports" / f"{learner}.json").read_text())
        assert report["score"] == 0 and {e["status"] for e in report["exercises"]} == {"error"}
    assert float(grades["eve"]["total"]) == 0 and float(grades["fay"]["total"]) == 0
    assert {o.learner for o in result.outcomes if o.error} == {"bob", "cy", "dee"}
    assert (out / "summary.png").stat().st_size > 1000
    assert "| `softmax` | 5 | 17% |" in (out / "summary.md").read_text()


def test_rerun_grades_only_changed_submissions(tmp_path):
    root = _class(tmp_path, {"ada": "import numpy as np\n" + GOOD, "bob": "def softmax(x): return x",
                             "cy": "def softmax(x): return x + 0"})
    out = tmp_path / "out"
    first = batch.run_batch(root, out, jobs=2, grade=_fake_grade, progress=False)
    assert first.graded == 3
    pids = {o.learner: o.report["grader_pid"] for o in first.outcomes}
    assert len(set(pids.values())) <= 2  # graders are reused across submissions

    again = batch.run_batch(root, out, jobs=2, grade=_fake_grade, progress=False)
    assert again.graded == 0 and len(again.outcomes) == 3
    assert _grades(out)["ada"]["total"] == str(POINTS["softmax"] + POINTS["scaled_dot_product_attention"])

    (root / "bob" / "attention.py").write_text("import numpy as np\n" + GOOD)
    changed = batch.run_batch(root, out, jobs=2, grade=_fake_grade, progress=False)
    assert [o.learner for o in changed.outcomes if not o.skipped] == ["bob"]
    assert float(_grades(out)["bob"]["total"]) > 0

    # A different exercise selection or seed is a different grade: graded again.
    assert batch.run_batch(root, out, jobs=2, grade=_fake_grade, progress=False, seed=7).graded == 3
    forced = batch.run_batch(root, out, jobs=2, grade=_fake_grade, progress=False, seed=7, force=True)
    assert forced.graded == 3


def test_content_hash_ignores_caches_and_zip_timestamps(tmp_path):
    root = _class(tmp_path, {"ada": GOOD})
    h = intake.content_hash(root / "ada")
    (root / "ada" / "__pycache__").mkdir()
    (root / "ada" / "__pycache__" / "attention.cpython-311.pyc").write_bytes(b"\0")
    assert intake.content_hash(root / "ada") == h
    (root / "ada" / "data.bin").write_bytes(b"\0" * 1000)  # nothing a grader reads
    assert intake.content_hash(root / "ada") == h
    (root / "ada" / "attention.py").write_text(GOOD + "\n")
    assert intake.content_hash(root / "ada") != h
    z1 = shutil.make_archive(str(tmp_path / "z1"), "zip", root / "ada")
    os.utime(root / "ada" / "attention.py", (1e9, 1e9))
    z2 = shutil.make_archive(str(tmp_path / "z2"), "zip", root / "ada")
    assert intake.content_hash(Path(z1)) == intake.content_hash(Path(z2))


def test_find_submissions_dirs_zips_and_notebooks(tmp_path):
    for d in ("ada", ".git", "__MACOSX"):
        (tmp_path / d).mkdir()
    (tmp_path / "bob.zip").write_bytes(b"PK")
    (tmp_path / "cy.ipynb").write_text("{}")
    (tmp_path / "notes.txt").write_text("")
    assert sorted(intake.find_submissions(tmp_path)) == ["ada", "bob", "cy"]


def test_summary_counts_mistakes_once_per_learner():
    def report(score, status, diagnoses):
        cases = [{"name": str(i), "diagnosis": d} for i, d in enumerate(diagnoses)]
        return {"score": score, "max_score": 5.0,
                "exercises": [{"id": "softmax", "status": status, "score": score, "max_score": 5.0, "cases": cases}]}
    stats = summary.summarize({
        "a": report(5.0, "passed", []), "b": report(0.0, "failed", ["no max subtraction", "no max subtraction"]),
        "c": report(2.5, "partial", ["no max subtraction", "wrong axis"]), "d": report(0.0, "not attempted", []),
    })
    (ex,) = stats.exercises
    assert (ex.passed, ex.attempted) == (1, 3)
    assert ex.mistakes.most_common() == [("no max subtraction", 2), ("wrong axis", 1)]
    assert [k for *_, k in stats.histogram] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 1]  # 5.0 falls in the last bin
    md = summary.to_markdown(stats)
    assert "| `softmax` | 5 | 25% | 75% | 1.88 | no max subtraction (2/4); wrong axis (1/4) |" in md


BODY = ("import numpy as np\n\ndef softmax(x, axis=-1):\n    \'\'\'Mine.\'\'\'\n"
        "    shifted = x - np.max(x, axis=axis, keepdims=True)  # stability\n"
        "    exps = np.exp(shifted)\n    total = np.sum(exps, axis=axis, keepdims=True)\n"
        "    return exps / total\n")
RENAMED = ("import numpy as np\ndef softmax(logits, axis = -1):\n    # copied\n"
           "    z = logits - np.max(logits, axis=axis, keepdims=True)\n    e = np.exp(z)\n"
           "    s = np.sum(e, axis=axis, keepdims=True)\n\n    return e/s\n")
OWN = ("import numpy as np\ndef softmax(x, axis=-1):\n    x = np.moveaxis(x, axis, -1)\n"
       "    out = np.empty_like(x)\n    for i in np.ndindex(x.shape[:-1]):\n"
       "        row = np.exp(x[i] - x[i].max())\n        out[i] = row / row.sum()\n"
       "    return np.moveaxis(out, -1, axis)\n")


def _similar(tmp_path, learners: dict[str, str], finder=None):
    finder = finder or similarity.Similarity(tmp_path / "cache", warn=lambda m: None)
    code = {k: finder.code(hashlib.sha256(v.encode()).hexdigest(), {"attention": v}) for k, v in learners.items()}
    result = finder.run(code)
    similarity.save(finder.folder, finder.new)
    return finder, result


def test_similarity_sees_through_renaming_and_formatting(tmp_path):
    stub = (ROOT / "mha_exercises" / "attention.py").read_text()
    _, result = _similar(tmp_path, {"ada": BODY, "bob": RENAMED, "cy": OWN, "s1": stub, "s2": stub})
    assert [(c.learners, c.exercises) for c in result.clusters] == [(["ada", "bob"], {"softmax": 1.0})]


def test_similarity_leaves_out_common_code_and_normalises_only_new_submissions(tmp_path):
    template = ("import numpy as np\ndef softmax(x, axis=-1):\n    m = np.max(x, axis=axis, keepdims=True)\n"
                "    y = np.exp(x - m)\n    d = np.sum(y, axis=axis, keepdims=True)\n    r = y / d\n"
                "    assert np.all(np.isfinite(r))\n    return r\n")
    # A class from one template: each learner adds a line of their own; two share a block of theirs.
    learners = {f"t{i}": template.replace("    return r", f"    r = r + {i} * 0\n    return r") for i in range(8)}
    shared = ("    lo = np.finfo(r.dtype).tiny\n    r = np.where(r < lo, 0, r)\n"
              "    r = r / np.maximum(r.sum(axis=axis, keepdims=True), lo)\n    return r")
    learners["t6"] = learners["t7"] = template.replace("    return r", shared)
    learners.update(ada=BODY, bob=RENAMED, cy=OWN)
    finder, result = _similar(tmp_path, learners)
    assert sorted(c.learners for c in result.clusters) == [["ada", "bob"], ["t6", "t7"]]
    assert finder.normalised == len(set(learners.values())) and finder.cached == len(learners) - finder.normalised
    # One late submission: only it is normalised; the others come from the cache.
    late = OWN.replace("    return np.moveaxis", "    out = out.astype(x.dtype)\n    return np.moveaxis")
    again, result = _similar(tmp_path, {**learners, "dee": late})
    assert (again.normalised, again.cached) == (1, len(learners))
    assert sorted(c.learners for c in result.clusters) == [["ada", "bob"], ["cy", "dee"], ["t6", "t7"]]
    md = similarity.clusters_markdown(result)
    assert "3 learners" not in md and "2 learners: cy, dee" in md


# ------------------------------------------------- the process ahead (classroom/ahead.py)

def _ahead(argv: list):
    """The process ahead, started as ``mha-grade batch`` starts it: its options in a memory file."""
    from autograder.classroom import ahead

    fd = os.memfd_create("options", 0)
    os.write(fd, json.dumps({"argv": ["batch", *map(str, argv)], "env": dict(os.environ)}).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        return ahead.Ahead.start(fd)
    finally:
        os.close(fd)


def test_the_process_ahead_reads_what_the_batch_would_and_writes_nothing(tmp_path):
    root = _class(tmp_path, {"ada": BODY, "bob": RENAMED, "cy": OWN})
    (root / "dee.zip").write_bytes(b"not a zip")
    out = tmp_path / "out"
    started = _ahead([root, "--out", out, "--jobs", "2", "--similarity"])
    ready = started.prepared(intake.asked(root, out, 2, None, True))
    started.close()
    own = intake.prepare(root, out, 2, None, True, warn=lambda m: None)
    assert ready is not None and ready.asked == own.asked
    assert {k: v.sha256 for k, v in ready.loaded.items()} == {k: v.sha256 for k, v in own.loaded.items()}
    assert ready.refused == own.refused and list(ready.refused) == ["dee"]
    assert [c.learners for c in ready.similar.clusters] == [c.learners for c in own.similar.clusters] == [["ada", "bob"]]
    assert ready.fingerprints.keys() == own.fingerprints.keys() and len(ready.fingerprints) == 3
    assert not out.exists()  # read only: the batch writes, once it is sure to run


def test_a_batch_whose_process_ahead_died_or_read_another_command_reads_the_class_itself(tmp_path):
    import signal

    root = _class(tmp_path, {"ada": "import numpy as np\n" + GOOD, "bob": "def softmax(x): return x"})
    out = tmp_path / "out"
    other = _ahead([root, "--out", tmp_path / "elsewhere", "--jobs", "2"])
    dead = _ahead([root, "--out", out, "--jobs", "2"])
    os.kill(dead.pid, signal.SIGKILL)
    for started in (other, dead):
        result = batch.run_batch(root, out, jobs=2, grade=_fake_grade, progress=False, force=True, ahead=started)
        assert result.graded == 2 and set(_grades(out)) == {"ada", "bob"}
        assert (out / "summary.png").read_bytes()[:4] == b"\x89PNG"  # by it, or beside when it is dead


def test_the_process_ahead_draws_the_summary_and_is_reaped(tmp_path):
    root = _class(tmp_path, {"ada": "import numpy as np\n" + GOOD, "bob": "def softmax(x): return x"})
    out = tmp_path / "out"
    started = _ahead([root, "--out", out, "--jobs", "2"])
    result = batch.run_batch(root, out, jobs=2, grade=_fake_grade, progress=False, ahead=started)
    assert result.graded == 2 and started.exitcode == 0
    assert (out / "summary.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(started.pid, os.WNOHANG)


def test_batch_with_the_real_pipeline(tmp_path):
    """Three learners through the isolated pipeline, one exercise: correct, stubs, os._exit at import."""
    pytest.importorskip("autograder.grading.runner")
    root = tmp_path / "class"
    shutil.copytree(ROOT / "solutions", root / "ada")
    shutil.copytree(ROOT / "mha_exercises", root / "bob")
    (root / "cy").mkdir()
    # its softmax is there (the grader's own parse finds it): the process dies before it runs
    (root / "cy" / "attention.py").write_text("import os\nos._exit(0)\n\n\ndef softmax(x, axis=-1):\n    return x\n")
    shutil.make_archive(str(root / "ada"), "zip", root / "ada")  # ada hands in a zip
    shutil.rmtree(root / "ada")
    out = tmp_path / "out"
    assert batch.main([str(root), "--out", str(out), "--jobs", "2", "--exercise", "softmax",
                       "--quiet", "--similarity"]) == 0
    grades = _grades(out)
    assert grades["ada"]["softmax"] == str(POINTS["softmax"]) and grades["ada"]["total"] == str(POINTS["softmax"])
    assert grades["bob"]["total"] == "0" and grades["cy"]["total"] == "0"
    bob = json.loads((out / "reports" / "bob.json").read_text())
    assert [e["status"] for e in bob["exercises"]] == ["not attempted"]
    cy = json.loads((out / "reports" / "cy.json").read_text())
    assert [e["status"] for e in cy["exercises"]] == ["error"]
    assert (out / "similarity.md").exists() and (out / "summary.png").exists()


# ------------------------------------------------------------------- regrades that are right

def test_a_changed_grader_or_seed_regrades_everyone_and_the_seed_is_kept(tmp_path, monkeypatch, capsys):
    root = _class(tmp_path, {"ada": "import numpy as np\n" + GOOD, "bob": "def softmax(x): return x"})
    out = tmp_path / "out"
    first = batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False)
    seed_file = out / ".seed"
    assert seed_file.stat().st_mode & 0o777 == 0o600 and int(seed_file.read_text()) == first.seed
    assert batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False).graded == 0  # same stored seed
    # A check changed (or the solutions, or the grader's code): nothing is reused.
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "another grader")
    assert batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False).graded == 2
    from rich.console import Console
    console = Console(stderr=True, width=300)
    other = batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False, seed=first.seed + 1,
                            console=console)
    assert other.graded == 2 and "differs from the seed stored" in capsys.readouterr().err
    assert int(seed_file.read_text()) == first.seed + 1


def test_grader_fingerprint_covers_the_stubs(monkeypatch, tmp_path):
    """What a grade depends on is tests/test_grade_fingerprint.py's; the stubs are the batch's own."""
    from autograder import stubs
    first = batch.grader_fingerprint()
    shutil.copytree(stubs.FOLDER, tmp_path / "mha_exercises")
    monkeypatch.setattr(stubs, "FOLDER", tmp_path / "mha_exercises")
    assert batch.grader_fingerprint() == first
    (tmp_path / "mha_exercises" / "attention.py").write_text("# another stub\n")
    assert batch.grader_fingerprint() != first


def test_damaged_files_are_regraded_with_a_warning_never_a_traceback(tmp_path, capsys):
    from rich.console import Console
    root = _class(tmp_path, {"ada": "import numpy as np\n" + GOOD, "bob": "def softmax(x): return x"})
    out = tmp_path / "out"
    batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False)
    (out / "reports" / "ada.json").write_text('{"learner": "ada", "exer')  # truncated
    console = Console(stderr=True, width=300)
    again = batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False, console=console)
    assert [o.learner for o in again.outcomes if not o.skipped] == ["ada"]
    assert "ada.json is damaged" in capsys.readouterr().err
    (out / "hashes.json").write_text("{")
    again = batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False, console=console)
    assert again.graded == 2 and "hashes.json is damaged" in capsys.readouterr().err
    assert json.loads((out / "reports" / "ada.json").read_text())["score"] > 0


@pytest.mark.parametrize("case", ["jobs0", "jobs-3", "out_inside", "class_inside_out", "empty", "missing"])
def test_commands_that_cannot_be_right_are_refused(tmp_path, capsys, case):
    root = _class(tmp_path, {"ada": GOOD})
    out = tmp_path / "out"
    args = {"jobs0": [str(root), "--out", str(out), "--jobs", "0"],
            "jobs-3": [str(root), "--out", str(out), "--jobs", "-3"],
            "out_inside": [str(root), "--out", str(root / "grades")],
            "class_inside_out": [str(root), "--out", str(tmp_path)],
            "empty": [str(tmp_path / "empty"), "--out", str(out)],
            "missing": [str(tmp_path / "nope"), "--out", str(out)]}[case]
    (tmp_path / "empty").mkdir()
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert batch.main(args + ["--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("mha-grade batch: ")
    assert {"jobs0": "--jobs must be at least 1", "jobs-3": "--jobs must be at least 1",
            "out_inside": "inside the class folder", "class_inside_out": "inside the output folder",
            "empty": "no submissions in", "missing": "is not a directory"}[case] in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written


# ---------------------------------------------------------------------------- class outputs

def test_the_anonymous_copy_names_no_learner_in_its_errors(tmp_path):
    """The outside attack's F8: a refusal's words ("no exercise files found in ada") and older
    submissions' folders named the learner in anonymous/grades.csv."""
    root = _class(tmp_path, {"ada": None, "bob": None, "cy": "import numpy as np\n" + GOOD})
    for who in ("ada", "bob"):  # Canvas's bulk download renames each upload "<name>_<id>_<sub>_<file>"
        (root / who / f"lovelace{who}_12345_6789_attention.py").write_text("import numpy as np\n" + GOOD)
    out = tmp_path / "out"
    batch.run_batch(root, out, jobs=1, grade=_fake_grade, progress=False, anonymize=True)
    assert {g["status"] for g in _grades(out).values()} >= {"error"}  # the refusals happened
    anonymous = (out / "anonymous" / "grades.csv").read_text()
    for name in ("ada", "bob", "lovelace", "12345"):
        assert name not in anonymous, name
    assert "error: its words are in grades.csv only" in anonymous and "ada" in (out / "grades.csv").read_text()


def test_roster_deadline_canvas_feedback_and_anonymous_export(tmp_path):
    root = _class(tmp_path, {"ada": "import numpy as np\n" + GOOD, "bob": "import numpy as np\n" + GOOD,
                             "zed": "def softmax(x): return x"})
    deadline = time.time() - 3 * 86400
    # handed in as zips, each dated by its own file time as collected (never by the times inside it)
    for who, when in (("ada", deadline - 60), ("bob", deadline + 1.5 * 86400)):  # on time; 2 started days late
        shutil.make_archive(str(root / who), "zip", root / who)
        shutil.rmtree(root / who)
        os.utime(root / f"{who}.zip", (when, when))
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n"
                      "    Points Possible,,,,\n"
                      "\"Lovelace, Ada\",101,S1,ada,A\n\"Babbage, Bob\",102,S2,bob,A\n\"Curie, Cy\",103,S3,cy,B\n")
    from autograder.classroom.rules.late import LatePolicy
    from datetime import datetime, timezone
    late = LatePolicy(datetime.fromtimestamp(deadline, timezone.utc), penalty_per_day=10)
    out = tmp_path / "out"
    result = batch.run_batch(root, out, jobs=1, grade=_fake_grade_unzipped, progress=False, roster=roster,
                             late=late, anonymize=True, assignment="HW attention")
    assert result.missing == ["cy"]
    grades = _grades(out)
    full = POINTS["softmax"] + POINTS["scaled_dot_product_attention"]
    assert grades["ada"]["final"] == str(full) and grades["ada"]["status"] == "graded"
    assert float(grades["bob"]["final"]) == round(full * 0.8, 2) and grades["bob"]["status"] == "late"
    assert grades["cy"]["status"] == "no submission" and grades["cy"]["final"] == "0"
    # not on the roster: graded, kept out of canvas.csv; a folder put there after the deadline is not dated
    assert grades["zed"]["status"] == "no trusted time" and float(grades["zed"]["total"]) < full
    with open(out / "canvas.csv") as f:
        canvas = list(csv.reader(f))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "HW attention"]
    assert canvas[1][0] == "Points Possible" and canvas[1][-1] == str(full)
    assert canvas[2] == ["Lovelace, Ada", "101", "S1", "ada", "A", str(full)]
    assert canvas[4][-1] == "0" and len(canvas) == 5
    md = (out / "feedback" / "bob.md").read_text()
    assert "1 day 12 h late: -20% (2 started days at 10% a day)" in md and "softmax" in md and "Graded from: attention.py" in md
    for learner in ("ada", "bob", "cy", "zed"):
        for ext in ("md", "html"):
            text = (out / "feedback" / f"{learner}.{ext}").read_text()
            assert str(result.seed) not in text and str(tmp_path) not in text
    assert "<table>" in (out / "feedback" / "ada.html").read_text()
    anonymous = (out / "anonymous" / "grades.csv").read_text()
    assert "ada" not in anonymous and "learner-" in anonymous


def test_batch_refuses_to_run_unconfined_unless_told(tmp_path, monkeypatch, capsys):
    root = _class(tmp_path, {"ada": GOOD})
    out = tmp_path / "out"
    from autograder import isolation

    monkeypatch.setattr(isolation, "confinement", lambda run_as=False: (False, "the kernel offers no Landlock"))
    assert batch.main([str(root), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "cannot be confined here (the kernel offers no Landlock)" in err and "--unconfined" in err
    assert not out.exists()
    monkeypatch.setattr(batch, "run_batch", lambda *a, **k: batch.BatchResult())
    assert batch.main([str(root), "--out", str(out), "--quiet", "--unconfined"]) == 0
