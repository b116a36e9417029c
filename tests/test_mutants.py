"""Mutants of ``solutions/`` nobody wrote by hand (``tests/mutation.py``): a fixed sample graded,
every sentence of every message checked against the mutant, the named fraction printed. The
full run is ``bench/mutants.py``."""
from __future__ import annotations

import mutation

from autograder.grading.exercises import EXERCISES

PER_EXERCISE = 10


def test_every_sentence_said_of_a_mutant_is_true_of_it(capsys):
    chosen = mutation.sample(list(EXERCISES), PER_EXERCISE)
    assert len(chosen) >= 150, len(chosen)  # hundreds in the full run; a fixed share of them here
    table = mutation.run(chosen)
    false = [f"{e}: {s}" for e, row in table.items() for s in row["false"]]
    killed = sum(row["killed"] for row in table.values())
    named = sum(row["named"] for row in table.values())
    with capsys.disabled():
        print(f"\nmutants: {len(chosen)} graded, {killed} lose points, {named} named "
              f"({100 * named / killed:.0f}%); " + ", ".join(
                  f"{e} {row['named']}/{row['killed']}" for e, row in table.items()))
    assert not false, "\n".join(false)
    # Chapter 8's exercises are among them, and what no sentence names is not most of it.
    assert {"sinusoidal_positions", "apply_rope", "generate", "induction_score"} <= set(table)
    assert named >= 0.35 * killed, (named, killed)


def test_a_mutant_is_one_edit_of_one_exercise_and_the_sample_is_fixed():
    first, again = mutation.sample(["apply_rope"], 5), mutation.sample(["apply_rope"], 5)
    assert [m.what for m in first] == [m.what for m in again]
    assert len({m.what for m in mutation.mutants("apply_rope")}) >= 20
