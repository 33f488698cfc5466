"""Masked diffusion models with adaptive unmasking order (Kim, Shah, Kontonis, Kakade & Chen,
"Train for the Worst, Plan for the Best", ICML 2025).

The puzzle engines ``icml25.mdm.sudoku`` and ``icml25.mdm.zebra`` are pure NumPy; everything
that touches a model needs the ``torch`` extra and is imported on first use.

``generate`` decodes with any masked-diffusion denoiser (ours or a Hugging Face masked LM)::

    from icml25.mdm import generate
    ids = generate(model, prompt_ids, mask_id=tok.mask_token_id, gen_length=32, steps=32)

Example (uses the shipped checkpoint)::

    from icml25.mdm import solve_sudoku
    solve_sudoku("530070000600195000098000060800060003400803001700020006060000280000419005000080079")
"""

from __future__ import annotations

import importlib

_TORCH_NAMES = {
    "generate": "decoding",
    "generate_stream": "decoding",
    "Generation": "decoding",
    "K_SCHEDULES": "planners",
    "REMASK_SCHEDULES": "remask",
    "mask_tokens": "objective",
    "mdm_loss": "objective",
    "PLANNERS": "planners",
    "select_top_k": "planners",
    "sample": "sampler",
    "SolveResult": "sudoku_mdm",
    "default_model_config": "sudoku_mdm",
    "evaluate": "sudoku_mdm",
    "load_model": "sudoku_mdm",
    "solve_grids": "sudoku_mdm",
    "solve_sudoku": "sudoku_mdm",
    "train_sudoku": "sudoku_mdm",
}

__all__ = sorted(_TORCH_NAMES)


def __getattr__(name: str):
    if name in _TORCH_NAMES:
        from icml25.core.errors import require_extra

        require_extra("torch", "torch")
        module = importlib.import_module(f"icml25.mdm.{_TORCH_NAMES[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'icml25.mdm' has no attribute {name!r}")
