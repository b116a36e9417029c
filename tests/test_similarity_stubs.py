"""Stub code links nobody in ``--similarity``: learners who left the same stubs are not a cluster."""
import shutil
from pathlib import Path

import pytest

from autograder import stubs
from autograder.classroom import intake, similarity

ROOT = Path(__file__).resolve().parent.parent
MINE = ("import numpy as np\n\ndef softmax(x, axis=-1):\n"
        "    shifted = x - np.max(x, axis=axis, keepdims=True)\n    exps = np.exp(shifted)\n"
        "    return exps / np.sum(exps, axis=axis, keepdims=True)\n")
THEIRS = ("import numpy as np\ndef softmax(x, axis=-1):\n    x = np.moveaxis(x, axis, -1)\n"
          "    out = np.empty_like(x)\n    for i in np.ndindex(x.shape[:-1]):\n"
          "        row = np.exp(x[i] - x[i].max())\n        out[i] = row / row.sum()\n"
          "    return np.moveaxis(out, -1, axis)\n")
LEFT_AS_STUBS = ("layer", "efficient")  # MultiHeadAttention, GroupedQueryAttention, KVCache: long stubs


def _learner(root: Path, name: str, attention: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "attention.py").write_text(attention)
    for module in LEFT_AS_STUBS:
        shutil.copy(ROOT / "mha_exercises" / f"{module}.py", folder / f"{module}.py")


def test_learners_who_share_only_the_stubs_are_not_a_cluster(tmp_path):
    root = tmp_path / "class"
    _learner(root, "ada", MINE)
    _learner(root, "bob", THEIRS)
    ready = intake.prepare(root, tmp_path / "out", 1, None, True, warn=lambda m: None)
    # The stubs are long enough to be fingerprinted: left in, they would link the pair at 1.00.
    for exercise in ("MultiHeadAttention", "GroupedQueryAttention", "KVCache"):
        assert len(similarity.normalised_tokens(stubs.source(similarity.MODULE_OF[exercise]), exercise)) \
            >= similarity.MIN_TOKENS
    assert ready.similar.clusters == []
    # Their real work is fingerprinted, and their stubs are not.
    code = {learner: set(c) for learner, c in _codes(ready).items()}
    assert code == {"ada": {"softmax"}, "bob": {"softmax"}}


def _codes(ready) -> dict:
    finder = similarity.Similarity(Path("/nonexistent"), warn=lambda m: None)
    return {learner: finder.code(sub.sha256, sub.sources) for learner, sub in ready.loaded.items()}


def test_a_grader_without_the_stubs_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(stubs, "FOLDER", tmp_path / "nowhere")
    stubs.source.cache_clear()
    try:
        finder = similarity.Similarity(tmp_path / "cache", warn=lambda m: None)
        with pytest.raises(stubs.StubsMissing, match="stub"):
            finder.code("0" * 64, {"attention": MINE})
    finally:
        stubs.source.cache_clear()
