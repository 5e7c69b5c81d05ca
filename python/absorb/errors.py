"""The two kinds of expected failure, each with its exit code in the command line."""


class AbsorbError(Exception):
    """Bad input (a file, a shape, a name, a value): the CLI prints ``error: <msg>`` and exits 2."""


class ToolMissing(Exception):
    """A needed external tool (the Lean toolchain) is not installed: the CLI exits 3."""
