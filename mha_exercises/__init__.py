"""Your exercises for the multi-head attention course.

Each module holds the stubs of one chapter (see ``CONTRACT.md`` and the book); this table is
checked against the grader's list of exercises (``autograder/spec.py``):

=================  ============================================================================  ===
module             exercises                                                                     ch.
=================  ============================================================================  ===
attention.py       ``softmax``, ``scaled_dot_product_attention``                                 1
masking.py         ``padding_mask``, ``causal_mask``, ``masked_softmax``                         2
heads.py           ``split_heads``, ``merge_heads``                                              3
layer.py           ``multi_head_attention``, ``parameter_count``, ``MultiHeadAttention``         4
analysis.py        ``attention_entropy``                                                         5
pruning.py         ``head_importance``, ``prune_heads``                                          6
efficient.py       ``chunked_attention``, ``repeat_kv``, ``GroupedQueryAttention``, ``KVCache``  7
language_model.py  ``sinusoidal_positions``, ``apply_rope``, ``generate``, ``induction_score``   8
=================  ============================================================================  ===

Two modules here are the course's, not yours: ``backend.py`` (your code or the solutions
in a notebook) and ``check.py`` (``check("exercise_id")``). The chapters' figures, tasks,
lab model and measurements are in the ``lab`` package.

Replace each ``raise NotImplementedError`` with your code, then check it with
``make grade`` (all exercises) or ``check("exercise_id")`` in a chapter notebook.
"""
