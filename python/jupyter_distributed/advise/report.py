"""The advice as a table: rows (plain dicts), text for the terminal, HTML for the notebook, a
pandas DataFrame when pandas is there, and the JSON the history keeps."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .enumerate import Row

COLUMNS = (
    "layout",
    "launch",
    "micro_batch",
    "predicted_gib",
    "memory_breakdown",
    "predicted_step_s",
    "predicted_samples_per_s",
    "dominant",
    "pareto",
    "megatron",
    "fits",
    "calibrated",
    "measured_gib",
    "measured_step_s",
    "measured_samples_per_s",
    "blame",
)


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g}"


class Advice:
    """``%distributed advise``'s answer: layouts best first (those that fit, by predicted
    samples/s). ``rows``: one dict per layout (the same for the API and the line magic)."""

    def __init__(
        self, rows: list[Row], inputs: dict[str, Any], notes: list[str], seconds: float
    ) -> None:
        self.layouts = rows
        self.inputs = inputs
        self.notes = notes
        self.seconds = seconds  # tracing, timing, enumerating and ranking
        self.run_id = ""
        self.calibration: dict[str, Any] | None = None  # fitted by --verify (to keep)

    @property
    def rows(self) -> list[dict[str, Any]]:
        out = []
        for row in self.layouts:
            m = row.measured or {}
            out.append(
                {
                    "layout": row.candidate.name,
                    "launch": row.launch,
                    "micro_batch": row.micro,
                    "predicted_gib": round(row.memory.total / 2**30, 6),
                    "memory_breakdown": ", ".join(
                        f"{k} {_gib(v)}" for k, v in row.memory.breakdown().items() if v
                    ),
                    "predicted_step_s": round(row.step_s, 6),
                    "predicted_samples_per_s": round(row.samples_per_s, 3),
                    "dominant": row.dominant,
                    "pareto": row.pareto,
                    "megatron": row.megatron,
                    "fits": row.fits,
                    "calibrated": row.calibrated,
                    "measured_gib": m.get("gib"),
                    "measured_step_s": m.get("step_s"),
                    "measured_samples_per_s": m.get("samples_per_s"),
                    "blame": m.get("blame", ""),
                }
            )
        return out

    @property
    def best(self) -> Row:
        return self.layouts[0]

    def to_pandas(self) -> Any:
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas; .rows has the same table") from None
        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "notes": self.notes,
            "seconds": self.seconds,
            "layouts": [r.to_json() for r in self.layouts],
        }

    def text(self) -> str:
        head = (
            f"advice for {self.inputs['model']} ({self.inputs['parameters']:,} parameters), "
            f"global batch {self.inputs['global_batch']}, {self.inputs['nodes']} × "
            f"{self.inputs['procs_per_node']} ranks; {self.seconds:.1f}s"
            + (f"; stored as run {self.run_id}" if self.run_id else "")
        )
        kind = "predicted, calibrated" if self.inputs.get("calibration") else "predicted"
        lines = [
            head,
            f"  {'#':>2}  {'GiB/rank':>9} {'step s':>9} {'samples/s':>10}  "
            f"{'dominant':<34} launch   ({kind}; ◆ Pareto front of samples/s and headroom)",
        ]
        for i, r in enumerate(self.rows, 1):
            flag = "" if r["fits"] else "  [does not fit]"
            mark = "◆" if r["pareto"] else " "
            lines.append(
                f"  {i:>2}{mark} {r['predicted_gib']:>9.4f} {r['predicted_step_s']:>9.4f} "
                f"{r['predicted_samples_per_s']:>10.1f}  {r['dominant']:<34} {r['launch']}{flag}"
            )
            lines.append(f"       predicted memory GiB: {r['memory_breakdown']}")
            if r["megatron"]:
                lines.append(f"       Megatron's rules: {r['megatron']}")
            if r["measured_gib"] is not None:
                lines.append(
                    f"       measured: {r['measured_gib']:.4f} GiB, {r['measured_step_s']:.4f} s, "
                    f"{r['measured_samples_per_s']:.1f} samples/s"
                    + (f"; off: {r['blame']}" if r["blame"] else "")
                )
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        cells = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
        body = "".join(
            ("<tr style='font-weight:bold'>" if r["pareto"] else "<tr>")
            + "".join(
                f"<td><code>{html.escape(str(r[c]))}</code></td>"
                if c == "launch"
                else f"<td>{html.escape('' if r[c] is None else str(r[c]))}</td>"
                for c in COLUMNS
            )
            + "</tr>"
            for r in self.rows
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<p>{html.escape(self.text().splitlines()[0])}</p>"
            "<p>predicted_* columns are the advisor's predictions (calibrated where "
            "<i>calibrated</i> names the run that fitted them), measured_* come from --verify "
            "runs; <b>bold</b> rows are the Pareto front of samples/s against memory headroom.</p>"
            f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"
            f"<ul>{notes}</ul>"
        )


def display_advice(advice: Advice) -> None:
    """Show the advice under the cell: its HTML in a notebook, its text in a terminal."""
    from IPython.display import display

    display(advice)  # type: ignore[no-untyped-call]
