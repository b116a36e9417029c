"""A class of 300 as an instructor receives it, graded by ``mha-grade batch`` (the real,
isolated grader), and every row of every class file checked against what was planted.

The class: a Canvas gradebook export as the roster (its "Points Possible" row and test
student, 300 learners), Gradescope's "Export Submissions" unzipped (``submission_<id>/``
folders, ``submission_metadata.yml`` with times in ``Z`` and ``-08:00``, a ``__MACOSX``
folder), groups of two, learners who never hand in, two submitters not on the roster,
submissions in a nested folder and as a zip, misnamed files (``Attention.py``, ``heads (1).py``,
``masking-1.py``: taken; ``atention.py``: a "did you mean"), a copied pair, four classic bugs, a loop,
an import error, a submission without code, late
submissions (minutes to days, some past the cutoff), an extensions file and an adjustments
file naming learners by any of their ids.

What each learner hands in is planted module by module: the reference solution (its
exercises score their full points) or the unfilled stub (0), the modules an exercise uses
always solved together; so the expected points of every exercise are known, and the
expected total, late penalty, adjustments and final follow by the rules the README states,
computed here independently of the grader's code. The check, for every learner: each
exercise column, total (the sum of the shown parts), late wording and penalty, adjustment,
final, status and the submission's own ids in ``grades.csv``; the final in ``canvas.csv``;
the score, total and adjustments in the feedback; the report under the roster's id; the
copied pair in one similarity cluster; the summary's counts. Then a rerun without
``--extensions`` and ``--adjustments`` must keep them (byte-identical ``grades.csv``).

    python bench/gradebook_class.py [--n 300] [--jobs 2] [--keep DIR] [--seed 1]

Prints the timings and the paths of ``summary.md`` and of one feedback file with an
adjustment; exits 1 listing the rows that differ from what was planted.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

from classbuild import Entry, Person, canvas_roster, write_export  # noqa: E402

from autograder.spec import MODULE_OF, POINTS  # noqa: E402

PACIFIC = timezone(timedelta(hours=-8))
DEADLINE = datetime(2026, 3, 1, 23, 59, tzinfo=PACIFIC)
PENALTY, CUTOFF = 10.0, 3.0  # percent per started day; days
# The modules a module's reference solution calls: solved together, or its exercises fail.
NEEDS = {"attention": {"masking"}, "layer": {"attention", "masking", "heads"},
         "pruning": {"layer", "attention", "masking", "heads"}, "efficient": {"layer", "attention", "masking", "heads"}}
MODULES = sorted(set(MODULE_OF.values()))
# Classic bugs (bench/batch.py's), each planted in every n-th submission that solved its module:
# exercise -> (bench/batch.py's name, every n-th). Their exercise's points are the grader's to find
# (less than full); the summary must name each as a mistake, with its count, most common first.
BUGS = {"softmax": ("no max subtraction", 23), "causal_mask": ("causal off by one", 29),
        "split_heads": ("reshape without transpose", 41), "scaled_dot_product_attention": ("no 1/sqrt(d_k)", 67)}


@dataclass
class Plan:
    person: Person
    on_roster: bool = True
    submission: str | None = None  # the folder, when they hand in
    solved: set = field(default_factory=set)  # modules handed in as the reference solution
    bugs: set = field(default_factory=set)  # exercises with a classic bug planted (BUGS)
    broken: str = ""  # "loop" (softmax never returns), "import" (attention.py cannot import), "refused" (no code)
    misnamed: dict = field(default_factory=dict)  # module -> the file's name
    close: str | None = None  # a module handed in under a close spelling: not graded
    submitted: datetime | None = None
    extension: datetime | None = None
    adjustments: list = field(default_factory=list)  # (exercise or "total", points, reason)
    group: list = field(default_factory=list)  # the other members' logins


def _closed(modules: set) -> set:
    out = set(modules)
    for m in modules:
        out |= NEEDS.get(m, set())
    return out


def personalise(source: str, who: int) -> str:
    from batch import personalise as own  # bench/batch.py: every function opens with a line of its own

    return own(source, who)


def build(tmp: Path, n: int, seed: int):
    """The class in ``tmp``: (export folder, roster, extensions, adjustments, plans by login)."""
    rng = random.Random(seed)
    people = [Person(f"Learner{i:03d}, Ann", f"{10000 + i}", f"9{i:05d}", f"s{i:03d}", f"s{i:03d}@uni.example")
              for i in range(n)]
    strangers = [Person(f"Auditor{i}, Al", "", f"8{i:05d}", f"8{i:05d}", f"aud{i}@uni.example") for i in range(2)]
    plans = {p.login: Plan(p) for p in people}
    for p in strangers:
        plans[p.login] = Plan(p, on_roster=False)
    logins = [p.login for p in people]
    rng.shuffle(logins)
    absent = set(logins[:max(1, n // 15)])  # never hand in
    handing = [x for x in logins if x not in absent] + [p.login for p in strangers]
    groups = [handing[i:i + 2] for i in range(0, min(len(handing) - 1, 2 * max(1, n // 60)), 2)]
    grouped = {x for g in groups for x in g}
    units = groups + [[x] for x in handing if x not in grouped]
    entries, k = [], 0
    for unit in units:
        k += 1
        folder = f"submission_{270000 + k}"
        lead = plans[unit[0]]
        solved = _closed({m for m in MODULES if rng.random() < 0.7})
        roll = rng.random()
        when = DEADLINE - timedelta(hours=rng.uniform(1, 48))
        if roll < 0.04:
            when = DEADLINE + timedelta(minutes=rng.randint(1, 59))
        elif roll < 0.10:
            when = DEADLINE + timedelta(hours=rng.uniform(1, 70))
        elif roll < 0.12:
            when = DEADLINE + timedelta(days=rng.uniform(3.1, 6))
        # Gradescope writes UTC ("Z") or the course's zone
        when = when.astimezone(timezone.utc) if k % 2 else when
        for login in unit:
            plans[login].submission, plans[login].solved, plans[login].submitted = folder, solved, when
            plans[login].group = [x for x in unit if x != login]
        files = {}
        inside = "hw3/" if k % 9 == 0 else ""
        for m in MODULES:
            source = (ROOT / "solutions" / f"{m}.py") if m in solved else (ROOT / "mha_exercises" / f"{m}.py")
            text = personalise(source.read_text(), k) if m in solved else source.read_text()
            files[f"{inside}{m}.py"] = text
        from batch import WRONG

        for exercise, (bug, every) in BUGS.items():
            module = MODULE_OF[exercise]
            if module in solved and k % every == 5:
                files[f"{inside}{module}.py"] += WRONG[bug][1]
                lead.bugs.add(exercise)
        if k % 31 == 7:  # misnamed, taken: Attention.py, heads (1).py, masking-1.py
            for m, name in (("attention", "Attention.py"), ("heads", "heads (1).py"), ("masking", "masking-1.py")):
                files[f"{inside}{name}"] = files.pop(f"{inside}{m}.py")
                for login in unit:
                    plans[login].misnamed[m] = name
        elif k % 37 == 11 and "analysis" in solved:  # a close spelling: named, not graded
            files[f"{inside}analyss.py"] = files.pop(f"{inside}analysis.py")
            for login in unit:
                plans[login].close = "analysis"
        for login in unit:
            plans[login].bugs = lead.bugs
        entries.append(Entry(folder, [plans[x].person for x in unit], when, files))
    # a copied pair: the second hands in the first's code, names changed
    solo = [e for e in entries if len(e.people) == 1 and all("/" not in f for f in e.files)
            and not plans[e.people[0].login].misnamed and not plans[e.people[0].login].close
            and not plans[e.people[0].login].bugs]
    original, copier = solo[3], solo[4]
    # what the summary must list: a timeout, an import error, a submission with no exercise file
    for entry, kind in zip(solo[6:9], ("loop", "import", "refused")):
        plan = plans[entry.people[0].login]
        plan.broken = kind
        if kind == "loop":
            entry.files["attention.py"] += "\n\ndef softmax(x, axis=-1):\n    while True:\n        pass\n"
        elif kind == "import":
            entry.files["attention.py"] = "import numpy as np\n\ndef softmax(x, axis=-1:\n    return x\n"
        else:
            entry.files = {"notes.txt": "I could not finish, sorry.\n"}
    copier.files = {f: t.replace("weights", "attn").replace("scores", "logits") for f, t in original.files.items()}
    cp = plans[copier.people[0].login]
    cp.solved = plans[original.people[0].login].solved
    download = write_export(tmp / "download", entries)
    # one submission uploaded as a zip (Gradescope keeps it as uploaded)
    zipped = next(e for e in entries[5:] if "hw3/attention.py" not in e.files and e is not copier and e is not original)
    folder = download / "assignment_8046601_export" / zipped.folder
    with zipfile.ZipFile(folder / "submission.zip", "w") as z:
        for f in sorted(p for p in folder.rglob("*.py")):
            z.write(f, f.relative_to(folder).as_posix())
            f.unlink()
    roster = tmp / "roster.csv"
    roster.write_text(canvas_roster(people))
    # extensions: a tenth of those who hand in late, plus some who are on time anyway; by any id
    late_ones = [x for x, p in plans.items() if p.submitted and p.submitted > DEADLINE and p.on_roster]
    chosen = late_ones[::3] + [x for x in handing[:5] if plans[x].on_roster]
    ext_rows = ["learner,deadline"]
    for i, login in enumerate(dict.fromkeys(chosen)):
        p = plans[login]
        p.extension = DEADLINE + timedelta(days=2 + i % 3)
        who = (p.person.login, p.person.email, p.person.sis_user)[i % 3]
        ext_rows.append(f"{who},{p.extension.isoformat()}")
    extensions = tmp / "extensions.csv"
    extensions.write_text("\n".join(ext_rows) + "\n")
    adj_rows = ["learner,exercise,points,reason"]
    for i, login in enumerate(sorted(plans)[::max(1, len(plans) // 15)]):
        p = plans[login]
        exercise, pts, reason = [("total", 2.0, "extra credit: a typo found in chapter 3"),
                                 ("softmax", -1.5, "the docstring was copied from the book"),
                                 ("split_heads", 3.0, "regraded by hand: the reshape is right"),
                                 ("total", -0.25, "late quiz, agreed with the learner")][i % 4]
        p.adjustments.append((exercise, pts, reason))
        who = (p.person.login, p.person.email, p.person.sis_user)[i % 3]
        adj_rows.append(f"{who},{exercise},{pts:g},\"{reason}\"")
    adjustments = tmp / "adjustments.csv"
    adjustments.write_text("\n".join(adj_rows) + "\n")
    return download, roster, extensions, adjustments, plans, (original.people[0].login, copier.people[0].login)


# ------------------------------------------------------------------------ what to expect

def half_up(x) -> Decimal:
    return Decimal(x).quantize(Decimal("0.01"), ROUND_HALF_UP)


def expected(plan: Plan) -> dict:
    """The row the README's rules give, from what was planted (``None``: not known exactly)."""
    parts = {}
    for e, m in MODULE_OF.items():
        graded = m in plan.solved and plan.close != m
        parts[e] = Decimal(POINTS[e]) if graded else Decimal(0)
    for exercise in plan.bugs:
        parts[exercise] = None
    if plan.broken == "loop":
        parts["softmax"] = Decimal(0)
    elif plan.broken == "import":
        parts.update({e: Decimal(0) for e, m in MODULE_OF.items() if m == "attention"})
    elif plan.broken == "refused":
        parts = {e: Decimal(0) for e in parts}
    for exercise, pts, _ in plan.adjustments:
        if exercise != "total" and parts[exercise] is not None and plan.submission:
            parts[exercise] = min(Decimal(POINTS[exercise]), max(Decimal(0), parts[exercise] + Decimal(str(pts))))
    row = {"parts": parts, "total": None, "final": None, "days": 0, "cutoff": False}
    if plan.submission is None:
        row["total"] = row["final"] = Decimal(0)
    elif None not in parts.values():
        row["total"] = sum(parts.values())
    deadline = plan.extension or DEADLINE
    if plan.submitted and plan.submitted > deadline:
        late = (plan.submitted - deadline).total_seconds() / 86400
        row["days"], row["cutoff"] = math.ceil(late), late > CUTOFF
    if row["total"] is not None and plan.submission:
        kept = 0 if row["cutoff"] else max(0, 100 - PENALTY * row["days"])
        row["final"] = half_up(row["total"] * Decimal(str(kept)) / 100)
    extra = sum(Decimal(str(p)) for e, p, _ in plan.adjustments if e == "total")
    if row["final"] is not None:
        row["final"] = max(Decimal(0), half_up(row["final"] + extra))
    row["extra"] = extra
    return row


