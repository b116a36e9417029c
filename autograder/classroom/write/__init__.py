"""Stage 4 of a class: writing what instructors and learners get (grades, feedback, summary, results)."""
