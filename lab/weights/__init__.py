"""The lab's trained weights (``digits.pt``, written by ``scripts/train_digits.py``): data, not code."""
