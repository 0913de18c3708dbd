"""Help text pieces shared by the commands: the example each `--help` ends with."""

from __future__ import annotations

# click keeps a paragraph that starts with \b as written (no re-wrapping)
EPILOG = (
    "\b\nExamples:\n  flopkb validate                 # the KB found from here upward\n"
    "  flopkb --kb bundled claims      # the KB shipped inside flopkb\n"
    "  flopkb --install-completion     # shell completion (bash, zsh, fish, PowerShell)"
)


def example(*commands: str) -> str:
    """The epilog of one command: `Example:` and the command lines, kept as written."""
    return "\b\nExample:\n" + "\n".join(f"  {c}" for c in commands)
