"""Benchmark: what the grader says about code nobody here wrote (``tests/outside/``).

Each file of ``tests/outside/<exercise>/`` is a public implementation of one exercise, written
by someone else (its source and licence in its header), with a thin adapter to the course's
API that keeps its bugs and conventions. Its ``OUTSIDE`` dict, written by hand, says what a
right grade is: ``verdict`` ("full": full marks and nothing said; "loses": below full marks,
``failing`` optionally a regex that some failing case's name matches), ``cause`` (the real
cause, one sentence), ``named`` (regexes, any of which found in the grader's words names that
cause) and ``false`` (regexes of sentences that would be false of this code); both are matched
against the words with every case's name taken out (a case's name says which inputs, not why). The dict is read
with ``ast`` (the code is never imported in this process).

Every file is graded as a learner's submission would be: a copy of ``solutions/`` with the
file appended to its exercise's module (``tests/solution_copies.py``), one class per exercise
through ``python -m autograder batch`` (the confined pipeline, learner code in its own process).
The words are every text a learner is shown of that exercise: the report's exercise and case
feedback, ladder and notes (the terminal's and ``check()``'s sentences), the feedback ``.md``,
and the Gradescope output (``classroom/write/gradescope.results``).

Printed per exercise: files, verdicts agreeing, causes named (of the files that lose points),
false sentences (the ``false`` patterns, anything said of a full mark, and any aggregate "X (in K of
N failing cases)" whose figures fewer than K of those cases show); then per file: verdict, score, named or not, each false sentence, and for review
every sentence that blames an input feature ("fails on float64", "with an offset"), a claim that
is true only when changing that feature of the input is what flips the case. Targets (exit
status 1 when missed): every verdict right, at least 90 % of causes named, no false sentence.

    OMP_NUM_THREADS=1 .venv/bin/python bench/outside.py [--exercise ID ...] [--file NAME ...] [--seed N]
    (recorded: python bench/run.py outside; --grader DIR grades with another checkout, e.g. a clean
    `git archive` of a commit while the shared tree is mid-edit)
"""
from __future__ import annotations

import argparse
import ast
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from solution_copies import edited_solutions  # noqa: E402

from autograder.spec import COURSE, MODULE_OF  # noqa: E402

CORPUS = ROOT / "tests" / "outside"
NAMED_TARGET = 0.90
FIELDS = {"exercise": str, "source": str, "licence": str, "verdict": str, "cause": str, "named": list, "false": list}
# A sentence that blames a feature of the input: true only where changing that feature flips the case.
BLAMES_INPUT = re.compile(r"fails (?:on|with)\b|Correct on\b|alone changed|assumes\b|the failing ones are among|"
                          r"only (?:on|with)\b|(?:for|on) float(?:16|32|64) inputs", re.I)
QUIET_LINE = re.compile(r"^(?:[✔✘] .*|cases:|-|[a-z ]+: [\d.]+/[\d.]+ points( \(\d+ of \d+ cases passed\))?)$")
GENERIC_MD = re.compile(r"^(?:# |\*\*Score|Graded from|Not graded|Cases are drawn|\| exercise \||\|---|\| \*\*total)")


def header(path: Path) -> dict:
    """The file's ``OUTSIDE`` dict, read without running the file; ValueError when malformed."""
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "OUTSIDE" for t in node.targets):
            meta = ast.literal_eval(node.value)
            break
    else:
        raise ValueError(f"{path}: no OUTSIDE = {{...}} at module level")
    for key, kind in FIELDS.items():
        if not isinstance(meta.get(key), kind):
            raise ValueError(f"{path}: OUTSIDE[{key!r}] must be a {kind.__name__}")
    if meta["verdict"] not in ("full", "loses"):
        raise ValueError(f"{path}: verdict must be 'full' or 'loses', got {meta['verdict']!r}")
    if meta["exercise"] != path.parent.name or meta["exercise"] not in MODULE_OF:
        raise ValueError(f"{path}: exercise {meta['exercise']!r} is not its folder's, or no exercise")
    if meta["verdict"] == "loses" and not meta["named"]:
        raise ValueError(f"{path}: a file that loses points needs regexes that name its cause")
    for pattern in [*meta["named"], *meta["false"], *([meta["failing"]] if meta.get("failing") else [])]:
        re.compile(pattern)
    return meta


