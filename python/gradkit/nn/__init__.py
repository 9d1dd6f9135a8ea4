"""gradkit.nn: PyTorch-shaped entry points: gradkit.nn.functional (scaled_dot_product_attention) and modules that
carry an operator's parameters (MhcPre, Compressor) or wrap a sub-layer in a whole layer (HyperConnection: mHC)."""
from . import functional
from .modules import Compressor, HyperConnection, MhcPre

__all__ = ["functional", "MhcPre", "HyperConnection", "Compressor"]
