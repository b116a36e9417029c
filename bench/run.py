"""Run one benchmark and keep what it printed as its last run: ``bench/results/<name>.json``.

    python bench/run.py NAME [ARGS...]        e.g.  python bench/run.py batch --n 300

The record holds the command, its exit status, everything it printed (its tables and its
PASS/MISS lines, as a reader saw them), when and where it ran (commit, CPUs, load, Python and
torch versions), how long it took, and the SHA-256 of the script's source. The figures the
guides quote are read from that output by ``scripts/bench_docs.py``, never typed: a figure that
no longer matches its record, or a record of a script changed since it ran, fails
``tests/test_bench_records.py``. ``BENCH_RESULTS=DIR`` keeps trial runs out of the committed records.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
WIDTH = "200"  # columns for the tables: a row that wraps is a figure the docs cannot find
MAX_OUTPUT = 200_000  # characters of output kept
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def results_dir() -> Path:
    return Path(os.environ.get("BENCH_RESULTS") or RESULTS)


def script_of(name: str) -> Path:
    return ROOT / "bench" / f"{name}.py"


def source_sha(script: Path) -> str:
    return hashlib.sha256(script.read_bytes()).hexdigest()


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _machine() -> dict:
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass

    def version(package):
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    return {"cpus": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
            "numpy": version("numpy"), "torch": version("torch"), "system": platform.platform()}


def run(name: str, args: list[str], script: Path | None = None) -> dict:
    """Run the bench (its output shown as it comes) and write its record; return the record."""
    script = script or script_of(name)
    if not script.is_file():
        raise SystemExit(f"no benchmark {script}")
    sha = source_sha(script)  # before the run: the source that ran
    env = dict(os.environ, COLUMNS=WIDTH, TERM="dumb", NO_COLOR="1")
    started, load = time.time(), os.getloadavg()
    lines = []
    with subprocess.Popen([sys.executable, str(script), *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(ANSI.sub("", line))
    record = {
        "bench": name, "script": script.relative_to(ROOT).as_posix() if script.is_relative_to(ROOT) else str(script),
        "source_sha256": sha, "args": args, "exit_status": proc.returncode,
        "started": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 1),
        "commit": _git("rev-parse", "HEAD"), "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "machine": dict(_machine(), load_before=[round(x, 2) for x in load],
                        load_after=[round(x, 2) for x in os.getloadavg()]),
        "output": "".join(lines)[-MAX_OUTPUT:],
    }
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{name}.json.partial"
    partial.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(partial, folder / f"{name}.json")
    return record


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    record = run(argv[0], argv[1:])
    print(f"recorded: {results_dir() / (argv[0] + '.json')} (exit status {record['exit_status']}); "
          "then: python scripts/bench_docs.py", file=sys.stderr)
    return record["exit_status"]


if __name__ == "__main__":
    sys.exit(main())