def corpus(exercises=None, names=None) -> list[tuple[Path, dict]]:
    chosen = []
    for path in sorted(CORPUS.glob("*/*.py")):
        if path.name.startswith("_"):
            continue
        if exercises and path.parent.name not in exercises or names and path.stem not in names:
            continue
        chosen.append((path, header(path)))
    return chosen


def learner_id(path: Path) -> str:
    return f"{path.parent.name}__{path.stem}"


def build(path: Path, into: Path) -> None:
    """A submission: the reference solutions, the file appended to its exercise's module (its
    definitions come last, so they are the module's)."""
    module = MODULE_OF[path.parent.name]
    submission = edited_solutions(into)
    target = submission / f"{module}.py"
    target.write_text(target.read_text() + "\n\n# --- appended: " + path.relative_to(ROOT).as_posix()
                      + " ---\n" + path.read_text())


@dataclass
class Graded:
    path: Path
    meta: dict
    score: float = 0.0
    max_score: float = 0.0
    status: str = ""
    words: str = ""
    claims: str = ""  # the words without the cases' names (see claims_of)
    aggregates: list = field(default_factory=list)  # false_aggregates of its exercise feedback
    failing: list = field(default_factory=list)
    error: str = ""

    @property
    def full(self) -> bool:
        return not self.error and self.score >= self.max_score - 1e-9 and self.max_score > 0

    @property
    def verdict_right(self) -> bool:
        if self.error:
            return False
        if self.meta["verdict"] == "full":
            return self.full
        pattern = self.meta.get("failing")
        return not self.full and (not pattern or any(re.search(pattern, n, re.I) for n in self.failing))

    @property
    def named(self) -> bool:
        return any(re.search(p, self.claims, re.I) for p in self.meta["named"])

    def false_sentences(self) -> list[str]:
        wrong = [f"matches {p!r}: {_around(self.claims, p)}" for p in self.meta["false"]
                 if re.search(p, self.claims, re.I)]
        wrong += self.aggregates
        said = [line for line in self.words.splitlines() if not re.match(r"(?i)^note:", line.strip())]
        if self.meta["verdict"] == "full" and self.full and said:
            wrong.append(f"full marks, yet said: {' / '.join(said)[:200]!r}")
        return wrong

    def review(self) -> list[str]:
        return sorted({s for s in sentences(self.claims) if BLAMES_INPUT.search(s)})


def _around(text: str, pattern: str) -> str:
    found = re.search(pattern, text, re.I)
    return text[max(0, found.start() - 80):found.end() + 80].replace("\n", " ") if found else ""


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.;])\s+(?=[A-Z'\"(])|\n", text) if len(s.strip()) > 3]


def words_of(exercise: str, report: dict, markdown: str) -> tuple[str, dict]:
    """Every text a learner sees of ``exercise``: the report's (terminal, check()), the .md's, Gradescope's."""
    from autograder.classroom.write import gradescope

    ex = next(e for e in report.get("exercises", []) if e.get("id") == exercise)
    parts = [ex.get("feedback", ""), ex.get("ladder", ""), *ex.get("notes", []),
             *(c.get("feedback", "") for c in ex.get("cases", []))]
    for line in markdown.splitlines():
        if line.startswith(f"| `{exercise}` |"):  # the table's row: only its last cell is words
            parts.append(line.rstrip(" |").rsplit(" | ", 1)[-1])
        elif line.strip() and not line.startswith("|") and not GENERIC_MD.match(line):
            parts.append(line)
    one = dict(report, exercises=[ex])
    parts += [t["output"] for t in gradescope.results(one)["tests"]]
    text = "\n".join(p for p in parts if p)
    # the status line, the pass/fail list of the cases and an empty cell say nothing about a cause
    return "\n".join(line for line in text.splitlines() if not QUIET_LINE.match(line.strip())), ex


def claims_of(words: str, case_names: list[str]) -> str:
    """The words as plain text (Markdown and HTML escapes undone) with every case's name replaced by
    ‹case›: a name says which inputs, never a cause ("a fully masked row" is a case, not a diagnosis)."""
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>~])", r"\1", html.unescape(words.replace("<br>", "\n")))
    names = sorted(set(case_names), key=len, reverse=True)
    # where a name stands as a name: quoted, in a list after "case(s):", or heading a line ("name: ...");
    # elsewhere the same words may be a feature ("fails on Lq > Lk") and stay
    for name in names:
        text = text.replace(f"'{name}'", "'‹case›'")
        text = re.sub(rf"(?m)^{re.escape(name)}: ", "‹case›: ", text)
    pieces, at = [], 0
    for start in re.finditer(r"cases?: ", text):  # a list "cases: a; b" or "a, b": names one after another
        if start.start() < at:
            continue
        pieces.append(text[at:start.end()])
        at = start.end()
        while True:
            name = next((n for n in names if text.startswith(n, at)), None)
            if name is None:
                break
            pieces.append("‹case›")
            at += len(name)
            if text[at:at + 2] in ("; ", ", "):
                pieces.append(text[at:at + 2])
                at += 2
    return "".join(pieces) + text[at:]


