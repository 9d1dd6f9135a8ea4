"""The compressor, mhc_post, mhc_pre_sinkhorn and block_attention_residuals under the names of upstream's PyTorch
extension (ops-transformer's torch_extension package `cann_ops_transformer`), so that a script written for it runs on
the CPU by changing its import:

    import gradkit.cann_ops_transformer as cann_ops_transformer      # or: import gradkit.cann_ops_transformer.ops

torch_npu itself has no public function for aclnnCompressor (docs/python.md, "torch_npu names"): the extension is
where upstream exposes it, as `cann_ops_transformer.ops.compressor` (also reachable here as `compressor`); so is
`mhc_post`, `mhc_pre_sinkhorn` / `mhc_pre_sinkhorn_backward` and `block_attention_residuals` /
`block_attention_residuals_backward`."""
from . import ops
from .ops import (block_attention_residuals, block_attention_residuals_backward, compressor, mhc_post, mhc_pre_sinkhorn,
                  mhc_pre_sinkhorn_backward)

__all__ = ["compressor", "mhc_post", "mhc_pre_sinkhorn", "mhc_pre_sinkhorn_backward", "block_attention_residuals",
           "block_attention_residuals_backward", "ops"]
