"""The benchmark figures of the README and the guides are their scripts' last output.

Each figure is a region (``scripts/bench_docs.py``) read from ``bench/results/<bench>.json``,
the record ``bench/run.py`` writes of a run. A figure that differs from its record, a record
of a script edited since it ran, a label the record does not hold, or a number typed by hand
in the benchmarks table's last column fails here; the planted cases show each check can fail.
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


bench_docs = _load(ROOT / "scripts" / "bench_docs.py", "bench_docs")
bench_run = bench_docs.bench_run


def test_every_figure_in_the_docs_is_its_record_s():
    problems = bench_docs.check()
    assert not problems, "\n".join(map(str, problems)) + "\n(python scripts/bench_docs.py writes them)"


def test_the_benchmarks_table_has_no_figure_typed_by_hand():
    """Its last column ("last run") holds figures in regions only: a number between them is one of
    the row's own parameters or targets (in its other columns), never a measurement."""
    text = (ROOT / "book" / "guides" / "contributor.md").read_text()
    rows = [line for line in text.splitlines() if re.match(r"\| `bench/\w+\.py` \|", line)]
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py")} - {"run"}
    assert {re.match(r"\| `bench/(\w+)\.py`", row)[1] for row in rows} == scripts, "a benchmark without its row"
    for row in rows:
        given, last = row.rstrip(" |").rsplit(" | ", 1)
        assert bench_docs.REGION.search(last), f"no figure from a record: {row[:80]}"
        stated = set(bench_docs.NUMBER.findall(given))
        typed = [n for n in bench_docs.NUMBER.findall(bench_docs.REGION.sub("", last)) if n not in stated]
        assert not typed, f"numbers outside a bench region: {typed} in {row[:60]}..."


def _record(tmp: Path, name: str, output: str, script_text: str = "print('x')\n") -> dict:
    (tmp / "bench").mkdir(exist_ok=True)
    script = tmp / "bench" / f"{name}.py"
    script.write_text(script_text)
    return {"bench": name, "source_sha256": bench_run.source_sha(script), "args": ["--n", "3"],
            "started": "2026-11-28T21:00:00+00:00", "output": output, "exit_status": 0}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda x: f"{x:.3f}"),
                min_size=1, max_size=4),
       st.integers(min_value=0, max_value=3), st.text("abc xyz()", min_size=1, max_size=12).filter(str.strip))
def test_a_region_shows_exactly_the_figure_its_record_printed(tmp_path_factory, numbers, pick, noise):
    """Rendering puts the record's N-th number after the label in the region; changing the shown
    figure by hand, or the record's output, is found by the check."""
    tmp = tmp_path_factory.mktemp("docs")
    pick = pick % len(numbers)
    label = "wall per submission"
    output = f"{noise}\n| {label} | " + " | ".join(numbers) + " |\n"
    found = {"demo": _record(tmp, "demo", output)}
    doc = tmp / "guide.md"
    doc.write_text(f'Took <!-- bench demo "{label}" {pick + 1} -->?<!-- /bench --> s '
                   f"(<!-- bench demo run -->?<!-- /bench -->).\n")
    rendered, problems = bench_docs.render(doc.read_text(), found)
    assert not problems
    assert f"-->{numbers[pick]}<!--" in rendered and "2026-11-28, `--n 3`" in rendered
    doc.write_text(rendered)
    assert bench_docs.check([doc], found, tmp / "bench") == []
    doc.write_text(rendered.replace(f"-->{numbers[pick]}<!--", f"-->{numbers[pick]}1<!--"))  # typed by hand
    assert any("its record" in p.what for p in bench_docs.check([doc], found, tmp / "bench"))


def test_a_script_changed_since_its_run_and_a_missing_label_are_found(tmp_path):
    found = {"demo": _record(tmp_path, "demo", "| rate | 3.5 |\n")}
    doc = tmp_path / "guide.md"
    doc.write_text('<!-- bench demo "rate" -->3.5<!-- /bench --> and <!-- bench demo "speed" -->1<!-- /bench -->\n')
    what = [p.what for p in bench_docs.check([doc], found, tmp_path / "bench")]
    assert any("no line of its output holds 'speed'" in w for w in what), what
    (tmp_path / "bench" / "demo.py").write_text("print('changed')\n")
    what = [p.what for p in bench_docs.check([doc], found, tmp_path / "bench")]
    assert any("changed since this run" in w for w in what), what


def test_a_bench_without_a_record_shows_no_number(tmp_path):
    doc = tmp_path / "guide.md"
    doc.write_text('<!-- bench nothing "rate" -->0.12<!-- /bench -->\n')
    rendered, _ = bench_docs.render(doc.read_text(), {})
    assert "-->not yet recorded<!--" in rendered
    assert bench_docs.check([doc], {}, tmp_path) != []  # the hand-typed 0.12 differs from no record


def test_run_records_what_the_bench_printed(tmp_path, monkeypatch):
    """bench/run.py on a tiny bench: its output, exit status, arguments and source hash are kept,
    in the folder BENCH_RESULTS names (never the committed records)."""
    script = tmp_path / "tiny.py"
    script.write_text("import sys\nprint('| rate |', 2 * float(sys.argv[1]), '|')\nsys.exit(3)\n")
    monkeypatch.setenv("BENCH_RESULTS", str(tmp_path / "results"))
    record = bench_run.run("tiny", ["1.25"], script=script)
    kept = json.loads((tmp_path / "results" / "tiny.json").read_text())
    assert kept == record
    assert kept["exit_status"] == 3 and kept["args"] == ["1.25"] and "| rate | 2.5 |" in kept["output"]
    assert kept["source_sha256"] == bench_run.source_sha(script) and kept["machine"]["cpus"]
    assert bench_docs.figure(kept, "rate") == "2.5"


@pytest.mark.parametrize("record", sorted((ROOT / "bench" / "results").glob("*.json")), ids=lambda p: p.stem)
def test_each_record_is_of_a_whole_run(record):
    data = json.loads(record.read_text())
    assert data["bench"] == record.stem and data["output"].strip() and isinstance(data["exit_status"], int)
    assert (ROOT / "bench" / f"{record.stem}.py").is_file()
