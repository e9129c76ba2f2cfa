"""The option grammar that mpirun and srun share: a launcher's command line is a list of
options, each a name with its values (:data:`Option`). A user's options are split by the
launcher's own rules, checked against the ones our settings decide, and merged with ours so
that each setting is passed once and the user's value wins.

Nothing here starts a process; ``--dry-run`` and the argument parser use it freely.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence

from ..errors import SpecError

Option = tuple[str, ...]
Key = Callable[[Option], tuple[str, ...]]


def unquote(text: str) -> str:
    """The magic's line splitter keeps the quotes around ``--mpi-options "..."``; drop them."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def user_options(
    text: str,
    flag: str,
    split: Callable[[list[str]], list[Option]],
    key: Key,
    reserved: Mapping[str, str],
    why: str = "is set from your settings",
) -> list[Option]:
    """The user's options in ``text`` (given with ``flag``), split by the launcher's ``split``;
    one whose setting (``key(option)[0]``) is ``reserved`` is refused, saying what to use."""
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise SpecError(f"{flag}: cannot split {text!r}: {exc}") from None
    options = split(tokens)
    for option in options:
        name = key(option)[0]
        if name in reserved:
            shown = option[0].split("=", 1)[0]
            raise SpecError(f"{flag}: {shown} {why}; use {reserved[name]} instead")
    return options


def merge_options(defaults: Sequence[Option], user: Sequence[Option], key: Key) -> list[str]:
    """Our defaults then the user's options, flattened. A default whose key the user also gives
    is dropped (the user's value wins); a key the user gives twice is passed once, last value.
    ``key`` names the setting an option is (mpirun's rules or srun's)."""
    chosen: dict[tuple[str, ...], Option] = {}
    for option in user:
        chosen[key(option)] = option
    merged: list[Option] = [d for d in defaults if key(d) not in chosen]
    merged.extend(chosen.values())
    return [token for option in merged for token in option]