def check(out: Path, plans: dict[str, Plan], pair: tuple[str, str]) -> list[str]:
    wrong = []
    with open(out / "grades.csv", newline="") as f:
        grades = {r["learner"]: r for r in csv.DictReader(f)}
    with open(out / "canvas.csv", newline="") as f:
        canvas = {r["SIS Login ID"]: r for r in list(csv.DictReader(f))[1:]}
    if set(grades) != set(plans):
        wrong.append(f"grades.csv learners: {sorted(set(grades) ^ set(plans))[:5]} differ")
    on_roster = {x for x, p in plans.items() if p.on_roster}
    if set(canvas) != on_roster:
        wrong.append(f"canvas.csv learners: {sorted(set(canvas) ^ on_roster)[:5]} differ")
    for login, plan in sorted(plans.items()):
        row, want = grades.get(login), expected(plan)
        if row is None:
            continue

        def differs(what, got, expect):
            if got != expect:
                wrong.append(f"{login} {what}: {got!r}, planted {expect!r}")

        parts = {e: Decimal(row[e]) for e in POINTS}
        for e, value in want["parts"].items():
            if value is None:  # a planted bug: less than full, unless an adjustment added to it
                raised = any(x == e and pts > 0 for x, pts, _ in plan.adjustments)
                if not 0 <= parts[e] <= POINTS[e] if raised else not 0 <= parts[e] < POINTS[e]:
                    wrong.append(f"{login} {e}: {parts[e]} for a planted bug")
            else:
                differs(e, parts[e], value)
        differs("total = sum of the shown parts", Decimal(row["total"]), sum(parts.values()))
        if want["total"] is not None:
            differs("total", Decimal(row["total"]), want["total"])
        final = want["final"]
        if final is None:  # the bug's exact points are the grader's: the rule applied to the shown total
            kept = 0 if want["cutoff"] else max(0, 100 - PENALTY * want["days"])
            final = max(Decimal(0), half_up(half_up(Decimal(row["total"]) * Decimal(str(kept)) / 100) + want["extra"]))
        differs("final", Decimal(row["final"]), final)
        if plan.on_roster:
            differs("canvas.csv", Decimal(canvas[login]["Multi-head attention"] or "nan"), final)
        status = "no submission" if plan.submission is None else \
            "error" if plan.broken == "refused" else ("late" if want["days"] else "graded")
        differs("status", row["status"], status)
        if want["days"] and want["cutoff"]:
            if not row["late_penalty"].endswith(f"late, after the {CUTOFF:g}-day cutoff: 0 points" +
                                                (f"; extended deadline {plan.extension.isoformat(timespec='minutes')}"
                                                 if plan.extension else "")):
                wrong.append(f"{login} late wording: {row['late_penalty']!r}")
        elif want["days"]:
            days = want["days"]
            rule = f"({days} started day{'s' if days > 1 else ''} at {PENALTY:g}% a day"
            if f"late: -{min(100, days * PENALTY):g}% {rule}" not in \
                    row["late_penalty"] or "0.00 days" in row["late_penalty"]:
                wrong.append(f"{login} late wording: {row['late_penalty']!r} for {days} started days")
        if plan.submission:
            ids = "+".join(plans[x].person.sis_user for x in sorted([login] + plan.group,
                                                                       key=lambda x: plans[x].person.sis_user))
            if sorted(row["submitted_as"].split("+")) != sorted(ids.split("+")):
                wrong.append(f"{login} submitted_as {row['submitted_as']!r}, planted {ids!r}")
            name = "+".join(sorted([login] + plan.group, key=lambda x: row["submitted_as"].split("+").index(
                plans[x].person.sis_user)))
            if not (out / "reports" / f"{name}.json").is_file():
                wrong.append(f"{login}: no reports/{name}.json")
        text = (out / "feedback" / f"{login}.md").read_text()
        if f"**Score: {row['final']}" not in text:
            wrong.append(f"{login} feedback score differs from grades.csv's {row['final']}")
        for _, _, reason in plan.adjustments:
            if reason not in text:
                wrong.append(f"{login} feedback lacks the adjustment {reason!r}")
        for m, name in plan.misnamed.items():
            taken = rf"{re.escape(m)}\.py \(([^()]*/)?{re.escape(name)}, misnamed: graded as this module\)"
            if not re.search(taken, text):
                wrong.append(f"{login} feedback does not say {name} was taken as {m}.py")
        if plan.close and f"did you mean {plan.close}.py?" not in text:
            wrong.append(f"{login} feedback has no 'did you mean {plan.close}.py?'")
    similar = (out / "similarity.csv").read_text()
    if not any(set(pair) <= set(line.split(",")[2].split()) for line in similar.splitlines()[1:]):
        wrong.append(f"the copied pair {pair} is in no similarity cluster")
    summary = (out / "summary.md").read_text()
    handed = {x for x, p in plans.items() if p.submission}
    submissions = {p.submission for p in plans.values() if p.submission}
    line = f"{len(plans)} learners, {len(handed)} with a submission ({len(plans) - len(handed)} without); " \
           f"{len(submissions)} submissions"
    if line not in summary:
        wrong.append(f"summary.md does not say {line!r}")
    for kind, heading in (("loop", "- Timed out"), ("import", "- Import errors"), ("refused", "- Could not be graded")):
        who = next((x for x, p in plans.items() if p.broken == kind), None)
        if who is None:  # a class too small to hold one
            continue
        line = next((x for x in summary.splitlines() if x.startswith(heading)), "")
        if not re.search(rf"\b{who}\b", line):
            wrong.append(f"summary.md does not list {who} under {heading[2:]!r}")
    counts = {e: len({p.submission for p in plans.values() if e in p.bugs}) for e in BUGS}
    listed = re.findall(r"^\d+\. .* \(`(\w+)`\): (\d+) of \d+ submissions$", summary, re.M)
    if [(e, int(k)) for e, k in listed] != sorted(((e, k) for e, k in counts.items() if k),
                                                   key=lambda t: (-t[1], [e for e, _ in listed].index(t[0])
                                                                  if t[0] in dict(listed) else 99)):
        wrong.append(f"summary.md's common mistakes {listed} are not the planted {counts}, most common first")
    misnamed = {p.submission for p in plans.values() if p.misnamed or p.close}
    if f"Misnamed files (taken under the expected name, or named in a \"did you mean\"): {len(misnamed)} of " \
            not in summary:
        wrong.append(f"summary.md does not list the {len(misnamed)} misnamed submissions")
    return wrong


