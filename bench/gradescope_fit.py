"""Benchmark: does grading fit Gradescope's default container (768 MB of memory, half a CPU)?

Measurements, printed as tables (the README's table of settings comes from them):

1. The learner side, per implementation: every correct alternative and every known wrong
   implementation of ``tests/wrong_implementations/`` runs its exercise's grading cases
   (seed 0) the way the learner's process runs them (the case drivers, inputs included), and
   in a fork of one process that imported everything (as the learner's process is a fork of
   the zygote): its peak resident memory above its start (``VmHWM``, reset through
   ``/proc/self/clear_refs``), its peak address-space growth (``VmPeak``: what the
   per-exercise limit, an ``RLIMIT_AS`` above the process's start, binds) and its CPU time.
2. The whole run: ``mha-grade solutions`` with its process tree sampled every 20 ms; the peak
   of the summed proportional set size (PSS: shared pages counted once, as a memory cgroup
   counts them) of the grader, its learner-side zygote and their children.

3. With ``--container`` (Linux, root, cgroups): ``mha-grade`` run inside a memory and CPU
   cgroup of the container's size (768 MB, 50 ms of CPU per 100 ms), on the solutions and on
   a submission whose softmax touches memory until something stops it: does every exercise
   still get its grade, and what is the cgroup's peak usage?
4. With ``--container`` too: single Gradescope grades, one submission per fresh cgroup, each
   run as ``gradescope/run_autograder`` runs it (``mha-grade SUB --gradescope results.json
   --seed-file F --run-as USER``, as root): an honest learner (the baseline), each hostile
   submission of ``tests/hostile_files.py`` (a notebook cell 200k terms deep, the same in a
   module, a cell of 400k blank lines, a zip of 100 notebooks of 20 MB, a 60 MB frame of empty
   objects), ``tests/adversarial/`` memory_bomb, hostile_text and leak_inputs, and softmaxes
   that touch memory (128 MiB at a time, 1 GiB at once, a module doing so at import, which may
   take 5 s of CPU: time to fill the container). For each: exit status, whether
   results.json was written with a test for every exercise, OOM kills in the cgroup (the
   ``oom_kill`` count of ``memory.oom_control``) and which process the kernel killed (its
   ``oom-kill`` line in the kernel log: the grader, the zygote or a reader, a learner's child), the
   cgroup's peak (``memory.max_usage_in_bytes``) and wall time. (``under_oom`` stays 1 only
   while an OOM killer is disabled, and ``memory.failcnt`` stayed 0 on Linux 6.18 with the
   memory+swap limit set, the OOM killer having run: neither tells.) It misses when the
   grader was OOM-killed, results.json is missing or incomplete, a grade still runs after
   ``--kill-after`` (run_autograder's 1800 s), or a peak is more than ``--bound-mb`` (500)
   above the honest learner's (not for the code that touches memory: its own process's
   pages, up to the container, are the learner's). ``--checkout DIR`` grades with another
   checkout's grader (an older one: before a change).

Targets: the whole run's peak below 768 MB; each implementation's peak below the
per-exercise memory limit; at half a CPU, twice an implementation's CPU time within its
exercise's time limit (an estimate: one exercise's cases run in one process); and the CPU
time of all its cases within a fifth of one case's CPU limit (``Exercise.case_cpu``).

    python bench/gradescope_fit.py [--container-mb 768] [--cpus 0.5] [--container [--singles-only]
                                   [--user nobody] [--bound-mb 500] [--only NAME ...] [--checkout DIR]
                                   [--kill-after 1800]]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))
import hostile_files  # noqa: E402  (the submissions built to cost the grader)

LIBRARY = ROOT / "tests" / "wrong_implementations"


def _kb(field: str, pid: str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _library(exercise_id: str):
    spec = importlib.util.spec_from_file_location(f"wrong_{exercise_id}", LIBRARY / f"{exercise_id}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def learner_side_peaks() -> list[dict]:
    import numpy as np

    from autograder.grading import judge, reference
    from autograder.grading.exercises import EXERCISES

    rows = []
    for exercise_id, exercise in EXERCISES.items():
        lib = _library(exercise_id)
        entries = [("reference", None)] + [("correct", f) for f in lib.CORRECT] + [("wrong", f) for f in lib.WRONG]
        for kind, implementation in entries:
            row = _in_a_fork(lambda: _run_cases(exercise, implementation, np, judge, reference))
            rows.append({"exercise": exercise_id, "kind": kind,
                         "name": getattr(implementation, "__name__", "solutions"), **row,
                         "limit_mb": exercise.memory_mb, "time_limit": exercise.timeout,
                         "case_cpu": exercise.case_cpu})
    return rows


def _run_cases(exercise, implementation, np, judge, reference) -> None:
    ns = reference.namespace(None if implementation is None else {exercise.id: implementation})
    for case in exercise.cases(np.random.default_rng(0)):
        try:
            with np.errstate(all="ignore"):
                judge.run_driver(case, ns)
        except Exception:  # noqa: BLE001  (a wrong implementation may raise; its memory still counts)
            pass


def _in_a_fork(work) -> dict:
    """Run ``work`` in a forked child, as the learner's process is a fork of the zygote:
    its peak resident memory (``VmHWM``, reset at the start) and its peak address space
    (``VmPeak``), both above the child's own start, and its CPU time."""
    import json

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        Path("/proc/self/clear_refs").write_text("5")
        rss0, vm0, cpu = _kb("VmRSS"), _kb("VmSize"), time.process_time()
        work()
        out = {"peak_mb": (_kb("VmHWM") - rss0) / 1024, "address_mb": (_kb("VmPeak") - vm0) / 1024,
               "cpu_s": time.process_time() - cpu}
        os.write(write, json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 4096):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(data)


