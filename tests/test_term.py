"""A term (tests/termbuild.py: four assignments of one or two chapters, each with its deadline,
late policy, points, extensions and adjustments) graded by ``mha-grade term``: every cell of
the term's gradebook is what was planted; graded in 4 shards by 4 separate processes and
merged, every file is byte for byte the one run's; a rerun changing one adjustment regrades
nothing and changes only that learner's cells. Grading is the planted stand-in
(tests/planted_mha_grade.py); ``bench/term_class.py`` runs the same term with the real grader.
"""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import termbuild

from autograder.classroom import shards, term
from autograder.spec import POINTS

HERE = Path(__file__).resolve().parent
N = 24


def _grade(*args, env=None):
    return subprocess.run([sys.executable, str(HERE / "planted_mha_grade.py"), *map(str, args)],
                          capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})


def _files(out: Path) -> dict:
    """What a term's folder holds, as compared: every file but the shards' parts; a report
    without the stand-in's pid, the history without its times."""
    found = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if not p.is_file() or rel.split("/")[1:2] == [shards.PARTS]:
            continue
        data = p.read_bytes()
        if "/reports/" in f"/{rel}":
            report = json.loads(data)
            report.pop("grader_pid", None)
            data = json.dumps(report, sort_keys=True).encode()
        elif p.name == "history.csv":
            data = b"\n".join(line.split(b",", 1)[1] for line in data.splitlines())
        found[rel] = data
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    built = termbuild.build(tmp_path_factory.mktemp("term"), N)
    one = built.folder / "one"
    run = _grade("term", built.term_file, "--out", one, "--unconfined", "--jobs", "1", "--seed", "7", "--quiet")
    assert run.returncode == 0, run.stderr
    return built, one


