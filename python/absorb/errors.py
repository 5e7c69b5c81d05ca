"""The kinds of expected failure and the exit code each has in the command line.

0 the command did its job (whatever the verdict), 1 internal error, 2 bad input (including
a job refused up front for the memory or time it would need, and running out of memory),
3 a needed external tool is missing, 4 the command ran and found a problem (``audit``/``verify``:
in the Lean library; ``search``: its positive control failed), 130 interrupted by Ctrl-C (128 +
SIGINT, the shell convention), 141 stdout's reader went away (128 + SIGPIPE: ``absorb … | head``).
"""

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_TOOL_MISSING = 3
EXIT_FINDINGS = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class AbsorbError(Exception):
    """Bad input (a file, a shape, a name, a value): the CLI prints ``error: <msg>`` and exits 2."""


class ToolMissing(Exception):
    """A needed external tool (the Lean toolchain) is not installed: the CLI exits 3."""
