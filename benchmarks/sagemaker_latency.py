"""Print-to-notebook latency of ``--backend sagemaker``: from CloudWatch Logs having a line
to the line reaching the cell's view, against the local platform on moto's server.

    PYTHONPATH=python python benchmarks/sagemaker_latency.py

The backend polls every 0.5 s (``SageMakerBackend(poll=...)``); the goal is under 2 s.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

from jupyter_distributed.backends.sagemaker.options import SageMakerOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.events import OutputEvent
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from sagemaker_runtime import REGION, LocalSageMaker

CELL = "import time\nfor i in range(40):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.1)"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, LocalSageMaker(Path(tmp)).running() as sm:
        sm.s3.create_bucket(
            Bucket="jd-bench", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        delays: list[float] = []

        class Timing(CellView):
            def on_event(self, event: Any) -> None:
                if isinstance(event, OutputEvent) and event.text.startswith("tick"):
                    seen = time.monotonic()
                    key = next((m for m in sm.ingested if m.endswith("|" + event.text)), None)
                    if key is not None:
                        delays.append(seen - sm.ingested[key])

        os.environ.update(
            JUPYTER_DISTRIBUTED_SAGEMAKER_ENDPOINT_URL=sm.endpoint,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",  # noqa: S106 (the local server's fake)
        )
        options = SageMakerOptions(
            role="arn:aws:iam::123456789012:role/Bench",
            bucket="jd-bench",
            region=REGION,
            image=f"local/bench:py3{sys.version_info[1]}",
        )
        spec = Spec(layout=Layout(), backend="sagemaker", options=options)
        session = Session(Store(Path(tmp) / "h.sqlite3"))
        session.run_cell(spec, CELL, {}, view=Timing())
        delays.sort()
        print(
            f"{len(delays)} lines; CloudWatch → view latency: median "
            f"{statistics.median(delays):.3f} s, p95 {delays[int(len(delays) * 0.95) - 1]:.3f} s, "
            f"max {delays[-1]:.3f} s (poll 0.5 s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
