"""Global options anywhere on the command line: `flopkb validate --kb bundled` means
`flopkb --kb bundled validate`, and `flopkb --format json claims` means `flopkb claims --format
json`.

click only reads the root's options before the command name; people (and CI scripts) put them
after it. The root's options are hoisted to the front before click parses, so each is accepted
in either place. No command declares an option of the same name (a test keeps it so), so moving
them changes the meaning of nothing. `--format` belongs to each command (for `graph export` it
names the file format): given before the command, it is moved to the end, where the command
reads it. Everything after `--` stays where it is.
"""

from __future__ import annotations

# the root callback's options (flopkb.cli._root): those that take a value, and flags
GLOBAL_WITH_VALUE = ("--kb", "--color")
GLOBAL_FLAGS = ("--debug", "--version")
# every command's own `--format` (flopkb.cli.common.FormatOption), accepted before the command
COMMAND_FORMAT = ("--format", "-f")


def _global(arg: str) -> tuple[bool, bool]:
    """(is a global option, takes the next argument as its value)."""
    if arg in GLOBAL_WITH_VALUE:
        return True, True
    if arg in GLOBAL_FLAGS or arg.split("=", 1)[0] in GLOBAL_WITH_VALUE:
        return True, False
    return False, False


def _format_before_command(argv: list[str]) -> list[str]:
    """`argv` with a `--format X` given before the command name moved after the command."""
    moved: list[str] = []
    rest: list[str] = []
    i, command_seen = 0, False
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or command_seen:
            rest.extend(argv[i:])
            break
        name = arg.split("=", 1)[0]
        if arg in COMMAND_FORMAT and i + 1 < len(argv):
            moved += argv[i : i + 2]
            i += 2
            continue
        glued = arg.startswith("-f") and not arg.startswith("--") and len(arg) > 2  # -fjson
        if name == "--format" or glued:
            moved.append(arg)
        elif arg in GLOBAL_WITH_VALUE:
            rest += argv[i : i + 2]
            i += 1
        else:
            rest.append(arg)
            command_seen = not arg.startswith("-")
        i += 1
    if not moved:
        return argv
    if "--" in rest:
        at = rest.index("--")
        return rest[:at] + moved + rest[at:]
    return rest + moved


def hoist_global_options(argv: list[str]) -> list[str]:
    """`argv` with every root option (and its value) moved in front of the command, in order,
    and a `--format` given before the command moved after it."""
    argv = _format_before_command(argv)
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
