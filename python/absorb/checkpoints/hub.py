"""Hugging Face Hub model ids (``org/name[@revision]``) resolved to a local snapshot folder.

A path that exists locally always wins over an id. An id is resolved through
``huggingface_hub.snapshot_download``, asking only for the files ``inspect`` reads (the
safetensors weights, their index, ``config.json``), into the Hub cache: ``$HF_HUB_CACHE``,
else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub`` (the Hub's own rules, read from the
environment at each call rather than when the library was imported). With
``HF_HUB_OFFLINE=1`` nothing is fetched: the cached snapshot is used or the id is refused.
``huggingface_hub`` is an optional extra (``pip install -e '.[hub]'``).

Confinement: a revision is a branch, tag or commit name (ASCII letters, digits, ``._-``,
``/``-separated parts that are neither empty nor start with ``.``: no ``..``), and the
folder the library resolves must be ``HUB_CACHE/models--ORG--NAME/snapshots/COMMIT`` with
COMMIT 40 hexadecimal digits, its real path inside the cache: a ``refs/main`` holding
``../../…`` (or anything but a commit hash) is refused, not followed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from absorb.errors import AbsorbError, ToolMissing

HUB_EXTRA = "needs the hub extra: pip install -e '.[hub]'"
# The files a checkpoint scan reads; nothing else of a repository is fetched.
ALLOW_PATTERNS = ["*.safetensors", "*.safetensors.index.json", "config.json"]
# org/name as the Hub spells them (letters, digits, '-', '_', '.'), an optional @revision.
_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<rev>.*))?",
                 re.ASCII | re.DOTALL)
_REV_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", re.ASCII)
_COMMIT = re.compile(r"[0-9a-f]{40}", re.ASCII)
_TRUE = {"1", "true", "yes", "on"}


def parse_hub_id(text: str) -> tuple[str, str | None] | None:
    """(repo id, revision or None) when ``text`` has the form ``org/name[@revision]`` and
    does not name a checkpoint file (``….safetensors``, ``….json``: a mistyped path is not
    looked up on the Hub)."""
    m = _ID.fullmatch(text)
    if m is None or m["repo"].endswith((".safetensors", ".json")):
        return None
    rev = m["rev"]
    if rev is not None and not all(_REV_PART.fullmatch(part) for part in rev.split("/")):
        raise AbsorbError(f"{text}: revision {rev!r} is not a branch, tag or commit name "
                          "(letters, digits, '._-', '/'-separated parts not starting with "
                          "'.'); refused")
    return m["repo"], rev


def _confined(folder: Path, cache: Path, repo: str, text: str) -> Path:
    """``folder`` when it is the repository's snapshot of a commit inside ``cache``."""
    snapshots = Path(os.path.realpath(cache / f"models--{repo.replace('/', '--')}" / "snapshots"))
    real = Path(os.path.realpath(folder))
    if real.parent != snapshots or not _COMMIT.fullmatch(real.name):
        raise AbsorbError(f"{text}: the Hub cache resolves it to {real}, not a commit snapshot "
                          f"in {snapshots} (a damaged or tampered refs/ file?); refused")
    return real


def hub_cache() -> Path:
    """The Hub cache folder the environment selects (``HF_HUB_CACHE``, ``HF_HOME``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def offline() -> bool:
    """``HF_HUB_OFFLINE`` set to a true value: use the cache only."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def resolve_checkpoint(text: str) -> Path:
    """The local path for ``text``: itself when it exists (or is not a Hub id), else the
    snapshot folder of the Hub id (AbsorbError, one line, when it cannot be had)."""
    path = Path(text)
    parsed = None if path.exists() else parse_hub_id(text)
    if parsed is None:
        return path
    repo, revision = parsed
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, HFValidationError
    except ImportError:
        raise ToolMissing(f"{text} is not a local path and looks like a Hub model id: "
                          f"{HUB_EXTRA}") from None
    cache = hub_cache()
    try:
        folder = snapshot_download(repo, revision=revision, cache_dir=cache,
                                   local_files_only=offline(), allow_patterns=ALLOW_PATTERNS)
    except (HfHubHTTPError, HFValidationError, OSError, ValueError) as exc:
        # the library's messages run over several lines and speak of its own arguments
        # (local_files_only): what happened, then what to do, in this tool's terms
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        why, fix = (("HF_HUB_OFFLINE is set, so nothing is downloaded",
                     f"run `absorb inspect {text}` once without HF_HUB_OFFLINE")
                    if offline() else (f"it could not be downloaded ({first})",
                                       "check the model id and the network"))
        raise AbsorbError(f"{text}: no such local path, and model {repo}"
                          f"{'@' + revision if revision else ''} is not in the Hub cache {cache}; "
                          f"{why}. To fix: {fix}, or download it with `hf download {repo}"
                          f"{' --revision ' + revision if revision else ''}`, or pass the local "
                          "folder holding its .safetensors and config.json") from None
    return _confined(Path(str(folder)), cache, repo, text)