def _tree(root: int) -> list[int]:
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo += [int(p) for p in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return pids


def _pss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def whole_run_peak() -> tuple[float, float, int]:
    """(peak summed PSS in MB, wall seconds, most processes at once) of ``mha-grade solutions``."""
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "solutions", "--quiet"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak, most, start = 0.0, 0, time.perf_counter()
    while proc.poll() is None:
        pids = _tree(proc.pid)
        peak = max(peak, sum(_pss_mb(p) for p in pids))
        most = max(most, len(pids))
        time.sleep(0.02)
    return peak, time.perf_counter() - start, most


def touching_bomb(floats: int = 2**24) -> str:
    """A softmax that writes memory until something stops it, ``floats`` * 8 bytes at a time."""
    return f"""

def softmax(x, axis=-1):
    hog = []
    while True:  # resident memory, not only address space: pages written
        hog.append(np.ones({floats}))  # {floats * 8 // 2**20} MiB each, touched
"""


# At import, which may take 5 s of CPU (a case only 0.5 s): time enough to fill any container.
TOUCHING_AT_IMPORT = """

_hog = []
while True:  # at import: resident memory, 128 MiB at a time
    _hog.append(np.ones(2**24))
"""


def _touches(folder: Path, floats: int | None) -> Path:
    hostile_files.honest(folder)
    with open(folder / "attention.py", "a") as f:
        f.write(touching_bomb(floats) if floats else TOUCHING_AT_IMPORT)
    return folder


# A single Gradescope grade of each: name -> builder of the submission in a fresh folder.
SINGLES = {
    **hostile_files.attacks("sub"),
    "memory_bomb": lambda d: hostile_files.adversarial(d / "sub", "memory_bomb"),
    "hostile_text": lambda d: hostile_files.adversarial(d / "sub", "hostile_text"),
    "leak_inputs": lambda d: hostile_files.adversarial(d / "sub", "leak_inputs"),
    "touches 128 MiB at a time": lambda d: _touches(d / "sub", 2**24),
    "touches 1 GiB at once": lambda d: _touches(d / "sub", 2**27),
    "touches memory at import": lambda d: _touches(d / "sub", None),
}
# Their own process's resident pages, up to the whole container, are the learner's: the
# bound on the peak above the honest learner's is not theirs (the grader's survival is).
OWN_PAGES = ("touches 128 MiB at a time", "touches 1 GiB at once", "touches memory at import")


class Container:
    """A memory + CPU cgroup (v2, or v1's memory and cpu hierarchies) that a command runs in."""

    made = 0

    def __init__(self, memory_mb: float, cpus: float):
        Container.made += 1  # one name per cgroup: the kernel log names the cgroup of an OOM kill
        name = self.name = f"mha-fit-{os.getpid()}-{Container.made}"
        self.v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
        if self.v2:
            self.dirs = [Path("/sys/fs/cgroup") / name]
            self.dirs[0].mkdir()
            (self.dirs[0] / "memory.max").write_text(str(int(memory_mb * 2**20)))
            (self.dirs[0] / "memory.swap.max").write_text("0")
            (self.dirs[0] / "cpu.max").write_text(f"{int(cpus * 100000)} 100000")
        else:
            mem, cpu = Path("/sys/fs/cgroup/memory") / name, Path("/sys/fs/cgroup/cpu") / name
            mem.mkdir(), cpu.mkdir()
            self.dirs = [mem, cpu]
            (mem / "memory.limit_in_bytes").write_text(str(int(memory_mb * 2**20)))
            swap = mem / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(int(memory_mb * 2**20)))
            (mem / "memory.swappiness").write_text("0")
            (cpu / "cpu.cfs_period_us").write_text("100000")
            (cpu / "cpu.cfs_quota_us").write_text(str(int(cpus * 100000)))

    def enter(self) -> None:  # in the child, before exec
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(os.getpid()))

    def peak_mb(self) -> float:
        f = self.dirs[0] / ("memory.peak" if self.v2 else "memory.max_usage_in_bytes")
        return int(f.read_text()) / 2**20 if f.exists() else float("nan")

    def oom_kills(self) -> int:
        f = self.dirs[0] / ("memory.events" if self.v2 else "memory.oom_control")
        for line in f.read_text().splitlines() if f.exists() else []:
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.dirs[0] / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def oom_killed(self) -> list[dict]:
        """The processes the kernel's OOM killer killed in this cgroup, from the kernel log's
        ``oom-kill:`` lines (pid, uid, task); None when the log cannot be read."""
        try:
            log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        killed = []
        for line in log.splitlines():
            if "oom-kill:" in line and f"oom_memcg=/{self.name}," in line + ",":
                said = line.split("oom-kill:", 1)[1].split(",")
                fields = dict(kv.split("=", 1) for kv in said if "=" in kv)
                killed.append({"pid": int(fields.get("pid", -1)), "uid": int(fields.get("uid", -1)),
                               "task": fields.get("task", "?")})
        return killed

    def close(self) -> None:
        for d in self.dirs:
            for _ in range(50):  # a grader's children may take a moment to die after it
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def in_container(submission: Path, memory_mb: float, cpus: float) -> dict:
    import json
    import tempfile

    box = Container(memory_mb, cpus)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "autograder", str(submission), "--json", str(report),
                                   "--quiet"], cwd=ROOT, capture_output=True, text=True, preexec_fn=box.enter,
                                  timeout=1800)
            wall = time.perf_counter() - start
            data = json.loads(report.read_text()) if report.exists() else None
        return {"status": proc.returncode, "wall": wall, "peak_mb": box.peak_mb(), "oom_kills": box.oom_kills(),
                "report": data, "stderr": proc.stderr[-300:]}
    finally:
        box.close()


