"""Global options anywhere on the command line: `flopkb validate --kb bundled` means
`flopkb --kb bundled validate`.

click only reads the root's options before the command name; people (and CI scripts) put them
after it. The root's options are hoisted to the front before click parses, so each is accepted
in either place. No command declares an option of the same name (a test keeps it so), so moving
them changes the meaning of nothing. Everything after `--` stays where it is.
"""

from __future__ import annotations

# the root callback's options (flopkb.cli._root): those that take a value, and flags
GLOBAL_WITH_VALUE = ("--kb", "--color")
GLOBAL_FLAGS = ("--debug", "--version")


def _global(arg: str) -> tuple[bool, bool]:
    """(is a global option, takes the next argument as its value)."""
    if arg in GLOBAL_WITH_VALUE:
        return True, True
    if arg in GLOBAL_FLAGS or arg.split("=", 1)[0] in GLOBAL_WITH_VALUE:
        return True, False
    return False, False


def hoist_global_options(argv: list[str]) -> list[str]:
    """`argv` with every root option (and its value) moved in front of the command, in order."""
    hoisted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        is_global, takes_value = _global(arg)
        if not is_global:
            rest.append(arg)
            i += 1
            continue
        hoisted.append(arg)
        if takes_value and i + 1 < len(argv):
            hoisted.append(argv[i + 1])
            i += 1
        i += 1
    return hoisted + rest
