"""The guide's Slurm steps (book/guides/term.md, "On Slurm") run as written on a real Slurm
cluster, from a term folder whose output folder does not exist yet, as root and as an ordinary
user; the merged gradebook compared byte for byte with one ``mha-grade term`` run's.

    python bench/slurm_term.py [--user NAME] [--n 4] [--timeout 3600]

Where ``sinfo`` does not answer (no Slurm here) it prints SKIP and exits 0: it never breaks a
machine without a cluster. The block between the guide's ``slurm steps`` markers is run by
``bash`` exactly as written: its two site paths are made to exist (``/opt/mha-attention``, a
link to this checkout with its ``.venv``; ``/srv/courses/mha-spring``, a link to a term built by
tests/termbuild.py and owned by whoever runs the block). For an ordinary user (``--user``,
which must exist and be able to run this checkout's venv) the block runs under ``runuser``.
Then the bench waits for the jobs the block submitted, runs ``mha-grade term`` once (unsharded,
with the seed the recipe made) into another folder, and compares the term's files: ``term.csv``,
``canvas.csv`` and each assignment's ``grades.csv``, ``canvas.csv``, ``held.csv``, ``summary.md``
and feedback. Prints the wall times (submission to merged gradebook; the one run) and exits 1
listing what differs or failed. The real, confined grader grades (a few learners: the shards
queue on a small node).

The project the block runs is a frozen copy of this checkout's last commit (``git archive``,
with a copy of ``.venv`` whose links to the checkout point to the copy): a grade is reused by the
merge only if the grader's code is unchanged since the shard graded it, so a tree edited while
the jobs queue (by its authors) would be refused by the merge, rightly. ``--live`` runs the
checkout itself.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

GUIDE = ROOT / "book" / "guides" / "term.md"
PROJECT_LINK = Path("/opt/mha-attention")
TERM_LINK = Path("/srv/courses/mha-spring")
COMPARED = ("grades.csv", "canvas.csv", "held.csv", "summary.md")


def slurm_answers() -> bool:
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def guide_block() -> str:
    """The guide's Slurm steps, as written: the bash block between its markers."""
    text = GUIDE.read_text()
    part = text.split("<!-- slurm steps: begin", 1)[1].split("<!-- slurm steps: end -->", 1)[0]
    return re.search(r"```bash\n(.*?)```", part, re.S).group(1)


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        if not link.is_symlink():
            raise SystemExit(f"{link} exists and is not a link: this bench will not replace it")
        link.unlink()
    link.symlink_to(target)


def _as(user: str | None, command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MHA_"))}
    if user:
        command = ["runuser", "-u", user, "--", *command]
        env["HOME"] = str(Path("~" + user).expanduser())
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)


def _wait(jobs: list[str], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queued = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(jobs)], capture_output=True, text=True)
        if queued.returncode == 0 and not queued.stdout.strip():
            return True
        time.sleep(5)
    return False


def _term_files(out: Path) -> dict[str, bytes]:
    found = {}
    for name in ("term.csv", "canvas.csv"):
        found[name] = (out / name).read_bytes() if (out / name).is_file() else b"(missing)"
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        for name in COMPARED:
            f = folder / name
            found[f"{folder.name}/{name}"] = f.read_bytes() if f.is_file() else b"(missing)"
        for f in sorted((folder / "feedback").glob("*.md")):
            found[f"{folder.name}/feedback/{f.name}"] = f.read_bytes()
    return found


