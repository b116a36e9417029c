"""What makes a failing case fail, in words: a CaseError as the learner reads it
(:func:`error_feedback`), the cause that groups failing cases (:func:`cause`), and the same
as parts a writer can show apart (:func:`cause_parts`)."""
from __future__ import annotations

import re

from ..said import slot
from ..spec import CaseError, CaseResult

# What a CaseError of each kind tells the learner; {} is the pipeline's message (for an
# exception: "ValueError: message (attention.py, line 12)").
ERROR_FEEDBACK = {
    "not_implemented": "not attempted: the stub still raises NotImplementedError",
    "missing": "not attempted: {}",
    "import": "not graded: your file does not import: {}",
    "exception": "raised {}",
    "timeout": "timed out: {}",
    "memory": "ran out of memory: {}",
    "crash": "the process running your code died: {}",
    "garbage": "returned something that is not plain data: {}",
    "harness": "the grader's harness failed before your code's result existed: {}",
    "not_run": "not run: {}",
}


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def error_feedback(error: CaseError) -> str:
    """A CaseError in words; an exception without a message says so instead of showing ':  '."""
    message = re.sub(r"^(\w+):\s*(?=\(|$)", r"\1 (with no message) ", error.message or "").strip()
    if error.kind == "import":  # "masking.py: SyntaxError: ..." -> which file, then why
        found = re.match(r"(\w+\.py): (.*)$", message, re.S)
        if found:  # the file is the grader's (a module of the submission), why is the child's
            return f"not graded: your file {found[1]} does not import: {slot(found[2], 300)}"
    if error.kind == "exception":
        rejected = _rejected_call(message)
        if rejected:
            return rejected
    if message and error.kind in ("exception", "import", "garbage"):  # the learner's process's words
        message = slot(message, 300)
    return ERROR_FEEDBACK.get(error.kind, error.kind + ": {}").format(message or "no details")


def _rejected_call(message: str) -> str | None:
    """A call of the learner's to a used exercise (answered by the reference) whose arguments it
    cannot take, worded from the learner's side: what the call passed and what it lacks."""
    found = re.match(r"RuntimeError: the reference (\w+) raised (.*?)(?: \((\w+\.py), line (\d+)(?:: (.*))?\))?$",
                     message, re.S)
    if not found:
        return None
    name, why, file, line, code = found.groups()
    where = f" at {slot(file, 40)} line {line}" + (f" (`{slot(code, 120)}`)" if code else "") if file else ""
    return f"your call to {slot(name, 60)}{where} passed arguments it cannot take: {slot(why, 300)}"


# The kind of a mismatch, from the sentence that states it (grouping causes, never shown).
_KINDS = (("where it must raise", "raises"), ("of the whole (..., Lq, Lk)", "peak memory"), ("the grader measures the memory", "memory unmeasured"),
          ("must be nn.Linear modules", "module types"),
          ("has shape", "shape"), ("the shape of your layer's", "parameter shape"), ("dtype", "dtype"), (" is float", "dtype"), ("has NaN", "NaN"),
          ("has inf", "inf"), ("exactly 0 at masked", "masked"), ("fully masked row", "empty rows"),
          ("sum to one", "rows"), ("modified in place", "inputs"), ("returned", "form"),
          ("no gradient", "gradient"), ("expected an", "form"), ("could not run after your", "harness"))


