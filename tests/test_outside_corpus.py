"""The outside corpus (``tests/outside/``): public implementations by others, adapted to the course's
API. Here, cheaply: every header is well-formed, every file can be appended to its module without
clobbering another exercise, every adapter runs on a tiny input, and a few files are graded through
the confined grader with the verdict their header states. The whole corpus, with causes named and
false sentences counted, is ``bench/outside.py``'s.
"""
from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import outside  # noqa: E402  bench/outside.py

from autograder.spec import COURSE, MODULE_OF  # noqa: E402

FILES = sorted(p for p in outside.CORPUS.glob("*/*.py") if not p.name.startswith("_"))


def _id(path: Path) -> str:
    return path.relative_to(outside.CORPUS).as_posix()


def test_the_corpus_is_large_enough_and_varied():
    metas = [outside.header(p) for p in FILES]
    assert len(metas) >= 60
    assert {"full", "loses"} <= {m["verdict"] for m in metas}
    assert len({m["exercise"] for m in metas}) >= 15


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_header_is_well_formed_and_the_file_fits_its_module(path):
    meta = outside.header(path)  # raises on a malformed header
    assert meta["source"].strip() and meta["licence"].strip() and meta["cause"].strip()
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert "Source:" in doc and "Licence:" in doc, "the docstring names the source and the licence"
    tree = ast.parse(path.read_text())
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert meta["exercise"] in defined, "the adapter is named by the exercise id"
    same_module = {e.id for e in COURSE if e.module == MODULE_OF[meta["exercise"]]} - {meta["exercise"]}
    assert not defined & same_module, f"appended to {MODULE_OF[meta['exercise']]}.py it would replace {defined & same_module}"
    assert not any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body), \
        "a __future__ import cannot be appended to a module"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"outside_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # our own test corpus (public code, read by a person)
    return module


def _tiny_model():
    from lab.digits import DigitsTransformer
    from solutions.layer import MultiHeadAttention

    torch.manual_seed(0)
    return DigitsTransformer(MultiHeadAttention, num_layers=2, num_heads=2, d_model=8, d_ff=16).eval()


def _tiny_lm():
    from lab.language_model import CausalLM
    from solutions import efficient, language_model
    from solutions.layer import MultiHeadAttention

    torch.manual_seed(0)
    return CausalLM(11, 8, 2, 1, 16, attention_class=MultiHeadAttention, positions=language_model.sinusoidal_positions,
                    gqa_class=lambda: efficient.GroupedQueryAttention, cache_class=lambda: efficient.KVCache).eval()


def _tiny_call(exercise: str, fn, allow_name_error: bool = False):
    """Call ``fn`` (the adapter) once on a tiny input of ``exercise``'s contract; an exception of
    the implementation's own is fine here (many lose points that way), an import failure is not."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4))
    t = torch.from_numpy(rng.standard_normal((1, 2, 3, 4)))
    calls = {
        "softmax": lambda: fn(x),
        "scaled_dot_product_attention": lambda: fn(x, x, x),
        "padding_mask": lambda: fn(np.array([1, 2]), 3),
        "causal_mask": lambda: fn(3, 3),
        "masked_softmax": lambda: fn(x, np.ones((3, 4), dtype=bool)),
        "split_heads": lambda: fn(x, 2),
        "merge_heads": lambda: fn(rng.standard_normal((2, 2, 3, 2))),
        "multi_head_attention": lambda: fn(x, x, x, {k: rng.standard_normal((4, 4)) for k in ("W_q", "W_k", "W_v", "W_o")}, 2),
        "parameter_count": lambda: fn(8, 2, 4),
        "attention_entropy": lambda: fn(np.full((2, 3), 1 / 3)),
        "head_importance": lambda: fn(_tiny_model(), [(torch.randn(2, 9, 16), torch.tensor([1, 2]))],
                                      torch.nn.functional.cross_entropy),
        "prune_heads": lambda: fn(__import__("solutions.layer", fromlist=["x"]).MultiHeadAttention(8, 4), [1]),
        "chunked_attention": lambda: fn(t, t, t, 2),
        "repeat_kv": lambda: fn(t, 2),
        "sinusoidal_positions": lambda: fn(3, 4),
        "apply_rope": lambda: fn(t),
        "generate": lambda: fn(_tiny_lm(), torch.tensor([[1, 2]]), 2),
        "induction_score": lambda: fn(torch.full((4, 4), 0.25), 2),
        "MultiHeadAttention": lambda: fn(8, 2)(torch.randn(1, 3, 8), torch.randn(1, 3, 8), torch.randn(1, 3, 8)),
        "GroupedQueryAttention": lambda: fn(8, 4, 2)(torch.randn(1, 3, 8)),
        "KVCache": lambda: fn().update(t, t),
    }
    try:
        calls[exercise]()
    except (ImportError, SyntaxError):
        raise
    except NameError:
        if not allow_name_error:  # only an implementation whose recorded cause is a NameError may raise one
            raise
    except Exception:  # noqa: BLE001  the implementation's own failure on the contract: graded, not a broken file
        pass


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_adapter_imports_and_runs(path):
    meta = outside.header(path)
    _tiny_call(meta["exercise"], getattr(_load(path), meta["exercise"]), "NameError" in meta["cause"])


# One exercise, so one start of the grader grading that exercise only: a full mark and two that lose points.
REPRESENTATIVE = ["softmax/scipy_special.py", "softmax/stackoverflow_axis0.py", "softmax/nndl_image_to_vector.py"]


def test_representative_files_get_their_verdict_through_the_confined_grader():
    chosen = [(outside.CORPUS / name, outside.header(outside.CORPUS / name)) for name in REPRESENTATIVE]
    graded = outside.grade(chosen)
    assert [g.error for g in graded] == [""] * len(graded)
    for g in graded:
        assert g.verdict_right, f"{_id(g.path)}: expected {g.meta['verdict']}, got {g.score}/{g.max_score}"
        if g.meta["verdict"] == "full":
            assert not g.false_sentences(), g.false_sentences()
        else:
            assert g.words.strip(), "a file that loses points is told something"
