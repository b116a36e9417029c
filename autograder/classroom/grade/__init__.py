"""Stage 2 of a class: grading its submissions, each in the confined pipeline."""
