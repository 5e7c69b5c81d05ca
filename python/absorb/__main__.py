"""`python -m absorb` and the `absorb` console script: the absorb command line.

The entry point imports :mod:`absorb.cli` (and with it NumPy) inside the function, so that a
Ctrl-C during those imports also ends in one line and exit 130, never a traceback.
"""

import sys


def main() -> int:
    """Import the command line and run it (see :func:`absorb.cli.main`)."""
    try:
        from absorb.cli import main as cli_main
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
