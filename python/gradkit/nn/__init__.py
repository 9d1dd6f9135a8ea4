"""gradkit.nn: PyTorch-shaped entry points: gradkit.nn.functional (scaled_dot_product_attention) and modules that
carry an operator's parameters (MhcPre, Compressor)."""
from . import functional
from .modules import Compressor, MhcPre

__all__ = ["functional", "MhcPre", "Compressor"]
