"""The advisor's memory trace of each GPU-suite point on the CPU's fake tensors and on the
device's (``advise.memtrace``; what the trace keeps differs where the device's kernels save other
tensors than the CPU's), side by side: the activations each reports, and the difference.

Run (from the repository root): ``PYTHONPATH=python python benchmarks/advise_trace_devices.py
[--device cuda|cpu]`` (``cpu``: the suite's CPU points, both columns the same).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_suite import POINTS, factory_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    device = parser.parse_args().device
    from jupyter_distributed.advise import memtrace

    gib = float(1 << 30)
    print(f"{'point':<32} {'cpu acts GiB':>12} {device + ' acts GiB':>13} {'diff MiB':>9}")
    for p in POINTS[device if device == "cuda" else "cpu"]:
        f = factory_of(p)
        try:
            (cpu,) = memtrace._traced(f, p.micro, p.seq, "adamw", 1, None)
            (dev,) = memtrace._traced(f, p.micro, p.seq, "adamw", 1, device)
        except Exception as e:  # noqa: BLE001 (one line a point)
            print(f"{p.name:<32} failed: {str(e).splitlines()[0][:100]}")
            continue
        diff = (dev.activations - cpu.activations) / (1 << 20)
        print(f"{p.name:<32} {cpu.activations / gib:>12.4f} {dev.activations / gib:>13.4f} "
              f"{diff:>+9.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
