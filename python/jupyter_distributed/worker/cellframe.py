"""Where a cell's own frames are (shared by the rank's debugger and its pdb)."""

from __future__ import annotations

import types

CELL_FILE = "<cell "  # how a cell's code is named: <cell RUN_ID>


def cell_frame(frame: types.FrameType | None) -> types.FrameType | None:
    """The outermost frame of the cell's own code on ``frame``'s stack (None: not in a cell)."""
    found = None
    while frame is not None:
        if frame.f_code.co_filename.startswith(CELL_FILE):
            found = frame
        frame = frame.f_back
    return found