def test_every_cell_of_the_term_gradebook_is_as_planted(graded):
    built, one = graded
    assert termbuild.check(built, one) == []
    with open(one / "term.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 * N and {r["status"] for r in rows} >= {"graded", "late", "no submission"}


def test_four_shards_in_four_processes_merge_into_the_one_run_byte_for_byte(graded):
    built, one = graded
    split = built.folder / "split"
    common = ["term", built.term_file, "--out", split, "--unconfined", "--jobs", "1", "--seed", "7", "--quiet"]
    # Each in its own process at once, its index given as the schedulers give it.
    envs = [{"JOB_COMPLETION_INDEX": "0"}, {"JOB_COMPLETION_INDEX": "1"},
            {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1"}, {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1"}]
    running = [subprocess.Popen([sys.executable, str(HERE / "planted_mha_grade.py"), *map(str, common), "--shard", "4"],
                                env={**os.environ, "OMP_NUM_THREADS": "1", **env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for env in envs]
    for p in running:
        _, err = p.communicate()
        assert p.returncode == 0, err
    assert not (split / "term.csv").exists()  # a shard writes its part only
    parts = sorted(p.name for p in (split / "A1-Attention-and-masks" / shards.PARTS).iterdir())
    assert parts == ["0-of-4", "1-of-4", "2-of-4", "3-of-4"]
    learners = [json.loads((split / "A1-Attention-and-masks" / shards.PARTS / p / shards.PART).read_text())["learners"]
                for p in parts]
    assert all(learners) and sorted(sum(learners, [])) == sorted(set(sum(learners, [])))  # each in one part
    merged = _grade(*common, "--merge")
    assert merged.returncode == 0, merged.stderr
    mine, theirs = _files(split), _files(one)
    assert sorted(mine) == sorted(theirs)
    assert [name for name in theirs if mine[name] != theirs[name]] == []


def test_a_merge_with_a_part_missing_or_another_seed_is_refused(graded, tmp_path):
    built, _ = graded
    out = tmp_path / "out"
    common = ["term", built.term_file, "--out", out, "--unconfined", "--jobs", "1", "--quiet", "--only",
              "A2 Heads"]
    assert _grade(*common, "--shard", "0/2").returncode == 2  # no seed: N shards would draw N
    assert "every shard must grade with the class's seed" in _grade(*common, "--shard", "0/2").stderr
    assert _grade(*common, "--shard", "0/2", "--seed", "5").returncode == 0
    run = _grade(*common, "--merge", "--seed", "5")
    assert run.returncode == 2 and "part(s) 1-of-2 missing" in run.stderr and not (out / "term.csv").exists()
    assert _grade(*common, "--shard", "1/2", "--seed", "6").returncode == 0
    run = _grade(*common, "--merge")
    assert run.returncode == 2 and "different seeds" in run.stderr


def test_a_term_rerun_regrades_nothing_and_an_edited_adjustment_moves_one_cell(graded, tmp_path):
    built, one = graded
    import shutil
    copy = tmp_path / "term"
    shutil.copytree(built.folder, copy, ignore=shutil.ignore_patterns("split"))
    before = (copy / "one" / "canvas.csv").read_text()
    adjustments = copy / "controls" / "a2-adjustments.csv"
    lines = adjustments.read_text().splitlines()
    who = lines[1].split(",")[0].split("@")[0]  # by login or email: the login either way
    lines[1] = lines[1].replace(",2,", ",4,", 1) if ",total,2," in lines[1] else lines[1].replace(",-1.5,", ",-2.5,", 1)
    adjustments.write_text("\n".join(lines) + "\n")
    run = _grade("term", copy / "term.toml", "--out", copy / "one", "--unconfined", "--jobs", "1")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("(0 graded,") == 4  # every assignment: nothing graded again
    changed = [(a, b) for a, b in zip(before.splitlines(), (copy / "one" / "canvas.csv").read_text().splitlines())
               if a != b]
    assert len(changed) == 1 and any(who in x for x in changed[0]), changed
    with open(copy / "one" / "A2-Heads" / "history.csv", newline="") as f:
        assert list(csv.DictReader(f))[-1]["reason"] == "adjustment"


@pytest.mark.parametrize("text, why", [
    ("[[assignment]]\nname = 'A'\nsubmissions = 'x'\n", "assignment 1: `deadline` is missing"),
    ("[[assignment]]\nname = 'A'\nsubmissions = 'x'\ndeadline = '2026-02-01T23:59Z'\nchapter = [1]\n",
     "unknown key(s) chapter"),
    ("[[assignment]]\nname = 'A'\nsubmissions = 'x'\ndeadline = '2026-02-01T23:59Z'\n", "no exercise"),
    ("[[assignment]]\nname = 'A'\nsubmissions = 'x'\ndeadline = 'soon'\nchapters = [1]\n", "deadline: 'soon'"),
    ("[[assignment]]\nname = 'A'\nsubmissions = 'x'\ndeadline = '2026-02-01T23:59Z'\nexercises = ['softmx']\n",
     "unknown exercise(s) softmx"),
    ("[term\n", "is not TOML"),
])
def test_a_term_file_that_cannot_be_used_is_refused_in_one_line(tmp_path, text, why):
    (tmp_path / "term.toml").write_text(text)
    with pytest.raises(term.TermError, match=None) as err:
        term.read_term(tmp_path / "term.toml")
    assert why in str(err.value)


@pytest.mark.parametrize("given, environ, shard", [
    ("2/4", {}, (2, 4)), ("4", {"JOB_COMPLETION_INDEX": "3"}, (3, 4)),
    ("4", {"SLURM_ARRAY_TASK_ID": "1"}, (1, 4)), ("4", {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "2"}, (3, 4)),
])
def test_a_shard_index_is_read_from_the_option_or_the_scheduler(given, environ, shard):
    assert shards.parse(given, environ) == shard


@pytest.mark.parametrize("given, environ", [("4", {}), ("4/4", {}), ("x/4", {}), ("4", {"JOB_COMPLETION_INDEX": "4"})])
def test_a_shard_without_a_usable_index_is_refused(given, environ):
    from autograder.classroom.intake import BatchError

    with pytest.raises(BatchError):
        shards.parse(given, environ)


def test_the_example_term_file_reads_as_its_comments_say():
    _, assignments = term.read_term(HERE.parent / "examples" / "term.toml")
    assert [a["name"] for a in assignments] == ["A1 Attention and masks", "A2 Heads", "A3 The layer",
                                                "A4 Efficient attention"]
    assert assignments[0]["exercises"] == termbuild.exercises_of((1, 2))
    assert sum(POINTS[e] for e in assignments[2]["exercises"]) == 22  # "the exercises' own total (22)"
    assert [a["folder"] for a in assignments] == ["A1-Attention-and-masks", "A2-Heads", "A3-The-layer",
                                                  "A4-Efficient-attention"]


def test_a_merge_grades_nothing_and_refuses_parts_graded_with_other_options(tmp_path, monkeypatch, capsys):
    """`batch --shard` and `mha-grade merge` themselves: a merge asking for other exercises than
    the shards graded is refused naming the submissions, and grades none of them."""
    from classbuild import planted_grade

    from autograder.classroom import batch

    built = termbuild.build(tmp_path / "term", 6)
    log = tmp_path / "graded.log"  # the graders are forked processes: each grading is a line here

    def counted(*args, **kwargs):
        with open(log, "a") as f:
            f.write(f"{args[0]}\n")
        return planted_grade(*args, **kwargs)

    def calls():
        return log.read_text().splitlines() if log.exists() else []

    monkeypatch.setattr(batch, "pipeline_grader", lambda user, time_limit, zygotes=0: counted)
    klass, out = built.folder / "exports" / "a2", tmp_path / "out"
    common = [str(klass), "--out", str(out), "--unconfined", "--quiet", "--jobs", "1", "-e", "split_heads"]
    for i in range(2):
        assert batch.main([*common, "--shard", f"{i}/2", "--seed", "3"]) == 0
    graded = len(calls())
    assert graded == sum(w.handed for (_, name), w in built.work.items() if name == "A2 Heads") > 0
    assert batch.merge_main([*common, "-e", "merge_heads"]) == 2
    assert "no part graded as this merge asks" in capsys.readouterr().err and len(calls()) == graded
    assert batch.merge_main(common) == 0 and len(calls()) == graded  # the same options: nothing graded again
    assert (out / "grades.csv").is_file() and (out / "history.csv").is_file()
