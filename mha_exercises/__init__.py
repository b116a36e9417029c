"""Your exercises for the multi-head attention course.

Each module holds the stubs of one chapter (see ``COURSE.md`` and the book):

==============  =======================================================
module          exercises
==============  =======================================================
attention.py    ``softmax``, ``scaled_dot_product_attention``       (ch. 1)
masking.py      ``padding_mask``, ``causal_mask``, ``masked_softmax`` (ch. 2)
heads.py        ``split_heads``, ``merge_heads``                    (ch. 3)
layer.py        ``multi_head_attention``, ``parameter_count``,
                ``MultiHeadAttention``                              (ch. 4)
analysis.py     ``attention_entropy``                               (ch. 5)
pruning.py      ``head_importance``, ``prune_heads``                (ch. 6)
efficient.py    ``chunked_attention``, ``repeat_kv``,
                ``GroupedQueryAttention``, ``KVCache``              (ch. 7)
==============  =======================================================

Support code you use but do not write: ``backend.py`` (your code or the solutions in a
notebook), ``check.py`` (``check("exercise_id")``), ``plots.py`` (the chapters' figures),
``heads_task.py`` (chapter 5's task), ``digits.py`` and ``weights/`` (chapter 6's lab),
``measure.py`` (chapter 7's speed and memory measurements).

Replace each ``raise NotImplementedError`` with your code, then check it with
``make grade`` (all exercises) or ``check("exercise_id")`` in a chapter notebook.
"""
