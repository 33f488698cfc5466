"""A small transformer and a trainer you can read top to bottom (nanoGPT-style), shared by the
rooms that train networks (mdm, creativity). Needs the ``torch`` extra."""

from icml25.core.errors import require_extra

require_extra("torch", "torch")

from icml25.nn.device import inference_batch_size, resolve_device  # noqa: E402
from icml25.nn.flops import matmul_peak_flops, training_flops  # noqa: E402
from icml25.nn.model import KVCache, Transformer, TransformerConfig  # noqa: E402
from icml25.nn.precision import PRECISIONS  # noqa: E402
from icml25.nn.trainer import (  # noqa: E402
    TrainConfig,
    TrainState,
    cosine_lr,
    is_main_process,
    train,
)

__all__ = ["PRECISIONS", "KVCache", "TrainConfig", "TrainState", "Transformer", "TransformerConfig",
           "cosine_lr", "inference_batch_size", "is_main_process", "matmul_peak_flops",
           "resolve_device", "train", "training_flops"]
