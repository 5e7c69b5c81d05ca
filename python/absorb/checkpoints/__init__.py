"""Safetensors checkpoints: reading, the table of architectures, detection, per-layer inspection
(the whole-checkpoint ``inspect_checkpoint`` is :mod:`absorb.scan.inspect`).

* :mod:`.reading` — a file, a folder or a sharded index, read lazily (memory-mapped);
* :mod:`.architectures` — known MLP layouts: tensor-name patterns, nn.Linear vs Conv1D,
  activation and gating from ``config.json``;
* :mod:`.detection` — which layout a checkpoint has, its orientation checked;
* :mod:`.inspection` — each layer's block, cost (predicted before it is read), row, and the
  summary table.
"""

from absorb.checkpoints.architectures import ARCHITECTURES, Architecture, get_architecture
from absorb.checkpoints.detection import Plan, detect
from absorb.checkpoints.inspection import matmul_rate
from absorb.checkpoints.reading import Checkpoint

__all__ = ["ARCHITECTURES", "Architecture", "Checkpoint", "Plan", "detect", "get_architecture",
           "matmul_rate"]
