"""The lab's trained weights and results: data, not code.

``digits.pt`` (seed 0) and ``digits_seed<N>.pt`` are written by ``scripts/train_digits.py --seed N``,
``provenance.json`` records what produced each, and ``pruning_curves.json`` is written by
``bench/pruning.py --write``. Chapter 8's: ``sentences.pt`` and its loss curve
``sentences_curve.json`` by ``scripts/train_sentences.py``; ``induction_seed<N>.pt`` and
``induction_results.json`` by ``scripts/train_induction.py --seed N``."""
