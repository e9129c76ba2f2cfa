"""The kernel's live-rank engine, shared by every backend that runs ranks as processes.

- :mod:`.process`: a :class:`~.process.ProcessCluster` (the ranks of one cluster) and its
  supervision (:mod:`.supervise`, :mod:`.tracker`, :mod:`.liveness`, :mod:`.startup`);
- :mod:`.router`: the kernel's one I/O thread and its ROUTER, with :mod:`.decode`,
  :mod:`.inbox`, :mod:`.cellrun`, :mod:`.cellpeers` and :mod:`.cellorder` for a cell's path;
- :mod:`.transport`: Unix sockets on one machine, CurveZMQ between hosts;
- :mod:`.relay`: a node's relay process between its ranks and the kernel (``Distributed.relays``),
  and :mod:`.relays`, the kernel's side of it (addresses, local relay processes, a dead node);
- :mod:`.hang`, :mod:`.hangflight`, :mod:`.stackboard`, :mod:`.startwatch`: hang diagnosis;
- :mod:`.zygote`: the fork server that starts local ranks;
- :mod:`.launch`: what every launcher shares (the worker's command, torchrun's variables,
  free ports, the core checks, the control host); :mod:`.launcher`: a launcher process and
  its output; :mod:`.cmdline`: the option grammar that mpirun and srun share.

It imports no backend: backends (``backends/<name>/``) import it.
"""