def _command(download, out, roster, jobs, *options) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "autograder", "batch", str(download), "--out", str(out), "--jobs", str(jobs),
           "--roster", str(roster), "--deadline", DEADLINE.isoformat(), "--late-penalty", f"{PENALTY:g}",
           "--late-cutoff", f"{CUTOFF:g}", "--similarity", "--quiet", *map(str, options)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return wall, proc.stderr + proc.stdout  # warnings on stderr, what the run did on stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="learners on the roster")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1, help="of the class's random plan")
    parser.add_argument("--keep", type=Path, help="build and grade in this folder, and keep it")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="mha-gradebook-")) if args.keep is None else args.keep
    if args.keep is not None:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    try:
        start = time.perf_counter()
        download, roster, extensions, adjustments, plans, pair = build(tmp, args.n, args.seed)
        built = time.perf_counter() - start
        out = tmp / "out"
        first, said = _command(download, out, roster, args.jobs, "--extensions", extensions,
                               "--adjustments", adjustments)
        wrong = check(out, plans, pair)
        grades = (out / "grades.csv").read_bytes()
        rerun, said2 = _command(download, out, roster, args.jobs)  # the controls kept in OUT
        if (out / "grades.csv").read_bytes() != grades:
            wrong.append("a rerun without --extensions and --adjustments changed grades.csv")
        if "adjustments: " not in said2 or "kept from the last run" not in said2:
            wrong.append("the rerun did not say it used the adjustments kept in OUT")
        wrong += check(out, plans, pair)
        adjusted = next(x for x, p in sorted(plans.items()) if p.adjustments and p.submission)
        submissions = len({p.submission for p in plans.values() if p.submission})
        print(f"class: {len(plans)} learners ({sum(p.on_roster for p in plans.values())} on the roster), "
              f"{submissions} submissions, built in {built:.1f} s")
        print(f"first run (grading everything): {first:.1f} s wall, {first / submissions:.2f} s per submission")
        print(f"rerun (nothing changed, controls kept in OUT): {rerun:.1f} s wall")
        print(f"summary: {out / 'summary.md'}")
        print(f"feedback with an adjustment: {out / 'feedback' / (adjusted + '.md')}")
        print(f"the run said: {said.strip().splitlines()[-1] if said.strip() else ''}")
        if wrong:
            print(f"{len(wrong)} differences from what was planted:\n  " + "\n  ".join(wrong[:50]))
            return 1
        print(f"every row of grades.csv, canvas.csv and feedback matches what was planted ({len(plans)} learners)")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