def snapshot(into: Path) -> Path:
    """This checkout's last commit in ``into``, with a venv that imports it (see the docstring)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    subprocess.run(["cp", "-al", str(ROOT / ".venv"), str(into / ".venv")], check=True)  # hard links: instant
    for f in [*(into / ".venv" / "bin").iterdir(), *(into / ".venv").glob("lib/python*/site-packages/__editable__*")]:
        if f.is_symlink() or not f.is_file():
            continue
        data = f.read_bytes()
        if str(ROOT).encode() in data[:4096] or f.name.startswith("__editable__"):
            f.unlink()  # a new file, never the linked one (it is the checkout's venv's)
            f.write_bytes(data.replace(str(ROOT).encode(), str(into).encode()))
            f.chmod(0o755)
    return into


def one_user(user: str | None, n: int, timeout: float, tmp: Path, project: Path) -> tuple[list[str], list[str]]:
    """(table rows, problems) of the guide's steps run by ``user`` (None: root)."""
    import termbuild

    who = user or "root"
    folder = tmp / who
    built = termbuild.build(folder, n)
    if user:
        shutil.chown(tmp, user)
        subprocess.run(["chown", "-R", f"{user}:", str(folder)], check=True)
    _link(PROJECT_LINK, project)
    _link(TERM_LINK, folder)
    problems = []
    start = time.perf_counter()
    run = _as(user, ["bash", "-c", guide_block()], cwd=tmp)
    print(f"--- {who}: the guide's block\n{run.stdout}{run.stderr}", end="")
    jobs = re.findall(r"shards job (\d+), merge job (\d+)", run.stdout)
    if run.returncode or not jobs:
        return [f"| {who} | the block failed (exit {run.returncode}) | | |"], [f"{who}: the block failed"]
    if not _wait(list(jobs[0]), timeout):
        problems.append(f"{who}: the jobs did not finish in {timeout:g} s")
    merged = time.perf_counter() - start
    logs = sorted(folder.glob("mha-grade*.log"))
    for log in logs:
        text = log.read_text(errors="replace")
        if "Traceback" in text or "exit status" in text:
            problems.append(f"{who}: {log.name}: {text.strip()[-400:]}")
    start = time.perf_counter()
    one = _as(user, [str(project / ".venv" / "bin" / "mha-grade"), "term", "term.toml", "--out", "one",
                     "--seed-file", ".seed", "--jobs", "2", "--quiet"], cwd=folder)
    single = time.perf_counter() - start
    if one.returncode:
        problems.append(f"{who}: the one run failed: {one.stderr[-1500:]}")
    shards, whole = _term_files(folder / "graded"), _term_files(folder / "one")
    differ = sorted(k for k in set(shards) | set(whole) if shards.get(k) != whole.get(k))
    problems += [f"{who}: {k} differs from the one run's" for k in differ]
    same = sum(shards.get(k) == whole.get(k) for k in shards)
    owner = {p.owner() for p in (folder / "graded").rglob("*")}
    if owner != {who}:
        problems.append(f"{who}: files in graded/ owned by {sorted(owner)}")
    print(f"{who}: {len(logs)} logs, {same} of {len(shards)} files byte-identical to the one run's")
    label = "root" if user is None else f"ordinary user {user}"
    return [f"| {label} | {merged:.1f} | {single:.1f} | {same} of {len(shards)} |"], problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", help="an ordinary user to run the steps as too (must exist)")
    parser.add_argument("--n", type=int, default=4, help="learners in the term (default 4)")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--keep", type=Path, help="build the terms here (default: a temporary folder)")
    parser.add_argument("--live", action="store_true", help="run the checkout itself, not a copy of its last commit")
    args = parser.parse_args(argv)
    if not slurm_answers():
        print("SKIP: sinfo does not answer here (no Slurm cluster)")
        return 0
    if os.geteuid() != 0:
        print("SKIP: the bench makes /opt and /srv links and runs as another user: run it as root")
        return 0
    print(subprocess.run(["sinfo"], capture_output=True, text=True).stdout)
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="mha-slurm-"))
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True, exist_ok=True)
    tmp.chmod(0o755)
    project = ROOT if args.live else snapshot(tmp / "project")
    print(f"project: {project}" + ("" if args.live else f" (a copy of {ROOT}'s last commit)"))
    rows = ["| who | submit to merged gradebook (s) | one run (s) | files byte-identical |", "|---|---:|---:|---:|"]
    problems = []
    for user in [None] + ([args.user] if args.user else []):
        got, bad = one_user(user, args.n, args.timeout, tmp / (user or "root"), project)
        rows += got
        problems += bad
    print("\n".join(rows))
    for p in problems:
        print(f"MISS: {p}")
    if not problems:
        print("PASS: the guide's Slurm steps, from an empty output folder, give the one run's gradebook byte for byte")
    if args.keep is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
