"""``--strategy horovod --framework tensorflow`` without Horovod: ``horovod.tensorflow``'s API.

The transports are :mod:`.horovod`'s (mpi4py under MPI, else torch.distributed's gloo); tensors
travel as NumPy arrays and come back as ``tf.Tensor`` of their own dtype. Inside a
``tf.function`` (Keras's ``fit``), the reductions run as one ``tf.py_function`` per step, so
every rank issues the same collectives in the same order.
"""

from __future__ import annotations

import copy
from typing import Any

from .horovod import Hvd, real_horovod, transport


def make_tf_hvd() -> Any:
    """Real ``horovod.tensorflow`` if importable, else :class:`TensorFlowHvd` over MPI or gloo."""
    return real_horovod("horovod.tensorflow") or TensorFlowHvd(
        transport("--strategy horovod --framework tensorflow")
    )


def _is_tf(value: Any) -> bool:
    """A TensorFlow tensor or variable, or a Keras 3 variable."""
    return type(value).__module__.startswith(("tensorflow", "keras"))


def _numpy(value: Any) -> Any:
    import numpy as np

    if type(value).__module__.startswith("torch"):
        return value.numpy()
    if _is_tf(value):
        import tensorflow as tf

        return tf.convert_to_tensor(value).numpy()
    return np.asarray(value)


class TensorFlowHvd(Hvd):
    """What ``import horovod.tensorflow as hvd`` gives, over MPI or gloo."""

    def _send(self, value: Any) -> Any:
        return _numpy(value) if _is_tf(value) else super()._send(value)

    def _back(self, result: Any, original: Any) -> Any:
        if not _is_tf(original):
            return super()._back(result, original)
        import tensorflow as tf

        return tf.cast(tf.convert_to_tensor(_numpy(result)), original.dtype)

    def _allreduce(self, value: Any, mean: bool) -> Any:
        if _is_tf(value) and not _eager():
            return self._grouped([value], mean)[0]
        return super()._allreduce(value, mean)

    def broadcast(self, value: Any, root_rank: int, name: str | None = None) -> Any:
        if _is_tf(value) and not _eager():
            import tensorflow as tf

            def send(tensor: Any) -> Any:
                return super(TensorFlowHvd, self).broadcast(tensor, root_rank)

            out = tf.py_function(send, [value], Tout=value.dtype)
            out.set_shape(value.shape)
            return out
        return super().broadcast(value, root_rank)

    def grouped_allreduce(
        self, tensors: list[Any], average: bool | None = None, op: str | None = None, **_: Any
    ) -> list[Any]:
        """All of ``tensors`` in one collective (``None`` entries stay ``None``)."""
        return self._grouped(tensors, self._mean(average, op))

    def _grouped(self, tensors: list[Any], mean: bool) -> list[Any]:
        import tensorflow as tf

        present = [t for t in tensors if t is not None]
        present = [tf.convert_to_tensor(t) for t in present]  # IndexedSlices become dense
        if not present:
            return list(tensors)
        if _eager():
            reduced = iter(self._reduce_flat(present, mean))
        else:
            outs = tf.py_function(
                lambda *ts: self._reduce_flat(list(ts), mean),
                present,
                Tout=[t.dtype for t in present],
            )
            for out, t in zip(outs, present, strict=True):
                out.set_shape(t.shape)
            reduced = iter(outs)
        return [None if t is None else next(reduced) for t in tensors]

    def _reduce_flat(self, tensors: list[Any], mean: bool) -> list[Any]:
        import numpy as np
        import tensorflow as tf

        arrays = [_numpy(t) for t in tensors]
        flat = np.concatenate([a.astype(np.float64).ravel() for a in arrays])
        total = _numpy(self._ops.allreduce(flat))
        if mean:
            total = total / self.size()
        out, start = [], 0
        for array, tensor in zip(arrays, tensors, strict=True):
            part = total[start : start + array.size].reshape(array.shape)
            out.append(tf.cast(tf.convert_to_tensor(part), tensor.dtype))
            start += array.size
        return out

    def broadcast_variables(self, variables: Any, root_rank: int = 0) -> None:
        """Give every rank ``root_rank``'s values of ``variables`` (tf or Keras variables)."""
        for variable in variables:
            variable.assign(self.broadcast(variable, root_rank))

    def broadcast_parameters(self, params: Any, root_rank: int = 0) -> None:
        """Horovod's torch name; here it broadcasts TensorFlow variables."""
        self.broadcast_variables(params, root_rank)

    def DistributedGradientTape(self, tape: Any, **_: Any) -> Any:
        """Wrap ``tape`` so that ``gradient()`` averages the gradients over all ranks."""
        return _AveragingTape(tape, self)

    def DistributedOptimizer(self, optimizer: Any, *_: Any, **__: Any) -> Any:
        """``optimizer`` (Keras 3, tf-keras or ``tf.compat.v1``) averaging gradients first;
        Horovod's other arguments (name, compression, ...) are accepted and ignored."""
        cls = type(optimizer)
        hvd = self
        if hasattr(cls, "apply") and hasattr(cls, "build"):  # Keras 3: apply_gradients -> apply

            def apply(self: Any, grads: Any, trainable_variables: Any = None) -> Any:
                return cls.apply(self, hvd.grouped_allreduce(list(grads)), trainable_variables)

            body: dict[str, Any] = {"apply": apply}
        else:

            def apply_gradients(self: Any, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
                pairs = list(grads_and_vars)
                grads = hvd.grouped_allreduce([g for g, _ in pairs])
                pairs = [(g, v) for g, (_, v) in zip(grads, pairs, strict=True)]
                return cls.apply_gradients(self, pairs, *args, **kwargs)

            body = {"apply_gradients": apply_gradients}
        distributed = type(f"Distributed{cls.__name__}", (cls,), body)
        if hasattr(optimizer, "get_config") and hasattr(cls, "from_config"):
            return getattr(distributed, "from_config")(optimizer.get_config())  # noqa: B009
        wrapped = copy.copy(optimizer)
        wrapped.__class__ = distributed
        return wrapped


class _AveragingTape:
    def __init__(self, tape: Any, hvd: TensorFlowHvd) -> None:
        self._tape, self._hvd = tape, hvd

    def gradient(self, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
        import tensorflow as tf

        grads = self._tape.gradient(target, sources, *args, **kwargs)
        flat = tf.nest.flatten(grads)
        return tf.nest.pack_sequence_as(grads, self._hvd.grouped_allreduce(flat))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tape, name)


def _eager() -> bool:
    import tensorflow as tf

    return bool(tf.executing_eagerly())
