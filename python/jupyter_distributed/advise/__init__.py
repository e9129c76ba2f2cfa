"""The parallelism advisor: ``%distributed advise`` and :func:`advise` recommend a launchable
layout with predicted memory and step time, and (``--verify K``) check the prediction by running
the top layouts, or (``--calibrate``) run a calibration trial of one layout of each kind.

Rooms: :mod:`.intake` (the model, on fake tensors or by numbers), :mod:`.memory` (MemTracker
traces and the layouts' sharding), :mod:`.timing` (compute timed here, links from a probe),
:mod:`.enumerate` (the launchable layouts), :mod:`.plan` (the whole answer), :mod:`.report`
(the table), :mod:`.store` (the advice as a run in the history), :mod:`.verify`, :mod:`.trial`
and :mod:`.calibrate` (the corrections they fit).
"""

from .intake import AdviseError, Analytic
from .plan import advise
from .report import Advice

__all__ = ["Advice", "AdviseError", "Analytic", "advise"]
