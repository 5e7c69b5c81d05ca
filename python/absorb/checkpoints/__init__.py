"""Safetensors checkpoints: reading, the table of architectures, detection, inspection.

* :mod:`.reading` — a file, a folder or a sharded index, read lazily (memory-mapped);
* :mod:`.architectures` — known MLP layouts: tensor-name patterns, nn.Linear vs Conv1D,
  activation and gating from ``config.json``;
* :mod:`.detection` — which layout a checkpoint has, its orientation checked;
* :mod:`.inspection` — ``decide`` on every layer, its cost predicted and checked first.
"""

from absorb.checkpoints.architectures import ARCHITECTURES, Architecture, get_architecture
from absorb.checkpoints.detection import Plan, detect
from absorb.checkpoints.inspection import inspect_checkpoint, matmul_rate, text_lines
from absorb.checkpoints.reading import Checkpoint

__all__ = ["ARCHITECTURES", "Architecture", "Checkpoint", "Plan", "detect", "get_architecture",
           "inspect_checkpoint", "matmul_rate", "text_lines"]
