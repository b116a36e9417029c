"""Known bugs generated, not listed: the reference called on transformed inputs.

A learner's code that computes the right thing of the wrong input (the base raised to a power,
the keys' projection for the queries') returns exactly what the reference returns on that
input. Each family below makes, from the reference and a rule, bugs whose diagnosis says what
the learner's *output* is ("your output matches the reference's with base^2 in place of base"),
never what their code looks like. They join an exercise's ``bugs`` and so are claims checked
like any other (``scoring.stated_diagnoses``): stated only where the learner's output is theirs
on the failing cases and no passing case contradicts them.
"""
from __future__ import annotations

from fractions import Fraction

# The powers of the base tried (the contract's frequency of pair i is base^(-2i/d)): a learner
# who multiplies by the frequency has base^-1, one whose exponent is 4i/d has base^2, 1/d has
# base^(1/2) (listed apart where a bug names it already).
BASE_POWERS = (Fraction(-1), Fraction(2), Fraction(3, 2), Fraction(1, 4), Fraction(-2), Fraction(-1, 2), Fraction(3))


def _exponent(p: Fraction) -> str:
    """The exponent of pair i's frequency, base^(...), with ``p`` the power of the base."""
    q = -2 * p
    sign = "-" if q < 0 else ""
    q = abs(q)
    if q.denominator == 1:
        return f"{sign}{'' if q == 1 else q.numerator}i/d"
    return f"{sign}{'' if q.numerator == 1 else q.numerator}i/({q.denominator}d)"


def base_powers(reference, base_position: int, *, skip=(), default: float = 10000.0) -> dict:
    """``{diagnosis: bug}``: ``reference`` called with its base raised to each power of
    :data:`BASE_POWERS` (but ``skip``). ``base_position`` is the base's index among the
    positional parameters of ``reference`` (it may come positionally or by name)."""
    bugs = {}
    for p in BASE_POWERS:
        if p in skip:
            continue

        def bug(*args, _p=float(p), **kwargs):
            args = list(args)
            if len(args) > base_position:
                args[base_position] = float(args[base_position]) ** _p
            else:
                kwargs["base"] = float(kwargs.get("base", default)) ** _p
            return reference(*args, **kwargs)

        bug.__name__ = bug.__qualname__ = f"{reference.__name__}_base_power_{p}".replace("/", "_").replace("-", "minus")
        grows = " (frequencies that grow with i)" if p < 0 else ""
        power = str(p) if p.denominator == 1 and p > 0 else f"({p})"
        bugs[(f"your output matches the reference's computed with base^{power} in place of base: pair i has frequency "
              f"base^({_exponent(p)}){grows}, where the contract has base^(-2i/d)")] = bug
    return bugs
