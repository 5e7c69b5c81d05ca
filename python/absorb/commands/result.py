"""What a command returns: its result as JSON, as text lines, and its exit code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Outcome(Protocol):
    """A command's answer. :class:`~absorb.verdicts.Verdict` is one (``check``, exit 0)."""

    @property
    def exit_code(self) -> int: ...

    def to_json(self) -> dict[str, Any]: ...

    def text_lines(self) -> list[str]: ...


@dataclass
class Result:
    """A command's answer as plain values. ``failure`` (when the command ran but did not fully
    do its job) is printed as one line ``error: …`` on stderr after the output."""

    json: dict[str, Any]
    lines: list[str]
    exit_code: int = 0
    failure: str | None = None

    def to_json(self) -> dict[str, Any]:
        return self.json

    def text_lines(self) -> list[str]:
        return self.lines
