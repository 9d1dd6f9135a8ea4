"""gradkit.nn: PyTorch-shaped entry points (gradkit.nn.functional)."""
from . import functional

__all__ = ["functional"]
