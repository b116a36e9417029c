"""The reference namespace: the ``solutions`` package, optionally with objects replaced.

The judge runs each case's driver against ``namespace()`` for the expected output, and
against ``namespace({"softmax": buggy_softmax})`` to see what a known bug would return on
the same inputs. Runs in the grader's process only.
"""
from __future__ import annotations

import importlib
from typing import Any

from ..spec import MODULE_OF


class _Module:
    """A solutions module seen through the overrides: attribute lookup tries them first."""

    def __init__(self, module, overrides: dict[str, Any]):
        self._module, self._overrides = module, overrides

    def __getattr__(self, name):
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._module, name)


class ReferenceNamespace:
    """``ns.module("attention").softmax`` is ``solutions.attention.softmax`` unless overridden.

    ``overrides`` maps exercise ids to replacements (a buggy function or class). Only the
    driver's own lookups see them: the solutions' internal calls still use the solutions, so a
    bug in one exercise is seen alone.
    """

    def __init__(self, overrides: dict[str, Any] | None = None):
        self.overrides = dict(overrides or {})

    def module(self, name: str):
        mine = {ex: obj for ex, obj in self.overrides.items() if MODULE_OF[ex] == name}
        return _Module(importlib.import_module(f"solutions.{name}"), mine)


def namespace(overrides: dict[str, Any] | None = None) -> ReferenceNamespace:
    return ReferenceNamespace(overrides)
