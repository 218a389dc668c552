"""A command's exit without the interpreter's final garbage collections.

Once Lightning is imported (it imports torch._dynamo and, with it, sympy), the collections
Python runs while shutting down take most of a second-long exit on a 2-core CPU: the exit took
1.54 s after `import lightning`, 0.23-0.25 s with the objects frozen first (docs: benchmarks,
"Start-up with W&B"). By the time they would run, the command's work is done and every atexit
handler has cleaned up (W&B's service, logging's handlers, Lightning's); objects still alive in
a reference cycle then are left to the end of the process either way, as Python's shutdown does
not promise to finalize them.
"""

from __future__ import annotations

import atexit
import gc


def skip_final_collections() -> None:
    """Freeze every object as the last atexit handler: registered at the start of a command,
    before the libraries register theirs, it runs after them (atexit runs last in, first out)."""
    atexit.register(gc.freeze)
