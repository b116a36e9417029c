"""placeholder"""
EXERCISES = ()
