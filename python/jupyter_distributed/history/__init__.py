"""The durable history of runs: one SQLite file, written by kernels, read by the server.

- :mod:`.store`: :class:`~.store.Store`, the one way in (see :func:`~.store.Store.open`);
- :mod:`.storefile`: the file's header, permissions and checks; :mod:`.migrate`: layouts;
- :mod:`.eventrows`, :mod:`.rowupdates`, :mod:`.eventmerge`: events to rows and back;
- :mod:`.writes`: what kernels write, a batch of events a transaction;
- :mod:`.queries`, :mod:`.records`, :mod:`.probestore`: what readers ask;
- :mod:`.coordination`: runs shared by several kernels; :mod:`.reaper`: runs of dead kernels.
"""
