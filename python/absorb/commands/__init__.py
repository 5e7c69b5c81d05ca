"""The commands of ``absorb``: one module per command, the top layer of the package.

Each command module has ``NAME`` and ``HELP`` (its name and one-line help), ``add_options``
(its argparse options) and ``run`` (options in, a :class:`~absorb.commands.result.Outcome`
out: the result's JSON, its text lines and its exit code). :mod:`absorb.cli` builds the parser
from :data:`COMMANDS` and prints what ``run`` returns; no module below this package sees an
argparse object. The shared option types are in :mod:`.options`.
"""

from __future__ import annotations

from types import ModuleType

from absorb.commands import (
    activations,
    audit,
    blueprint,
    check,
    inspect,
    report,
    search,
    stack,
    verify,
)

#: Every command, in the order of ``absorb --help``.
COMMANDS: tuple[ModuleType, ...] = (activations, check, stack, search, inspect, audit, verify,
                                    report, blueprint)
