"""Which implementation a chapter notebook runs: yours, or the reference solutions.

Every chapter notebook starts with ``attention = load("attention")`` instead of a plain
import. For a learner this is exactly ``import mha_exercises.attention``: the notebook
runs *your* code. The book build and the notebook tests set ``MHA_BACKEND=solutions``
so that the published pages show every cell executed against the reference solutions.
"""
import importlib
import os

BACKENDS = {"learner": "mha_exercises", "solutions": "solutions"}


def backend() -> str:
    """The active backend's name: ``$MHA_BACKEND``, or ``"learner"`` when unset."""
    name = os.environ.get("MHA_BACKEND", "learner")
    if name not in BACKENDS:
        raise ValueError(f"MHA_BACKEND={name!r} is not one of {sorted(BACKENDS)}")
    return name


def load(module: str):
    """Import one exercise module (``"attention"``, ``"masking"``, ...) from the active backend."""
    package = BACKENDS[backend()]
    try:
        return importlib.import_module(f"{package}.{module}")
    except ModuleNotFoundError as err:
        if package == "solutions" and err.name in ("solutions", f"solutions.{module}"):
            raise ModuleNotFoundError(
                f"MHA_BACKEND=solutions but the reference solutions are not installed "
                f"(a learner release has none): unset MHA_BACKEND to run your own code"
            ) from err
        raise