def _parents(pid: int) -> tuple[int, int] | None:
    """(parent pid, real uid) of a live process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["PPid"]), int(fields["Uid"].split()[0])


def _role(pid: int, uid: int, grader: int, seen: dict, learner_uid: int | None) -> str:
    """Which process of a grade ``pid`` was: the grader itself, a child of it (the zygote, or a
    reader of the learner's files: both stay the grader's user), or a learner's process (a
    child of the zygote, run as the learner's user with ``--run-as``)."""
    if pid == grader:
        return "the grader"
    depth, p = 0, pid
    while p in seen and p != grader and depth < 20:
        p, depth = seen[p][0], depth + 1
    if p == grader:
        return "the zygote or a reader" if depth == 1 else "a learner's child"
    return "a learner's process" if uid == learner_uid else f"pid {pid} (uid {uid})"


def gradescope_grade(submission: Path, memory_mb: float, cpus: float, user: str | None, seed_file: Path,
                     checkout: Path = ROOT, kill_after: float = 1800) -> dict:
    """One grade as ``gradescope/run_autograder`` runs it, in a fresh cgroup of the container's size,
    by the grader of ``checkout`` (another one measures before a change)."""
    import json
    import pwd
    import tempfile

    from autograder.spec import POINTS

    learner_uid = pwd.getpwnam(user).pw_uid if user else None
    box = Container(memory_mb, cpus)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = Path(tmp) / "results.json"
            cmd = [sys.executable, "-m", "autograder", str(submission), "--gradescope", str(results),
                   "--seed-file", str(seed_file)] + (["--run-as", user] if user else [])
            start = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=checkout, env=dict(os.environ, PYTHONPATH=str(checkout)),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=box.enter)
            seen: dict[int, tuple[int, int]] = {}
            log = bytearray()
            timed_out = False
            os.set_blocking(proc.stdout.fileno(), False)
            while proc.poll() is None:
                for pid in box.pids():  # who is who, for naming the process the OOM killer picks
                    if pid not in seen and (known := _parents(pid)):
                        seen[pid] = known
                log += proc.stdout.read() or b""
                if time.perf_counter() - start > kill_after:  # run_autograder's `timeout 1800`
                    proc.kill()
                    timed_out = True
                time.sleep(0.05)
            wall = time.perf_counter() - start
            os.set_blocking(proc.stdout.fileno(), True)
            log += proc.stdout.read() or b""
            data = None
            if results.exists():
                try:
                    data = json.loads(results.read_text())
                except ValueError:
                    pass
        killed = box.oom_killed()
        # An exercise has its test: one named by its id (or "<id>: <case>", as an older writer
        # named one per case) that is worth points.
        tests = {t["name"].split(": ")[0] for t in (data or {}).get("tests", []) if t.get("max_score")}
        return {"exit": "killed" if timed_out else proc.returncode, "wall": wall, "peak_mb": box.peak_mb(),
                "results": data is not None,
                "complete": data is not None and set(POINTS) <= tests, "score": (data or {}).get("score"),
                "oom_kills": box.oom_kills(),
                "killed": None if killed is None else
                [_role(k["pid"], k["uid"], proc.pid, seen, learner_uid) for k in killed],
                "log": log.decode(errors="replace")[-600:]}
    finally:
        box.close()


