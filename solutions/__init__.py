"""Reference solutions: the same API as ``mha_exercises``, implemented.

Instructors only: a learner release (``make release``) does not contain this package.
"""
