"""The words of a ``%distributed`` line, or its one-line refusal: a line that is not text (a
lone surrogate), has an unbalanced quote, or gives a flag ``--`` as its value."""

from __future__ import annotations

import re
import shlex

from IPython.core.error import UsageError

# a flag given "--" as its value (--nprocs=--, -n--): argparse passes it on as an empty list
_EMPTY_VALUE = re.compile(r"(--[^=\s]+=|-[^-\s]=?)--")
_SURROGATE = re.compile("[\ud800-\udfff]")


def line_words(line: str) -> list[str]:
    """The words of the line; a line that is not text or a flag without a value is refused."""
    odd = _SURROGATE.search(line)
    if odd:  # (not shown: a lone surrogate cannot even be printed)
        raise UsageError(
            f"%distributed: the line holds {odd.group()!a} at character {odd.start() + 1}, "
            "half of a UTF-16 pair and not text; remove it"
        )
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%distributed: {exc} in {line!r}") from None
    for word in words:
        if _EMPTY_VALUE.fullmatch(word):
            flag = word[: -len("--")].rstrip("=")
            raise UsageError(f"%distributed: {word} gives {flag} no value; write {flag} VALUE")
    return words
