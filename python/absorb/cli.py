"""The ``absorb`` command line (DESIGN.md, "Command line contract"): the parser built from the
command modules (:mod:`absorb.commands`), and ``main``, which runs one and prints its outcome.

Exit codes: 0 the command did its job (whatever the verdict), 2 bad input (one line
``error: …`` on stderr), 3 a needed external tool is missing, 1 internal error, 4 the command
ran and found a problem (``audit``/``verify``: a ``sorry``, a missing declaration, a failed
build; ``search``: its positive control failed), 130 interrupted, 141 stdout's reader went away
(``absorb … | head``: no message, as Unix tools). With ``--json`` stdout holds exactly one JSON
object; an error (exit 1, 2, 3) is the object ``{"error": "…", "exit": CODE}``; progress bars
and logs go to stderr. Which code a command returns is its outcome's ``exit_code``: no command
is special here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

from absorb.atomic_files import terminate_as_interrupt
from absorb.budget import memory_cap
from absorb.commands import COMMANDS
from absorb.commands.result import Outcome
from absorb.errors import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TOOL_MISSING,
    AbsorbError,
    ToolMissing,
)
from absorb.serialize import write_json


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors turned into AbsorbError (one line, exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise AbsorbError(message)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default, except where there is none to show (flags,
    options whose absence the help text itself explains)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or any(action.default is v for v in (None, False,
                                                                 argparse.SUPPRESS)):
            return action.help
        return super()._get_help_string(action)


def version() -> str:
    """The installed distribution's version (package metadata), else the source tree's."""
    from absorb import DISTRIBUTION, __version__

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return __version__


def build_parser() -> argparse.ArgumentParser:
    """``absorb`` and one subcommand per module of :data:`absorb.commands.COMMANDS`."""
    parser = _Parser(prog="absorb", description="Can an MLP absorb its own skip connection?",
                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"absorb {version()}",
                        help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.HELP,
                           formatter_class=_HelpFormatter)
        p.add_argument("--json", action="store_true", help="one JSON object on stdout")
        command.add_options(p)
        p.set_defaults(run=command.run)
    return parser


def _fail(message: str, code: int, wants_json: bool, label: str = "error") -> int:
    """Report an error the command line expects: one line ``error: …`` on stderr and, under
    ``--json``, the one error object ``{"error": message, "exit": code}`` on stdout (every
    error of every command has this shape), so that a script always has an answer to parse."""
    print(f"{label}: {message}", file=sys.stderr)
    if wants_json:
        sys.stdout.write(json.dumps({"error": message, "exit": code}) + "\n")
    return code


def _reader_gone() -> int:
    """stdout's reader closed the pipe (``absorb … | head``): stop quietly with 128 + SIGPIPE,
    what a shell reports for a Unix tool ended by that signal. Both streams are pointed at
    /dev/null first, so that the interpreter's last flush of what is still buffered cannot fail
    again at exit (Python's own recipe; SIGPIPE itself stays ignored: a Dask connection that
    breaks must raise, not kill the process)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # not a real file (captured in-process)
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (see the module docstring)."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # a reader that left shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_gone()


def _run(argv: Sequence[str] | None) -> int:
    # before parsing succeeds, --json anywhere on the line is what the user asked for
    wants_json = not {"--json", "--jsonl"}.isdisjoint(sys.argv[1:] if argv is None else argv)
    terminate_as_interrupt()  # SIGTERM cleans up as Ctrl-C does (exit 130, no temporaries)
    try:
        args = build_parser().parse_args(argv)
        wants_json = bool(args.json)
        memory_cap()  # a bad $ABSORB_MAX_MEMORY is refused up front, whatever the command
        outcome: Outcome = args.run(args)
        if args.json:
            write_json(outcome.to_json(), sys.stdout)
        else:
            sys.stdout.write("\n".join(outcome.text_lines()) + "\n")
        failure = getattr(outcome, "failure", None)  # a Result's; a Verdict never fails
        if failure:  # the output is written, but the command did not fully do its job
            print(f"error: {failure}", file=sys.stderr)
        return outcome.exit_code
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except AbsorbError as exc:
        return _fail(str(exc), EXIT_BAD_INPUT, wants_json)
    except ToolMissing as exc:
        return _fail(str(exc), EXIT_TOOL_MISSING, wants_json)
    except KeyboardInterrupt:
        # Every file writer replaces its target atomically, so no half-written file is left
        # behind (JSON streamed to stdout may stop mid-line: invalid, never wrongly complete);
        # a second Ctrl-C while the message is printed must not bring the traceback back.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(("\n" if sys.stderr.isatty() else "") + "interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as exc:
        detail = f" ({exc})" if str(exc) else ""
        return _fail(f"out of memory{detail}; try smaller sizes", EXIT_BAD_INPUT, wants_json)
    except BrokenPipeError:
        raise  # main's: the reader left, nothing more is said
    except Exception as exc:
        return _fail(f"{type(exc).__name__}: {exc}", EXIT_INTERNAL, wants_json,
                     "internal error")


if __name__ == "__main__":
    sys.exit(main())
