"""The learner's side: a zygote process that forks confined children to run exercises.

``python -m autograder.isolation.worker CONTROL_FD [DRIVERS [GRADER_PID]]`` starts the zygote
in a fresh interpreter (``zygote.py``). The grader sends it a socket (SCM_RIGHTS); the zygote
forks a child that owns that socket, and the grader talks to the child directly, one
exercise at a time (the next job is sent only once the child has answered "done" for the
last one):

    grader -> child   the job: module sources, proxied names, the cases (driver, inputs)
    child  -> grader  {"case": i, "ok": output} or {"case": i, "error": [kind, message]}
    child  -> grader  {"call": name, ...}: a proxied exercise, answered by the reference
    child  -> grader  {"done": true, "reusable": bool}

The child confines itself before running any learner code (``child.py``: limits, silence, a
scratch directory, no grader module on the import path; ``confine.py``: Landlock, seccomp,
the learner user, death with the zygote), then for each job loads the submission as a fresh
synthetic package ``mha_exercises`` (``package.py``) and runs the cases (``cases.py``).
A fork costs ~20 ms of CPU (torch's pages), more than most exercises, so one child serves
a submission's exercises for as long as it stays *pristine* (``pristine.py``: the process
state the learner's code could change, compared with a snapshot taken before any learner
code ran); it says ``"reusable": false`` (then exits) when anything differs. Whatever
happens in it (an exit, a crash, a hang that the grader kills) costs only the exercise it
was running: the grader forks a fresh child for the rest. Nothing here imports the
grader's modules beyond the drivers, the protocol and the spec.
"""
from .zygote import main, preload, serve  # noqa: F401

if __name__ == "__main__":
    main()
