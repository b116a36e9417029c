"""A pytest marker per exercise id: ``pytest -m masked_softmax`` runs every test about it.

A test is about an exercise when the id is a word of its node id (file, function or
parametrisation: ``test_grader_checks.py::test_...[masked_softmax-after_softmax]``) or one of
its parameters. The ids come from the one table, ``autograder.spec.COURSE``.
"""
import re

from autograder.spec import COURSE

IDS = {e.id for e in COURSE}


def pytest_configure(config):
    for exercise in sorted(IDS):
        config.addinivalue_line("markers", f"{exercise}: tests of the exercise `{exercise}`")


def pytest_collection_modifyitems(config, items):
    for item in items:
        words = set(re.findall(r"[A-Za-z0-9_]+", item.nodeid))
        params = getattr(getattr(item, "callspec", None), "params", {})
        words |= {v for v in params.values() if isinstance(v, str)}
        words |= {getattr(v, "id", None) for v in params.values()} - {None}
        for exercise in sorted(IDS & words):
            item.add_marker(exercise)