def false_aggregates(ex_feedback: str, case_feedback: list[str]) -> list[str]:
    """Sentences "X (in K of N failing cases ...)" whose X, numbers included, fewer than K failing cases
    say, while K or more say it with other numbers: the figures of some cases stated of all."""
    wrong = []
    low = [f.lower() for f in case_feedback]
    masked_cases = [re.sub(r"\d[\d.e+-]*", "#", f) for f in low]
    for found in re.finditer(r"([^()]{12,}?) \(in (\d+) of \d+ failing cases", ex_feedback):
        claim = found[1].strip().split(". ")[-1].lower()
        k = int(found[2])
        exact = sum(claim in f for f in low)
        shaped = sum(re.sub(r"\d[\d.e+-]*", "#", claim) in f for f in masked_cases)
        if re.search(r"\d", claim) and exact < k <= shaped:
            wrong.append(f"{found[0]!r}: said with these figures by {exact} of the {k} cases it is counted for")
    return wrong


def grade(chosen: list[tuple[Path, dict]], seed: int = 0, jobs: int = 1, timeout: float = 600,
          grader: Path | None = None, one_class: bool = False) -> list[Graded]:
    """Grade every file of ``chosen`` through ``mha-grade batch``: one class per exercise, each
    graded on its exercise only, or with ``one_class`` all in one class graded on every exercise
    (one start of the grader: cheaper for a handful of files)."""
    results = []
    by_exercise: dict[str, list] = {}
    for path, meta in chosen:
        by_exercise.setdefault(None if one_class else meta["exercise"], []).append((path, meta))
    env = dict(os.environ, OMP_NUM_THREADS="1", COLUMNS="200", NO_COLOR="1")
    if grader:  # another checkout's grader (e.g. a clean export of a commit: the shared tree may be mid-edit)
        env["PYTHONPATH"] = os.pathsep.join([str(grader), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryDirectory(prefix="outside-") as tmp:
        for exercise, files in by_exercise.items():
            klass, out = Path(tmp) / (exercise or "all") / "class", Path(tmp) / (exercise or "all") / "out"
            for path, _ in files:
                build(path, klass / learner_id(path))
            only = ["--exercise", exercise] if exercise else []
            run = subprocess.run([sys.executable, "-m", "autograder", "batch", str(klass), "--out", str(out), *only,
                                  "--seed", str(seed), "--jobs", str(jobs), "--quiet"],
                                 cwd=grader or ROOT, env=env, capture_output=True, text=True, timeout=timeout)
            for path, meta in files:
                exercise = meta["exercise"]
                graded = Graded(path, meta)
                report_path = out / "reports" / f"{learner_id(path)}.json"
                try:
                    report = json.loads(report_path.read_text())
                    markdown = (out / "feedback" / f"{learner_id(path)}.md").read_text()
                    graded.words, ex = words_of(exercise, report, markdown)
                    graded.score, graded.max_score = float(ex["score"]), float(ex["max_score"])
                    graded.status = ex.get("status", "")
                    graded.failing = [c["name"] for c in ex.get("cases", []) if not c.get("passed")]
                    graded.claims = claims_of(graded.words, [c["name"] for c in ex.get("cases", [])])
                    graded.aggregates = false_aggregates(
                        ex.get("feedback", ""), [c.get("feedback", "") for c in ex.get("cases", []) if not c.get("passed")])
                except (OSError, ValueError, KeyError, StopIteration) as err:
                    graded.error = f"no report ({type(err).__name__}: {err}); batch said: {run.stderr[-400:]}"
                results.append(graded)
    return results


def table(results: list[Graded]) -> dict:
    rows: dict = {}
    for g in results:
        row = rows.setdefault(g.meta["exercise"], {"files": 0, "verdicts": 0, "losing": 0, "named": 0, "false": 0})
        row["files"] += 1
        row["verdicts"] += g.verdict_right
        if g.meta["verdict"] == "loses":
            row["losing"] += 1
            row["named"] += g.named and not g.full
        row["false"] += len(g.false_sentences())
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", nargs="*", help="exercise ids (default: every one with files)")
    parser.add_argument("--file", nargs="*", help="file names without .py (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--words", action="store_true", help="print every file's words in the listing")
    parser.add_argument("--grader", type=Path, help="a checkout whose grader grades (default: this one)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = grade(corpus(args.exercise, args.file), args.seed, args.jobs, grader=args.grader)
    rows = table(results)
    order = [e.id for e in COURSE]
    print(f"{'exercise':30} {'files':>6} {'verdicts':>9} {'losing':>7} {'named':>6} {'named %':>8} {'false':>6}")
    totals = {"files": 0, "verdicts": 0, "losing": 0, "named": 0, "false": 0}
    for exercise in sorted(rows, key=order.index):
        row = rows[exercise]
        for k in totals:
            totals[k] += row[k]
        share = f"{100 * row['named'] / row['losing']:.0f}%" if row["losing"] else "-"
        print(f"{exercise:30} {row['files']:6} {row['verdicts']:9} {row['losing']:7} {row['named']:6} {share:>8} "
              f"{row['false']:6}")
    share = totals["named"] / totals["losing"] if totals["losing"] else 1.0
    print(f"{'all':30} {totals['files']:6} {totals['verdicts']:9} {totals['losing']:7} {totals['named']:6} "
          f"{100 * share:7.0f}% {totals['false']:6}")
    print(f"({time.perf_counter() - started:.0f} s, seed {args.seed}, grader {args.grader or 'this checkout'})")
    print("\nPer file (verdict expected/got, score, cause named):")
    for g in results:
        name = g.path.relative_to(CORPUS).as_posix()
        got = "error" if g.error else "full" if g.full else "loses"
        named = "-" if g.meta["verdict"] == "full" else ("named" if g.named and not g.full else "UNNAMED")
        mark = "ok " if g.verdict_right else "BAD"
        print(f"{mark} {name:58} {g.meta['verdict']:>5}/{got:5} {g.score:5.2f}/{g.max_score:<4g} {named}")
        if g.error:
            print(f"      ERROR {g.error}")
        if not g.verdict_right or named == "UNNAMED":
            print(f"      cause: {g.meta['cause']}")
            if g.failing:
                print(f"      failing: {'; '.join(g.failing)[:300]}")
        for wrong in g.false_sentences():
            print(f"      FALSE {wrong}")
        for sentence in g.review():
            print(f"      REVIEW {sentence[:300]}")
        if args.words or named == "UNNAMED":
            for line in g.words.splitlines()[:12]:
                print(f"      | {line[:240]}")
    checks = [("every verdict right", totals["verdicts"] == totals["files"],
               f"{totals['verdicts']} of {totals['files']}"),
              (f"causes named >= {NAMED_TARGET:.0%}", share >= NAMED_TARGET,
               f"{totals['named']} of {totals['losing']} ({share:.0%})"),
              ("no false sentence", totals["false"] == 0, f"{totals['false']} false")]
    print()
    for what, ok, figure in checks:
        print(f"{'PASS' if ok else 'MISS'} {what}: {figure}")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
