"""Root pytest configuration: every test and every chapter notebook runs against the
reference solutions (see mha_exercises/backend.py), single-threaded and seeded."""
import os

os.environ["MHA_BACKEND"] = "solutions"
# Threads fixed so that torch results are bitwise stable across runs on the same machine.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
