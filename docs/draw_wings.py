"""Draw the wings of the package from its real imports: `python docs/draw_wings.py > wings.dot`
then `dot -Tsvg wings.dot -o docs/wings.svg` (Graphviz). Run with python/ on PYTHONPATH.

A wing is a sub-package (each backend apart) or one of the top floor's modules named below; the
small shared modules (spec, errors, events, settings, ...) are left out so the drawing shows the
architecture. An arrow is "imports"."""

from __future__ import annotations

import grimp

WINGS = (
    "magics", "session", "recorder", "sweep_runner", "interface", "ioloop",
    "backends", "cluster", "history", "protocol", "worker", "server",
)  # fmt: skip
FLOORS = (
    ("magics",), ("session",), ("sweep_runner",), ("recorder",),
    ("backends",),
    ("backends.local", "backends.mpi", "backends.slurm", "backends.ray", "backends.sagemaker"),
    ("cluster",), ("interface",), ("history",), ("ioloop", "protocol"),
)  # fmt: skip


def wing(module: str) -> str | None:
    parts = module.split(".")[1:]
    if not parts or parts[0] not in WINGS:
        return None
    if parts[0] == "backends" and len(parts) > 1 and parts[1] != "plugin":
        return f"backends.{parts[1]}"
    return parts[0]


def main() -> None:
    graph = grimp.build_graph("jupyter_distributed")
    edges = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = wing(module), wing(imported)
            if a and b and a != b:
                edges.add((a, b))
    print("digraph wings {\n  rankdir=TB; node [shape=box, fontname=Helvetica];")
    for floor in FLOORS:
        print("  { rank=same; " + " ".join(f'"{n}";' for n in floor) + " }")
    print('  "worker" [style=dashed]; "server" [style=dashed];')
    for a, b in sorted(edges):
        print(f'  "{a}" -> "{b}";')
    print("}")


if __name__ == "__main__":
    main()