def _counted(roles: list[str]) -> str:
    """"a learner's child ×5, the grader", or "-"."""
    counts = {role: roles.count(role) for role in roles}
    return ", ".join(role + (f" ×{n}" if n > 1 else "") for role, n in counts.items()) or "-"


def gradescope_singles(memory_mb: float, cpus: float, user: str | None, bound_mb: float, only, console,
                       checkout: Path = ROOT, kill_after: float = 1800) -> bool:
    """Section 4 of the module docstring: a table, and whether every grade met its target."""
    import shutil
    import tempfile

    from rich.table import Table

    run_as = f" --run-as {user}" if user else ""
    table = Table(title=f"single Gradescope grades (mha-grade --gradescope{run_as}) "
                        f"in a {memory_mb:g} MB, {cpus:g}-CPU cgroup each"
                        + ("" if checkout == ROOT else f", grader of {checkout}"))
    columns = ("submission", "exit", "results.json", "score", "OOM kills", "killed", "cgroup peak MB",
               "wall s", "target")
    for col in columns:
        left = col in ("submission", "results.json", "killed", "target")
        table.add_column(col, justify="left" if left else "right")
    names = ["honest"] + [n for n in SINGLES if n != "honest" and (not only or n in only)]
    ok, base = True, None
    with tempfile.TemporaryDirectory() as tmp:
        seed_file = Path(tmp) / "seed"
        seed_file.write_text(str(int.from_bytes(os.urandom(4), "little")))
        seed_file.chmod(0o600)  # root-only, as in run_autograder
        for name in names:
            folder = Path(tmp) / name.replace(" ", "-")
            folder.mkdir()
            r = gradescope_grade(SINGLES[name](folder), memory_mb, cpus, user, seed_file, checkout,
                                 kill_after)
            shutil.rmtree(folder, ignore_errors=True)
            if name == "honest":
                base = r["peak_mb"]
            # The kernel log names whom the OOM killer picked; without it, a SIGKILL may have been it.
            grader_died = "the grader" in r["killed"] if r["killed"] is not None else r["exit"] == -9
            misses = [why for why, bad in (
                ("grader OOM-killed", grader_died),
                (f"still running after {kill_after:g} s", r["exit"] == "killed"),
                ("no results.json", not r["results"]),
                ("an exercise without its test", r["results"] and not r["complete"]),
                (f"peak over honest + {bound_mb:g} MB",
                 name not in OWN_PAGES and r["peak_mb"] > base + bound_mb)) if bad]
            ok &= not misses
            written = "complete" if r["complete"] else "incomplete" if r["results"] else "missing"
            table.add_row(name, str(r["exit"]), written, "-" if r["score"] is None else f"{r['score']:g}",
                          str(r["oom_kills"]),
                          "?" if r["killed"] is None else _counted(r["killed"]),
                          f"{r['peak_mb']:.0f}", f"{r['wall']:.1f}", "; ".join(misses) or "met")
            if misses:
                console.print(f"{name}: {', '.join(misses)}; the grader's last output:\n{r['log']}")
    console.print(table)
    return ok


