"""The benchmark figures of the README and the guides, read from the benchmarks' last runs.

A figure is written in the docs as a region whose opening comment says where it comes from::

    <!-- bench batch "wall per submission / import torch" -->0.147<!-- /bench -->
    <!-- bench batch "import torch" 2 -->1.33<!-- /bench -->
    <!-- bench batch run -->2026-11-28, `--n 300`<!-- /bench -->

``bench batch "LABEL" [N]``: the N-th number (1 by default) after LABEL on the first line of
``bench/results/batch.json``'s output that holds LABEL (what ``bench/run.py batch`` printed);
``bench batch run``: when that run was, and its arguments. Readers see only the figure (an HTML
comment shows nothing). ``python scripts/bench_docs.py`` writes every region from the records;
``--check`` changes nothing and exits 1 listing each region that differs from its record, each
record of a script changed since it ran, and each label its record does not hold. A bench with
no record renders as "not yet recorded", never as a number typed by hand.
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench_run():
    """bench/run.py: where the records are, and the scripts' hashes (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_run = _bench_run()

DOCS = [ROOT / "README.md", *sorted((ROOT / "book" / "guides").glob("*.md"))]
REGION = re.compile(r'<!-- bench (?P<bench>[\w-]+) (?:(?P<run>run)|"(?P<label>[^"]+)"(?: (?P<nth>\d+))?) -->'
                    r'(?P<shown>.*?)<!-- /bench -->', re.S)
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
MISSING = "not yet recorded"


@dataclass
class Problem:
    file: str
    line: int
    what: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.what}"


def records(folder: Path | None = None) -> dict[str, dict]:
    folder = folder or bench_run.results_dir()
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def figure(record: dict | None, label: str | None, nth: int = 1) -> str:
    """What a region shows: the figure its record printed (ValueError when it is not there)."""
    if record is None:
        return MISSING
    if label is None:  # the run itself
        args = " ".join(record["args"])
        return record["started"][:10] + (f", `{args}`" if args else "")
    for line in record["output"].splitlines():
        if label in line:
            numbers = NUMBER.findall(line[line.index(label) + len(label):])
            if len(numbers) >= nth:
                return numbers[nth - 1]
            raise ValueError(f"the line with {label!r} has {len(numbers)} number(s) after it, not {nth}")
    raise ValueError(f"no line of its output holds {label!r}")


def render(text: str, found: dict[str, dict], where: str = "") -> tuple[str, list[Problem]]:
    """``text`` with every region written from ``found``, and the problems met."""
    problems = []

    def one(match: re.Match) -> str:
        line = text.count("\n", 0, match.start()) + 1
        bench = match["bench"]
        try:
            shown = figure(found.get(bench), None if match["run"] else match["label"], int(match["nth"] or 1))
        except ValueError as err:
            problems.append(Problem(where, line, f"bench {bench}: {err}"))
            return match.group(0)
        return match.group(0)[: match.start("shown") - match.start()] + shown + "<!-- /bench -->"

    return REGION.sub(one, text), problems


def check(docs=None, found: dict | None = None, scripts: Path | None = None) -> list[Problem]:
    """Every way the docs and the records disagree (nothing is written)."""
    found = records() if found is None else found
    problems = []
    for path in docs or DOCS:
        text = path.read_text()
        where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        rendered, met = render(text, found, where)
        problems += met
        for old, new in zip(REGION.finditer(text), REGION.finditer(rendered)):
            if old["shown"] != new["shown"]:
                problems.append(Problem(where, text.count("\n", 0, old.start()) + 1,
                                        f"shows {old['shown']!r}, its record {new['shown']!r}"))
    for name, record in found.items():
        script = (scripts or ROOT / "bench") / f"{name}.py"
        if not script.is_file():
            problems.append(Problem(f"bench/results/{name}.json", 0, "a record of no benchmark script"))
        elif bench_run.source_sha(script) != record["source_sha256"]:
            problems.append(Problem(f"bench/results/{name}.json", 0,
                                    f"bench/{name}.py changed since this run: run `python bench/run.py {name} "
                                    f"{' '.join(record['args'])}` again"))
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        problems = check()
        for p in problems:
            print(p)
        return 1 if problems else 0
    found = records()
    for path in DOCS:
        text = path.read_text()
        rendered, problems = render(text, found, path.name)
        for p in problems:
            print(p, file=sys.stderr)
        if rendered != text:
            path.write_text(rendered)
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
