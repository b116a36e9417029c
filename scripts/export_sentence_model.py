"""Export chapter 8's sentence model (lab/weights/sentences.pt) for the page that runs it:
book/_static/sentence_model.json, read by book/_static/sentence_model.js.

The file holds the model's configuration and alphabet, the sha256 of the weights it was made
from, and every tensor as float32 (little-endian, base64 in one string: the exact numbers of the
.pt file, no rounding), with each tensor's offset and shape. tests/test_views.py checks that the
committed file is what this script writes from the committed weights.

    .venv/bin/python scripts/export_sentence_model.py          # writes the file
    .venv/bin/python scripts/export_sentence_model.py --check  # exit 1 when the file is stale
"""
import argparse
import base64
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lab import removal, sentences  # noqa: E402

WEIGHTS = ROOT / "lab" / "weights" / "sentences.pt"
PROVENANCE = WEIGHTS.with_name("provenance.json")
OUT = ROOT / "book" / "_static" / "sentence_model.json"
FORMAT = "mha-course sentence model, float32 little-endian, version 1"


def export(weights=WEIGHTS) -> str:
    """The JSON text of the exported model."""
    record = json.loads(PROVENANCE.read_text())[weights.name]
    state = torch.load(weights, weights_only=True)
    tensors, chunks, offset = {}, [], 0
    for name, tensor in state.items():
        array = tensor.detach().to(torch.float32).contiguous().numpy().astype("<f4")
        tensors[name] = {"offset": offset, "shape": list(array.shape)}
        chunks.append(array.tobytes())
        offset += array.size
    body = {
        "format": FORMAT,
        "source": {"file": f"lab/weights/{weights.name}", "sha256": removal.sha256(weights)},
        "config": record["config"],
        "context": record["recipe"]["context"],
        "alphabet": sentences.ALPHABET,
        "parameters": int(offset),
        "tensors": tensors,
        "data": base64.b64encode(b"".join(chunks)).decode("ascii"),
    }
    if record["config"]["vocab_size"] != len(sentences.ALPHABET):
        raise ValueError(f"the weights' vocabulary ({record['config']['vocab_size']}) is not the alphabet's "
                         f"({len(sentences.ALPHABET)})")
    return json.dumps(body, separators=(",", ":")) + "\n"


def read(path=OUT) -> dict[str, np.ndarray]:
    """The tensors of an exported file, by name (what the page decodes)."""
    body = json.loads(Path(path).read_text())
    data = np.frombuffer(base64.b64decode(body["data"]), dtype="<f4")
    return {name: data[t["offset"]:t["offset"] + int(np.prod(t["shape"]))].reshape(t["shape"])
            for name, t in body["tensors"].items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file; write nothing")
    args = parser.parse_args(argv)
    text = export()
    if args.check:
        same = OUT.exists() and OUT.read_text() == text
        print(f"{OUT.relative_to(ROOT)} is {'current' if same else 'stale: run scripts/export_sentence_model.py'}")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes, {json.loads(text)['parameters']:,} parameters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