def container_runs(memory_mb: float, cpus: float, console) -> bool:
    import shutil
    import tempfile

    from rich.table import Table

    table = Table(title=f"mha-grade in a {memory_mb:g} MB, {cpus:g}-CPU cgroup")
    for col in ("submission", "exit", "wall s", "cgroup peak MB", "OOM kills", "score", "not passed"):
        table.add_column(col, justify="left" if col in ("submission", "not passed") else "right")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        bomb = Path(tmp) / "bomb"
        shutil.copytree(ROOT / "solutions", bomb)
        with open(bomb / "attention.py", "a") as f:
            f.write(touching_bomb())
        for name, path in (("solutions", ROOT / "solutions"), ("softmax touches memory", bomb)):
            r = in_container(path, memory_mb, cpus)
            rep = r["report"] or {}
            bad = [f"{e['id']} ({e['status']})" for e in rep.get("exercises", []) if e["status"] != "passed"]
            table.add_row(name, str(r["status"]), f"{r['wall']:.1f}", f"{r['peak_mb']:.0f}", str(r["oom_kills"]),
                          f"{rep.get('score', 'none')}", ", ".join(bad) or "-")
            expected = [] if name == "solutions" else ["softmax"]
            ok &= r["status"] == 0 and [b.split(" ")[0] for b in bad] == expected
    console.print(table)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--container-mb", type=float, default=768)
    parser.add_argument("--cpus", type=float, default=0.5)
    parser.add_argument("--container", action="store_true", help="also grade inside a cgroup of that size")
    parser.add_argument("--user", default="nobody",
                        help="with --container: the learner's user (--run-as; run_autograder: mha-learner)")
    parser.add_argument("--bound-mb", type=float, default=500,
                        help="with --container: how far above the honest grade's peak a hostile one may go")
    parser.add_argument("--only", action="append", choices=list(SINGLES),
                        help="with --container: only these single grades (and the honest one)")
    parser.add_argument("--singles-only", action="store_true",
                        help="with --container: only the single Gradescope grades (section 4)")
    parser.add_argument("--checkout", type=Path, default=ROOT,
                        help="with --container: the single grades by this checkout's grader (older: before)")
    parser.add_argument("--kill-after", type=float, default=1800,
                        help="with --container: seconds before a grade is killed (run_autograder's 1800)")
    args = parser.parse_args(argv)
    if args.singles_only:
        from rich.console import Console

        return 0 if gradescope_singles(args.container_mb, args.cpus, args.user, args.bound_mb, args.only,
                                       Console(width=max(160, int(os.environ.get("COLUMNS", 0)))), args.checkout.resolve(), args.kill_after) else 1
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, int(os.environ.get("COLUMNS", 0))))
    peak, wall, most = whole_run_peak()
    rows = learner_side_peaks()
    table = Table(title="Learner side: peak memory above the process's baseline, per implementation (seed 0)")
    for col in ("exercise", "largest peak (implementation)", "RSS MB", "address space MB", "limit MB",
                "CPU s (largest)", f"≈ wall at {args.cpus:g} CPU", "time limit s"):
        table.add_column(col, justify="left" if col.startswith(("exercise", "largest")) else "right")
    worst_ok = True
    for exercise in dict.fromkeys(r["exercise"] for r in rows):
        mine = [r for r in rows if r["exercise"] == exercise]
        big = max(mine, key=lambda r: r["peak_mb"])
        wide = max(r["address_mb"] for r in mine)
        slow = max(mine, key=lambda r: r["cpu_s"])
        est = slow["cpu_s"] / args.cpus
        ok = wide <= big["limit_mb"] and est <= slow["time_limit"]
        worst_ok &= ok
        table.add_row(exercise, f"{big['name']} ({big['kind']})", f"{big['peak_mb']:.0f}", f"{wide:.0f}",
                      f"{big['limit_mb']}",
                      f"{slow['cpu_s']:.2f} ({slow['name']})", f"{est:.1f}", f"{slow['time_limit']:g}")
    console.print(table)
    top = sorted(rows, key=lambda r: -r["peak_mb"])[:5]
    console.print("largest learner-side peaks: " + "; ".join(
        f"{r['exercise']}/{r['name']} ({r['kind']}) {r['peak_mb']:.0f} MB" for r in top))
    console.print(f"largest address-space growth (what the per-exercise limit, RLIMIT_AS, binds): "
                  f"{max(r['address_mb'] for r in rows):.0f} MB")
    console.print(f"whole run (mha-grade solutions): peak PSS {peak:.0f} MB over up to {most} processes, "
                  f"{wall:.1f} s wall; container {args.container_mb:g} MB")
    fits = peak + max(r["peak_mb"] for r in rows if r["kind"] != "reference") <= args.container_mb
    console.print(f"{'PASS' if fits else 'MISS'}: whole run plus the largest learner-side peak "
                  f"({peak:.0f} + {max(r['peak_mb'] for r in rows):.0f} MB) within {args.container_mb:g} MB")
    console.print(f"{'PASS' if worst_ok else 'MISS'}: every implementation within its exercise's limits")
    # A case's CPU limit stops infinite loops early; no correct learner may come near it. The
    # CPU of all an exercise's cases together bounds its slowest case's.
    tight = max(rows, key=lambda r: r["cpu_s"] / r["case_cpu"])
    margin_ok = all(r["cpu_s"] <= r["case_cpu"] / 5 for r in rows)
    worst_ok &= margin_ok
    console.print(f"{'PASS' if margin_ok else 'MISS'}: every implementation's cases together within a fifth of "
                  f"one case's CPU limit (closest: {tight['exercise']}/{tight['name']}, {tight['cpu_s']:.3f} s "
                  f"against {tight['case_cpu']:g} s)")
    boxed = container_runs(args.container_mb, args.cpus, console) if args.container else True
    if args.container:
        console.print(f"{'PASS' if boxed else 'MISS'}: in the container, every exercise graded as expected "
                      "(the bomb costs only softmax)")
        singles = gradescope_singles(args.container_mb, args.cpus, args.user, args.bound_mb, args.only,
                                     console, args.checkout.resolve(), args.kill_after)
        console.print(f"{'PASS' if singles else 'MISS'}: single Gradescope grades: no grader OOM-killed, "
                      f"results.json complete, every peak within {args.bound_mb:g} MB of the honest grade's")
        boxed &= singles
    return 0 if fits and worst_ok and boxed else 1


if __name__ == "__main__":
    sys.exit(main())
