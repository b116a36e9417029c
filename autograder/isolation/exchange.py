"""The grader's exchange with one child of the zygote: :meth:`Child.start` sends it an
exercise's job, :meth:`Child.collect` answers its calls to proxied exercises and gathers one
output per case until the deadline, or until a case has used its CPU limit (read from the
kernel's count, which the learner's code cannot change). ``sandbox.py`` starts and ends the
children; ``child.py`` is the code that runs in them.

Everything a child sends is the learner's: its code runs in that process and can rewrite
whatever reports its errors there, or write to the socket itself. So a case's error from a
child is only ever the learner's exception in the learner's words (:data:`CHILD_KINDS`), and
what the grader states in its own words it finds itself (:func:`settle`): a timeout from its
clock and the kernel's CPU count, a crash from the wait status, "ran out of memory" from the
memory cgroup's OOM kills (:class:`Memory`), "not attempted" and "does not import" from its
own parse of the sources (:func:`held_to_facts`, ``facts.py``).
"""
from __future__ import annotations

import os
import re
import select
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Callable

from ..inert import inert
from ..spec import MODULE_OF, CaseError
from . import facts, protocol

SEND_SECONDS = 10.0  # for a child to take a job: one waiting for it reads at once
CPU_POLL = 0.1  # seconds between two looks at a waiting child's CPU time
# Importing a learner's module may take far longer than a case: its top may import matplotlib,
# SciPy or pandas (0.5-1 s of CPU each here). That is not the case's time, and has its own limit.
IMPORT_CPU = 5.0
# Bytes a child may send in one exercise, all its frames together: what the grader holds for
# it is the learner's budget (an honest run sends 0.4 MB for all exercises together).
MAX_EXERCISE_BYTES = protocol.MAX_MESSAGE
# Messages in one exercise: each costs the grader a decode (an honest run sends 225 in all).
MAX_EXERCISE_FRAMES = 10_000
# A case's CPU limit: its exercise's budget (``Exercise.case_cpu``: 0.5 s outside chapter 6,
# which every correct implementation known meets, the slowest a dense rotation-matrix RoPE at
# 0.4-0.6 s) times this margin, so that a machine's load, which slows a process's CPU time
# too (caches, frequency), does not decide a grade; the grader also reruns once a case over it.
CPU_MARGIN = 3.0
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc is Linux's


