"""gradkit: Huawei CANN's aclnn operators on the CPU, from Python (docs/python.md).

  gradkit.relu, gradkit.dropout, gradkit.mhc_pre, gradkit.mhc_post,
  gradkit.mhc_sinkhorn, gradkit.mhc_pre_sinkhorn,
  gradkit.block_attention_residuals, gradkit.compressor,
  gradkit.flash_attention, gradkit.sparse_flash_mla,
  gradkit.lightning_indexer,
  gradkit.lightning_indexer_kl_loss                torch.autograd functions (need torch)
  gradkit.nn.functional, gradkit.nn.MhcPre,
  gradkit.nn.Compressor,
  gradkit.nn.CompressedSparseAttention             torch.nn.functional drop-ins (scaled_dot_product_attention),
                                                   modules holding an operator's parameters
  gradkit.library                                  the operators as torch.ops.gradkit custom ops (torch >= 2.4)
  gradkit.ops                                      the raw operators, on torch tensors or numpy arrays
  gradkit.torch_npu                                torch_npu's names and keywords for the same operators
  gradkit.cann_ops_transformer                     the names of upstream's torch extension (compressor,
                                                   mhc_post, mhc_pre_sinkhorn, block_attention_residuals)
  gradkit.reference                                pure-torch reference implementations (need torch)
  gradkit.AclnnError                               raised by a failing operator: .api, .status, .message
"""
from . import _C, ops
from ._arrays import Bf16Array, as_bf16
from ._C import AclnnError

__version__ = _C.version()


def set_soc(name):
    """Chooses the emulated SoC ("Ascend950", "Ascend910B", "Ascend910_93") before the first operator call."""
    _C.set_soc(name)


try:
    import torch as _torch  # noqa: F401
except ImportError:  # numpy only: the raw operators
    pass
else:
    from . import cann_ops_transformer, library, nn, torch_npu
    from .autograd import (block_attention_residuals, compressor, dropout, flash_attention,
                           flash_attention_causal_mask, lightning_indexer, lightning_indexer_kl_loss, mhc_post, mhc_pre,
                           mhc_pre_sinkhorn, mhc_sinkhorn, relu, sparse_flash_mla, sparse_flash_mla_softmax_l1_norm)

__all__ = ["AclnnError", "Bf16Array", "as_bf16", "ops", "set_soc", "relu", "dropout", "mhc_pre", "mhc_post",
           "mhc_sinkhorn", "mhc_pre_sinkhorn", "block_attention_residuals", "torch_npu",
           "compressor", "flash_attention", "flash_attention_causal_mask", "sparse_flash_mla", "lightning_indexer",
           "lightning_indexer_kl_loss", "sparse_flash_mla_softmax_l1_norm", "cann_ops_transformer", "library", "nn"]
