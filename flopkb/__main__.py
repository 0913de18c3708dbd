"""`python -m flopkb`: the same command line as the `flopkb` script.

`python -m` puts the working folder first on `sys.path`, and a KB is a folder a pull request
fills: its `typer/`, `yaml/` or `torch/` would be imported in place of the real library. Nothing
is imported yet when this module starts except the `flopkb` package itself (whose `__init__`
imports nothing), so dropping that entry here keeps every later import off the working folder.
It cannot protect the `flopkb` package itself: Python has imported a `flopkb/` of the working
folder before any of flopkb runs. Against that, use the `flopkb` script (its `sys.path[0]` is
the folder of the script), `python -P -m flopkb` or `PYTHONSAFEPATH=1` (Python 3.11+), and
`torchrun --no-python flopkb ...` rather than `torchrun -m flopkb ...`.
"""

import os
import sys


def _drop_working_folder() -> None:
    """Remove the entry `-m` inserted at sys.path[0] (the working folder, or '' before 3.11's
    full path); entries PYTHONPATH names are the caller's own and stay."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return
    first = sys.path[0]
    if first in ("", ".") or os.path.abspath(first) == os.getcwd():
        del sys.path[0]


_drop_working_folder()

from flopkb.cli import main  # noqa: E402 - after the working folder left sys.path

main()
