"""The tagged-line codec: how a rank without a control channel (in a SageMaker training job)
reports, one line on stdout per item, which the platform sends to CloudWatch Logs.

A line is ``##jd|RANK|TAG|PAYLOAD``; :class:`Tag` lists the tags and their payloads. Written
by the rank (:mod:`..worker.sagemaker_rank`), read back by the kernel or the server that follows
the job (:mod:`..backends.sagemaker.follow`). Standard library only.
"""

from __future__ import annotations

import re
from enum import StrEnum

PREFIX = "##jd"


class Tag(StrEnum):
    STDOUT = "o"  # TIME|TEXT
    STDERR = "e"  # TIME|TEXT
    METRIC = "m"  # JSON [time, {name: number}]
    STATE = "s"  # a rank state (running)
    FAILURE = "x"  # JSON RankFailure
    RESULT = "r"  # JSON repr of the cell's value
    DONE = "d"  # ok | interrupted | error


_LINE = re.compile(r"##jd\|(\d+)\|([" + "".join(t.value for t in Tag) + r"])\|(.*)$")


def encode(rank: int, tag: Tag, payload: str) -> str:
    """One tagged line, without its newline."""
    return f"{PREFIX}|{rank}|{tag.value}|{payload}"


def encode_output(rank: int, stream: str, t: float, text: str) -> str:
    return encode(rank, Tag.STDOUT if stream == "stdout" else Tag.STDERR, f"{t:.3f}|{text}")


def decode(line: str) -> tuple[int, Tag, str] | None:
    """(rank, tag, payload) of a tagged line; None for any other line (platform messages)."""
    match = _LINE.search(line)
    if match is None:
        return None
    return int(match.group(1)), Tag(match.group(2)), match.group(3)


def decode_output(payload: str) -> tuple[float, str]:
    """(time, text) of an output payload; raises ``ValueError`` when it is not one."""
    when, _, text = payload.partition("|")
    return float(when), text
