"""The runtime inside each rank: ``python -m jupyter_distributed.worker``.

It imports only the standard library, pyzmq and our small modules, so it starts fast.
"""
