"""gradkit.nn: PyTorch-shaped entry points: gradkit.nn.functional (scaled_dot_product_attention) and modules that
carry an operator's parameters (MhcPre, Compressor), wrap a sub-layer in a whole layer (HyperConnection: mHC) or make
a whole layer of several operators (CompressedSparseAttention: DeepSeek-V4's CSA / HCA attention)."""
from . import functional
from .modules import Compressor, HyperConnection, MhcPre
from .sparse_attention import CompressedSparseAttention

__all__ = ["functional", "MhcPre", "HyperConnection", "Compressor", "CompressedSparseAttention"]
