"""A rank's identity: torchrun's variables, or Open MPI's, PMI's or Slurm's, and torchrun's names
set from them so that code written for torchrun runs unchanged."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class RankEnv:
    """This rank's identity, from torchrun-style variables or Open MPI's / PMI's / Slurm's."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int

    @classmethod
    def from_environ(cls, environ: dict[str, str] | os._Environ[str] = os.environ) -> RankEnv:
        def first(*names: str, default: str | None = None) -> int:
            for name in names:
                if name in environ:
                    return int(environ[name])
            if default is None:
                raise KeyError(f"none of {', '.join(names)} is set")
            return int(default)

        rank = first("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
        world = first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
        local = first(
            "LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "MPI_LOCALRANKID",
            "SLURM_LOCALID",
            default="0",
        )
        slurm_nodes = environ.get("SLURM_STEP_NUM_NODES") or environ.get("SLURM_NNODES")
        slurm_local_size = str(world // int(slurm_nodes)) if slurm_nodes else "1"
        local_size = first(
            "LOCAL_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_SIZE",
            "MPI_LOCALNRANKS",
            default=slurm_local_size if "SLURM_PROCID" in environ else "1",
        )
        # (OMPI_COMM_WORLD_NODE_RANK is not the node's index: it counts ranks on the node)
        node = first("GROUP_RANK", "SLURM_NODEID", default=str(rank // local_size))
        return cls(rank, world, local, local_size, node)

    def export(self) -> None:
        """Set torchrun's names, so code written for torchrun runs unchanged (under MPI too)."""
        os.environ.update(
            RANK=str(self.rank),
            WORLD_SIZE=str(self.world_size),
            LOCAL_RANK=str(self.local_rank),
            LOCAL_WORLD_SIZE=str(self.local_world_size),
            GROUP_RANK=str(self.node_rank),
            NODE_RANK=str(self.node_rank),
        )
