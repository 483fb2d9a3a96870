"""Importing a command's heavy modules without the cyclic garbage collector running through them.

A plan imports several hundred modules (numpy, pydantic and the models built at class creation, the solver): each
allocation past the collector's threshold starts a collection, and each collection walks the objects allocated so
far, which are all alive — module globals, classes, schemas. :func:`import_unswept` imports with the collector off,
then freezes what the imports made (:func:`gc.freeze`: the collector no longer walks it, in this import's process
only) and turns the collector back on for the work that follows, whose garbage it still collects.
"""

from __future__ import annotations

import gc
import importlib
import sys
from types import ModuleType


def import_unswept(name: str) -> ModuleType:
    """``importlib.import_module(name)``; the first import of it, with the collector on, is made without it (above).
    Imported already (a second command in one process, a test's ``main([...])``): the module, nothing frozen."""
    module = sys.modules.get(name)
    if module is not None or not gc.isenabled():
        return module if module is not None else importlib.import_module(name)
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        gc.freeze()
        gc.enable()
