"""gradkit.nn: PyTorch-shaped entry points: gradkit.nn.functional (scaled_dot_product_attention) and modules that
carry an operator's parameters (MhcPre)."""
from . import functional
from .modules import MhcPre

__all__ = ["functional", "MhcPre"]
