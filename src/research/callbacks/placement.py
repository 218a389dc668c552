"""Where the ranks of a distributed run ran: node, host and the address each reached the
rendezvous from, said by every rank in its log and kept by rank zero in metrics.json (`ddp`).

On several nodes a mistake in the cluster's wiring (every rank on one node, a rendezvous over
the wrong interface) still trains; only this record shows it afterwards.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import lightning as L

log = logging.getLogger(__name__)


def _source_address(host: str, port: int) -> str | None:
    """The local address this machine would send from to reach `host:port` (no packet is sent:
    connecting a UDP socket only picks the route)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, port))
            return str(probe.getsockname()[0])
    except OSError:
        return None


def _resolved(host: str) -> str | None:
    try:
        return socket.gethostbyname(host)
    except OSError:
        return None


class RankPlacement(L.Callback):
    """Gathers each rank's placement at the start of fit into `record["ddp"]` (the run's
    metrics.json fields), there at once so that a run a lost rank fails still shows where its
    ranks ran, and the collective backend (nccl on GPUs, gloo on CPUs); nothing without a
    process group (DDP on one GPU has one, of one rank)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        import torch.distributed as dist

        if stage != "fit" or not dist.is_initialized():
            return
        environment = trainer.strategy.cluster_environment
        main = (str(environment.main_address), int(environment.main_port))
        mine = {
            "rank": trainer.global_rank,
            "node_rank": trainer.node_rank,
            "local_rank": trainer.local_rank,
            "host": socket.gethostname(),
            "address": _source_address(*main),
        }
        log.info(
            "rank %d of %d: node rank %d on %s (%s); rendezvous %s:%d",
            mine["rank"],
            trainer.world_size,
            mine["node_rank"],
            mine["host"],
            mine["address"],
            *main,
        )
        ranks: list[Any] = [None] * trainer.world_size
        dist.all_gather_object(ranks, mine)
        self.record["ddp"] = {
            "world_size": trainer.world_size,
            "num_nodes": trainer.num_nodes,
            "backend": dist.get_backend(),
            "rendezvous": {"host": main[0], "address": _resolved(main[0]), "port": main[1]},
            "ranks": ranks,
        }