@dataclass
class Child:
    pid: int
    sock: socket.socket
    workdir: str = ""
    reusable: bool = False  # said "done" with its process state still pristine
    # The learner's modules that did not import in its last exercise, and why, in words:
    # ``{"masking": "ValueError at line 3: boom (`raise ValueError('boom')`)"}``.
    not_imported: dict = field(default_factory=dict)
    memory: "Memory | None" = None  # what the kernel counted of its memory, once reaped (Zygote.finish)
    _stat: int | None = field(default=None, repr=False)  # its /proc stat file, open while it lives

    def start(self, job: dict) -> bool:
        """Send the job: the child starts on it at once (False if it is gone or does not read it).

        Two frames: the job without its cases, then the cases (``job["cases"]``: a list, or the
        frame :func:`cases_frame` made once for every submission of a batch)."""
        self.reusable = False
        try:
            self.sock.settimeout(SEND_SECONDS)
            cases = job["cases"]
            protocol.send(self.sock, {k: v for k, v in job.items() if k != "cases"},
                          max_string=protocol.JOB_LIMITS["max_string"])
            protocol.send_frame(self.sock, cases if isinstance(cases, bytes) else cases_frame(cases))
            return True
        except (OSError, protocol.Garbage):  # socket.timeout included; Garbage: a job it cannot take
            return False

    def collect(self, n_cases: int, deadline: float, answer: Callable[[str, list, dict], bytes],
                case_timeouts: list | None = None, case_cpu: float | None = None) -> tuple[list, str | None]:
        """Read until "done", EOF or ``deadline``, answering calls to proxied exercises.

        ``case_timeouts[i]`` (seconds or None): case i must report within that time of the
        previous case's report (or of the module's import) as well. ``case_cpu``: CPU seconds
        the child may spend on any one case, after ``IMPORT_CPU`` for importing the module.
        Returns one entry per case (plain output, CaseError, or None when none came) and why
        the exchange ended early (``"timeout"``, ``"cpu"`` for a case over ``case_cpu``,
        ``"import_cpu"``, ``"closed"``, ``"garbage"``, ``"oversize"`` when its frames together
        would pass ``MAX_EXERCISE_BYTES`` or outnumber ``MAX_EXERCISE_FRAMES``), or None.
        """
        outputs: list = [None] * n_cases
        self.not_imported = {}
        received = frames = 0
        progress = time.monotonic()
        spent = self.cpu_seconds() if case_cpu is not None else None
        importing = True  # until the child says the module's import is over
        while True:
            pending = next((i for i, o in enumerate(outputs) if o is None), None)
            limit = case_timeouts[pending] if case_timeouts and pending is not None else None
            until = deadline if limit is None else min(deadline, progress + limit)
            # An infinite loop shows as CPU time: looked at every CPU_POLL seconds of waiting, it
            # is stopped within a fraction of a second of its case's CPU limit, while a case merely
            # slowed by a busy machine (wall time, not CPU) is given the exercise's whole limit.
            # (The wait is for the first byte only: a frame once begun is read whole.)
            if spent is not None and not _readable(self.sock, min(until, time.monotonic() + CPU_POLL)):
                if self.cpu_seconds() - spent > (IMPORT_CPU if importing else case_cpu):
                    return outputs, "import_cpu" if importing else "cpu"
                if time.monotonic() < until:
                    continue
            try:
                frame = protocol.recv_frame(self.sock, until, limit=MAX_EXERCISE_BYTES - received)
            except TimeoutError:
                return outputs, "timeout"
            except protocol.Closed:
                return outputs, "closed"
            except protocol.Oversize:
                return outputs, "oversize"
            except protocol.Garbage:
                return outputs, "garbage"
            received, frames = received + len(frame), frames + 1
            if frames > MAX_EXERCISE_FRAMES:
                return outputs, "oversize"
            try:
                msg = protocol.decode(frame)
            except protocol.Garbage as err:
                # Which case it was is unknowable; the first without an output takes the blame.
                slot = next((i for i, o in enumerate(outputs) if o is None), None)
                if slot is not None:
                    outputs[slot] = CaseError("garbage", str(err))
                continue
            if type(msg) is not dict:
                return outputs, "garbage"
            if "call" in msg:
                try:
                    msg = protocol.decode(frame, torch_tensors=True)  # the reference takes tensors
                except protocol.Garbage:
                    return outputs, "garbage"
                reply = answer(msg.get("call"), msg.get("args"), msg.get("kwargs"))
                try:
                    protocol.send_frame(self.sock, reply)
                except OSError:
                    return outputs, "closed"
            elif msg.get("imported") is True and importing:  # the cases' clocks start now
                importing, progress = False, time.monotonic()
                if spent is not None:
                    spent = self.cpu_seconds()
            elif msg.get("done") is True:
                self.reusable = msg.get("reusable") is True
                self.not_imported = not_imported(msg.get("not_imported"))
                return in_the_notes_words(outputs, self.not_imported), None
            elif type(msg.get("case")) is int and 0 <= msg["case"] < n_cases and outputs[msg["case"]] is None:
                importing, progress = False, time.monotonic()  # a case's result ends the import, said or not
                if spent is not None:
                    spent = self.cpu_seconds()
                if "ok" in msg:
                    outputs[msg["case"]] = msg["ok"]
                else:
                    outputs[msg["case"]] = _case_error(msg.get("error"))
            else:
                return outputs, "garbage"


    def cpu_seconds(self) -> float:
        """CPU time the child has used (user and system, all its threads), read by the kernel's
        count, which its own code cannot change; 0.0 when unreadable (the wall limits still hold)."""
        try:
            # Opened once and read again at each look (a grader looks hundreds of times a
            # submission); once the process is gone, the open file refuses to be read, so a
            # pid reused since is never read in its place.
            if self._stat is None:
                self._stat = os.open(f"/proc/{self.pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            fields = os.pread(self._stat, 4096, 0).rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _TICKS
        except (OSError, IndexError, ValueError):
            return 0.0

    def forget(self) -> None:
        """Close what the grader held open of the child (once it is reaped)."""
        if self._stat is not None:
            os.close(self._stat)
            self._stat = None


def _readable(sock: socket.socket, until: float) -> bool:
    return bool(select.select([sock], [], [], max(0.0, until - time.monotonic()))[0])


def not_imported(record, sources: dict | None = None) -> dict[str, str]:
    """The child's record of modules that raised while they were imported (``package.import_failure``),
    checked part by part (the child is the learner's) and put in words, for the learner:
    ``"ValueError at line 3: boom (`raise ValueError('boom')`)"``. What is not of that form is
    left out, and so is a module not in ``sources`` (the submission's, when known): the child
    cannot report a failure of a file the learner did not hand in. These words are the
    learner's text (the notes say only what the grader found itself: :func:`stand_in_notes`)."""
    out = {}
    if type(record) is not dict:
        return out
    modules = set(MODULE_OF.values())
    for name, why in list(record.items())[:64]:
        if name not in modules or type(why) is not dict or type(why.get("type")) is not str:
            continue
        if sources is not None and name not in sources:
            continue
        line, code, text = why.get("line"), why.get("code"), why.get("text")
        words = inert(why["type"][:100]) or "an exception"
        if type(line) is int and 0 < line < 10**9:
            words += f" at line {line}"
        if type(text) is str and text.strip():
            words += f": {inert(text[:300]).strip()}"
        if type(code) is str and code.strip():
            words += f" (`{inert(code[:120]).strip()}`)"
        out[name] = words
    return out


def not_imported_in(failed: dict[str, str], sources: dict) -> dict[str, str]:
    """The record (:func:`not_imported`) of the modules handed in, a module Python's parser
    refuses said in the parser's words, read by the grader (``facts.py``), not the child's."""
    out = {}
    for name, words in failed.items():
        if name in sources:
            found = facts.of(sources[name])
            out[name] = found.words if found.error else words
    return out


def in_the_notes_words(outputs: list, failed: dict[str, str]) -> list:
    """The cases of an exercise whose own module did not import, saying why in the words of the
    record (:func:`not_imported`): one failure, one sentence, in every report that shows it."""
    for i, output in enumerate(outputs):
        if isinstance(output, CaseError) and output.kind == "import":
            module = output.message.partition(".py: ")[0]
            if module in failed:
                outputs[i] = CaseError("import", f"{module}.py: {failed[module]}")
    return outputs


def stand_in_notes(failed: dict[str, str], own: str, sources: dict | None = None) -> list[str]:
    """An exercise's notes on the other modules that did not import in its run (its own module's
    failure is every case's error): they ran as stand-ins (``package.Submission``). In the
    grader's words only, whatever the child's record says: what the grader's own parse of the
    file found (``facts.py``: "SyntaxError at line 35"), else that it raised while imported
    (the exception's words are the learner's, shown with that module's own exercises)."""
    notes = []
    for name in sorted(failed):
        if name == own or name not in set(MODULE_OF.values()):
            continue
        found = facts.of(sources[name]).error if sources is not None and name in sources else ""
        why = found or f"it raised an exception while it was imported: {name}.py's own exercises say which"
        notes.append(f"your file {name}.py does not import ({why}); this exercise was graded with "
                     f"stand-ins for {name}.py's functions")
    return notes


# What the child may say about a case: only what an exception of the learner's code says about
# itself. Its kind picks none of the grader's words (a timeout, a crash, the memory, a missing
# function are the grader's to find: ``settle``), and its text stays the learner's.
CHILD_KINDS = ("exception", "not_implemented", "import", "garbage")
CHILD_TEXT = 2000  # characters of a child's error text kept (a writer shows far fewer at once)


def _case_error(error) -> CaseError:
    """A case's error as the child sent it: an error of the learner's code in the learner's
    words. A kind the child may not claim is an exception whose text is what it sent."""
    if type(error) is not list or len(error) != 2 or type(error[0]) is not str or type(error[1]) is not str:
        return CaseError("garbage", "the learner's process sent a malformed error")
    kind, text = error[0], error[1][:CHILD_TEXT]
    if kind in CHILD_KINDS:
        return CaseError(kind, text)
    return CaseError("exception", text or "an exception (no message)")


def job(exercise: str, module: str, sources: dict[str, str], cases: list | bytes, memory_mb: int, seconds: float,
        proxies: dict[str, str] | None = None, workdir: str = "") -> dict:
    """What :meth:`Child.start` sends, for the grader and the self-check alike: the exercise's
    ``cases`` (``(driver, inputs)`` each, or their :func:`cases_frame`) on the learner's
    ``sources``, under ``memory_mb`` and a CPU limit a second past the exercise's ``seconds``
    (the wall limit ends it first). ``first`` (0 here): the case the child starts from."""
    return {"exercise": exercise, "module": module, "sources": sources, "proxies": dict(proxies or {}),
            "cases": cases if isinstance(cases, bytes) else [[driver, inputs] for driver, inputs in cases],
            "first": 0, "memory_mb": memory_mb, "cpu_seconds": seconds + 1, "workdir": workdir}


def cases_frame(cases: list) -> bytes:
    """An exercise's cases as the frame that follows its job: the same for every submission of a
    batch, so the grader encodes it once (the lab model's weights make chapter 6's 2.8 MB)."""
    return protocol.encode({"cases": [[driver, inputs] for driver, inputs in cases]},
                           max_string=protocol.JOB_LIMITS["max_string"])


def run_cases(child: Child, begin: Callable[[int], Child], release: Callable[[Child, str | None], int | None],
              n_cases: int, deadline: float, answer, case_timeouts: list, case_budget: float | None, sources: dict, *,
              module: str, exercise: str, seconds: float, run_deadline: float | None = None,
              optional: frozenset = frozenset()) -> tuple[list, dict]:
    """One exercise's cases, from ``child`` (which has its job) on, the grader's and the
    self-check's way alike: ``(outputs, record of failed imports)``.

    A case that runs out of its CPU limit (``case_budget`` times :data:`CPU_MARGIN`) is slow:
    CPU time is the child's own, and the margin is what a busy machine's caches and clock take
    from it. A case that runs out of its own *wall* limit is run once more in a fresh child
    (``begin(i)``: a child given the cases from i on) before it is called slow, as a busy moment
    of the machine is not the learner's. The cases after a slow one run in a fresh child, each
    with its own limit and its own outcome, never the slow one's; but when the very next case is
    slow too, the code is slow everywhere, and the rest are not run (:func:`not_run`: no feedback
    may use them as evidence). So code that loops costs two limits, not one per case, and code
    slow on one input alone is graded on every other. ``release(child, ended)`` takes each child
    back (reaped or kept) and returns its wait status. The errors are then held to what the
    grader read in the sources itself (:func:`held_to_facts`).

    ``optional``: the indexes of cases run only to word another's failure (the grader's
    interventions, which score nothing): one that runs out of its limit is not run again, and
    those right after a slow case are not run."""
    cpu_limit = case_budget * CPU_MARGIN if case_budget else None
    outputs: list = [None] * n_cases
    first, rerun, slow, failed = 0, None, None, {}  # slow: the last slow case
    words = dict(module=module, seconds=seconds, deadline=deadline, case_cpu=cpu_limit, run_deadline=run_deadline)
    while True:
        part, ended, status = [None] * (n_cases - first), "closed", None
        try:
            part, ended = child.collect(n_cases - first, deadline, answer, case_timeouts[first:], cpu_limit)
        finally:
            status = release(child, ended)
        failed.update(child.not_imported)
        pending = next((i for i, o in enumerate(part) if o is None), None)
        own = ended == "cpu" or ended == "timeout" and pending is not None and case_timeouts[first + pending] is not None
        if pending is None or not own or time.monotonic() >= deadline:
            outputs[first:] = settle(part, ended, status, case_timeouts=case_timeouts[first:], memory=child.memory,
                                     **words)
            break
        case = first + pending
        outputs[first:case] = part[:pending]
        if ended == "timeout" and rerun is None and case not in optional:  # a busy moment's: once more
            rerun = first = case
        else:
            outputs[case] = settle([None], ended, status, case_timeouts=[case_timeouts[case]], **words)[0]
            if slow is not None and all(i in optional for i in range(slow + 1, case)):  # no graded case between
                outputs[case + 1:] = [not_run("two cases in a row ran out of their limits")] * (n_cases - case - 1)
                break
            slow, first = case, case + 1
            while first < n_cases and first in optional:  # an intervention on a slow case: never run
                outputs[first] = not_run("the case it changes one feature of ran out of its limit")
                first += 1
        if first >= n_cases:
            break
        child = begin(first)
    record = not_imported_in(failed, sources)
    outputs = in_the_notes_words(outputs, record)
    return held_to_facts(outputs, sources, module, exercise, record), record


def not_run(why: str) -> CaseError:
    """A case the grader did not run, and why (its kind, ``not_run``, is evidence of nothing)."""
    return CaseError("not_run", f"the grader stopped this exercise before this case: {why}")


def settle(outputs: list, ended: str | None, status: int | None, *, module: str, seconds: float, deadline: float,
           case_cpu: float | None = None, case_timeouts: list | None = None,
           run_deadline: float | None = None, sources: dict | None = None, exercise: str | None = None,
           memory: "Memory | None" = None) -> list:
    """Every case's output or CaseError once :meth:`Child.collect` returned ``outputs`` and
    ``ended``: the cases without a result get the error of how the exchange ended, in the same
    words for the grader and the self-check. ``status``: the child's wait status once reaped;
    ``seconds``: the exercise's time limit, ``deadline`` when it ran out; ``case_timeouts``
    as given to ``collect``; ``run_deadline``: when the grader's budget for the whole run did;
    ``memory``: what the kernel counted of the child's memory (:class:`Memory`), if known.
    With ``sources`` and ``exercise``, the child's words are then held to what the grader
    read in the sources itself (:func:`held_to_facts`)."""
    outputs = list(outputs)
    if any(o is None for o in outputs):
        missing = _ending(ended, status, outputs, module=module, seconds=seconds, deadline=deadline,
                          case_cpu=case_cpu, case_timeouts=case_timeouts, run_deadline=run_deadline, memory=memory)
        # The first case without a result is the one the child was running; the rest never ran.
        pending = outputs.index(None)
        unrun = not_run("its run ended at an earlier case")
        outputs = [o if o is not None else missing if i == pending else unrun for i, o in enumerate(outputs)]
    if sources is not None and exercise is not None:
        outputs = held_to_facts(outputs, sources, module, exercise)
    return outputs


def _ending(ended, status, outputs, *, module, seconds, deadline, case_cpu, case_timeouts, run_deadline,
            memory) -> CaseError:
    if ended == "timeout":
        pending = next(i for i, o in enumerate(outputs) if o is None)
        own = case_timeouts[pending] if case_timeouts else None
        if own is not None and time.monotonic() < deadline:  # the case's own limit
            return CaseError("timeout", f"no result within this case's {own:g} s (an infinite loop, or far too slow)")
        if run_deadline is None or deadline < run_deadline:  # the exercise's, spent by every case so far
            return CaseError("timeout", f"the exercise's {seconds:g} s ran out during this case (an infinite loop, "
                                        "or far too slow)", own=False)
        return CaseError("timeout", "the run's time budget ran out during this exercise", own=False)
    if ended in ("cpu", "import_cpu"):
        return over_cpu(ended, case_cpu, module)
    if ended == "garbage":
        return CaseError("garbage", "the process running your code sent a malformed message")
    if ended == "oversize":  # the exercise's cap, spent by every case so far
        return CaseError("garbage", f"the process running your code sent more than {MAX_EXERCISE_BYTES // 2**20} "
                                    f"MB, or more than {MAX_EXERCISE_FRAMES} messages, for this exercise; "
                                    "the grader read no more of it", own=False)
    if ended == "closed":
        return describe_exit(status, memory)
    return CaseError("garbage", "no result for this case")  # "done" with cases left out


def held_to_facts(outputs: list, sources: dict, module: str, exercise: str, failed: dict | None = None) -> list:
    """The child's account of each case, held to what the grader read in the sources itself
    (``facts.py``): a module not handed in, or one that Python's parser refuses, or one that
    never binds the exercise's name, fails every case in the grader's words whatever the child
    said; "the stub still raises NotImplementedError" only where the module has such a raise
    (else the child's claim is an exception of its own, in its own words). "Your file does not
    import" is the child's to say only as an import does fail: for every case, with the module in
    the child's record of failed imports (``failed``); a case alone saying so is an exception."""
    n = len(outputs)
    if module not in sources:
        return [CaseError("missing", f"{module}.py is not in the submission")] * n
    found = facts.of(sources[module])
    if found.error:
        return [CaseError("import", f"{module}.py: {found.words}")] * n
    imports = failed is not None and module in failed and all(
        isinstance(o, CaseError) and o.kind == "import" for o in outputs)
    if not found.may_define(exercise) and not imports:  # a module that raises first is said so first
        return [CaseError("missing", f"{module}.py defines no `{exercise}`")] * n
    held = []
    for output in outputs:
        if isinstance(output, CaseError) and output.kind == "import" and not imports:
            output = CaseError("exception", output.message)
        if isinstance(output, CaseError) and output.kind == "not_implemented" and not found.not_implemented:
            output = CaseError("exception", "NotImplementedError" + (f": {output.message}" if output.message else ""))
        elif isinstance(output, CaseError) and output.kind == "not_implemented":
            output = CaseError("not_implemented", "")  # the grader's words alone: none of the child's
        if isinstance(output, CaseError) and output.kind == "exception":
            output = CaseError(output.kind, output.message, output.own, source=source_line(output.message, sources))
        held.append(output)
    return held


_AT = re.compile(r" \((\w+)\.py, line (\d{1,9})")


def source_line(message: str, sources: dict) -> str:
    """The line of the submitted source at the file and line an error's message names, as the
    grader reads it (stripped, at most 120 characters), or "": a sentence about the learner's
    line quotes this, never the child's account of it (which may say anything)."""
    found = _AT.search(message or "")
    if not found or found[1] not in sources:
        return ""
    lines = sources[found[1]].splitlines()
    number = int(found[2])
    return lines[number - 1].strip()[:120] if 0 < number <= len(lines) else ""


def over_cpu(ended: str, case_cpu: float, module: str) -> CaseError:
    """The error of the cases left when the exchange ended on CPU time (``"cpu"``, ``"import_cpu"``)."""
    if ended == "import_cpu":
        return CaseError("timeout", f"importing {module}.py used more than {IMPORT_CPU:g} s of CPU time "
                                    "(a loop at the top of the module, or far too slow)")
    return CaseError("timeout", f"this case used more than {case_cpu:g} s of CPU time "
                                "(an infinite loop, or far too slow)")


@dataclass
class Memory:
    """What the kernel counted of a child's memory, read by the zygote once the child is reaped:
    ``oom_kills`` (tasks of its memory cgroup the OOM killer ended, any OOM killer: the
    cgroup's, or one above it such as a container's; None without a cgroup of its own), the
    cgroup's ``limit_mb`` and ``peak_mb``, and ``rss_mb`` (its peak resident memory, wait4's)."""

    oom_kills: int | None = None
    limit_mb: int | None = None
    peak_mb: int | None = None
    rss_mb: int | None = None


def describe_exit(status: int | None, memory: Memory | None = None) -> CaseError:
    """How a child that sent no result for a case ended, as that case's error, from what the
    grader and the kernel measured: its wait status, and its memory cgroup's OOM kills (a
    SIGKILL is "memory" only when the kernel says its OOM killer sent it; the learner's code
    may send itself one too)."""
    if status is None:
        return CaseError("crash", "it stopped before returning a result")
    memory = memory or Memory()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return CaseError("timeout", "your code used more CPU time than allowed")
        if sig == signal.SIGKILL and memory.oom_kills:
            limit = f" (its limit: {memory.limit_mb} MB" if memory.limit_mb else " ("
            return CaseError("memory", "the kernel's OOM killer stopped the process for using too much memory"
                                       f"{limit}{', ' if memory.limit_mb else ''}every page counted, files in memory "
                                       "included)")
        if sig == signal.SIGKILL and memory.oom_kills is None and memory.rss_mb and memory.limit_mb and (
                memory.rss_mb * 2 >= memory.limit_mb):
            return CaseError("memory", f"the process was killed (SIGKILL) with {memory.rss_mb} MB resident, "
                                       "most likely for using too much memory")
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return CaseError("crash", f"killed by signal {name}")
    code = os.WEXITSTATUS(status)
    return CaseError("crash", f"it exited (status {code}) before returning a result: os._exit, "
                              "or an exit the grader could not catch")
