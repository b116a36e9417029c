"""Stage 3 of a class: the gradebook's rules (lateness, extensions, adjustments): a row per learner."""
