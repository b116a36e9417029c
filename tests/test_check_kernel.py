"""In a live Jupyter kernel, cells and check() see the same code after the learner edits a module.

A real kernel (jupyter_client) runs a temporary copy of the stubs, as a learner's notebook
would: ``attention = load("attention")``, a function bound from it, then the learner fixes
``softmax`` in the file. check() grades the file as it is now and says the kernel still runs
the old softmax; re-running the load cell updates the module *and* the function bound
before; then check() has nothing more to say.
"""
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXED = '''

def softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)
'''


@pytest.fixture
def kernel(tmp_path):
    from jupyter_client.manager import start_new_kernel

    shutil.copytree(ROOT / "mha_exercises", tmp_path / "mha_exercises",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_BACKEND", "PYTHONPATH")}
    env.update(PYTHONPATH=str(tmp_path), OMP_NUM_THREADS="1")
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(tmp_path), startup_timeout=120)
    try:
        yield tmp_path, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc, code: str) -> str:
    out = []

    def hook(msg):
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            out.append("\n".join(msg["content"]["traceback"]))

    kc.execute_interactive(code, output_hook=hook, timeout=300)
    return "".join(out)


def test_cells_and_check_agree_after_an_edit(kernel):
    where, kc = kernel
    first = run(kc, "import numpy as np\n"
                    "from mha_exercises.backend import load\nfrom mha_exercises.check import check\n"
                    "attention = load('attention')\nsoftmax = attention.softmax\n"
                    "print(attention.__file__)\n"
                    "try:\n    attention.softmax(np.zeros(3))\nexcept NotImplementedError:\n    print('stub')\n")
    assert str(where) in first and "stub" in first

    with open(where / "mha_exercises" / "attention.py", "a") as f:  # the learner fixes softmax
        f.write(FIXED)
    graded = run(kc, "check('softmax')")
    assert graded.startswith("✔ softmax: 5/5 points, passed"), graded
    flat = " ".join(graded.split())
    assert "still runs an older softmax" in flat and "attention = load(\"attention\")" in flat

    cells = run(kc, "attention = load('attention')\n"
                    "print(attention.softmax(np.array([0.0, 0.0])), softmax(np.array([1e4, 0.0])))")
    assert "[0.5 0.5] [1. 0.]" in cells, cells  # the module, and the function bound before the edit
    again = run(kc, "check('softmax')")
    assert again.startswith("✔ softmax: 5/5 points, passed") and "older" not in again, again