def cause(result: CaseResult, error: CaseError | None, reasons: list[str]):
    """(key, text): what makes one failing case fail, the key shared by the cases with the same cause."""
    if result.diagnosis:
        return ("bug", result.diagnosis), sentence(result.diagnosis)
    if error is not None:
        if error.kind == "exception":  # the same exception type at the same line of the learner's code
            where = re.search(r"\((\S+), line (\d+)", error.message or "")
            rejected = re.match(r"RuntimeError: the reference (\w+) raised ", error.message or "")
            if rejected:  # a used exercise's refusal of the arguments: the RuntimeError is the grader's
                return ("rejected", rejected[1], where and where.groups()), result.feedback
            return ("exception", (error.message or "").split(":")[0], where and where.groups()), result.feedback
        if not error.ran:  # said last (``summary.sentences``): it is about the grader, not the code
            return ("not run", error.message), result.feedback
        if error.kind == "timeout":  # a case's own limit, the exercise's, the run's: each its words
            return (error.kind, error.message), result.feedback
        return (error.kind,), result.feedback
    first = reasons[0] if reasons else result.feedback
    kind = next((k for words, k in _KINDS if words in first), "values")
    # A call that must refuse its inputs: "raised nothing" and "raised IndexError" are two causes.
    what = first if first.startswith("raised ") else first.split(" ")[0]
    return ("mismatch", kind, what), first


# A mismatch's kind (``_KINDS``) as an immediately visible output names it: in the grader's
# words only, never a value of the case.
MISMATCH_WORDS = {
    "shape": "the output has the wrong shape", "parameter shape": "a parameter of your layer has the wrong shape",
    "dtype": "the output has the wrong dtype",
    "NaN": "the output holds NaN", "inf": "the output holds inf",
    "masked": "masked positions are not exactly 0", "empty rows": "fully masked rows are not all zeros",
    "rows": "rows do not sum to one", "inputs": "an input was modified in place",
    "form": "the output has the wrong form (type or number of values)",
    "gradient": "no gradient reached an input or parameter", "values": "the values differ from the reference's",
    "raises": "the call did not raise the exception the contract asks for on inputs it must refuse",
    "harness": "the grader's layer could not run on what your code returned",
    "peak memory": "the call held at least half of the whole score matrix at once",
    "memory unmeasured": "the call stopped the grader's measurement of the memory it allocates",
    "module types": "a projection of the layer is not an nn.Linear",
}
# describe()'s tail in the learner's process: "(attention.py, line 12: the line's code)".
# "masking.py: SyntaxError at line 3: invalid syntax (`def f(:`)", the code cut at 120 characters.
_NOT_IMPORTED = re.compile(r"(?P<file>\w+\.py): (?P<type>[\w.]+)(?: at line (?P<line>\d{1,9}))?"
                           r"(?:: (?P<text>.*?))?(?: \(`.*`\))?$", re.S)
_WHERE = re.compile(r" \(([^\s(),]+), line (\d{1,9})(?::.*)?\)$")


def cause_parts(error: CaseError | None, reasons: list[str]) -> dict:
    """What makes a failing case fail, as parts (``CaseResult.cause``): for an error of the
    learner's code its kind, exception type, file, line and message apart; for a wrong output
    the kind of mismatch. A writer can then show the parts it may, and cut the learner's."""
    if error is None:
        first = reasons[0] if reasons else ""
        return {"kind": "mismatch", "what": next((k for words, k in _KINDS if words in first), "values")}
    parts: dict = {"kind": error.kind}
    if error.kind not in ("exception", "import", "garbage"):
        return parts  # the grader's own words (a timeout, a crash, the stub, a missing function)
    text = error.message or ""
    if error.kind == "import":
        said = None if _WHERE.search(text) else _NOT_IMPORTED.match(text)
        if said:  # in the notes' words (exchange.not_imported): file, type, line, message, code
            parts.update(type=said["type"], file=said["file"])
            if said["line"]:
                parts["line"] = int(said["line"])
            parts["text"] = (said["text"] or "").strip()
            return parts
        text = re.sub(r"^\w+\.py: ", "", text)
    if error.kind != "garbage":
        head, colon, rest = text.partition(": ")
        if colon and head and " " not in head:
            parts["type"], text = head, rest
        elif re.match(r"\w+ \(", text):  # "SystemExit (exiting is not a result)"
            parts["type"], text = text.split(" ", 1)
        where = _WHERE.search(text)
        if where:
            parts["file"], parts["line"] = where.group(1), int(where.group(2))
            text = text[:where.start()]
    parts["text"] = text.strip()
    return parts
