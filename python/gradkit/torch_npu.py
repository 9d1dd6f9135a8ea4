"""torch_npu's public functions for the operators gradkit implements, with torch_npu's names, positional
arguments and keywords, so that a script written for Ascend runs on the CPU by changing its import:

    import gradkit.torch_npu as torch_npu

Names found in torch_npu's documentation and op-plugin sources (docs/python.md lists them):
  _npu_dropout(self, p) -> (Tensor, Tensor)
  npu_mhc_pre(x, phi, alpha, bias, *, gamma=None, norm_eps=1e-6, hc_eps=1e-6, out_flag=0, inner_precise=0)
      -> (h_in, h_post, h_res, inv_rms, h_mix, h_pre)
  npu_mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post, *,
      gamma=None, hc_eps=1e-6, grad_x_post=None) -> (grad_x, grad_phi, grad_alpha, grad_bias, grad_gamma)
Like torch_npu's, these are plain operator calls without autograd (use gradkit.dropout / gradkit.mhc_pre for
that). Flash attention gets its torch_npu names here when that operator lands. The compressor has no torch_npu
function (torch_npu.npu_compressor / torch.ops.custom.npu_compressor are a different inference operator with RMSNorm
and RoPE): upstream exposes it in its torch extension, whose names are gradkit.cann_ops_transformer."""
import torch

from . import ops

__all__ = ["_npu_dropout", "npu_mhc_pre", "npu_mhc_pre_backward"]


def _npu_dropout(self, p):
    """Dropout with a seed from torch's global generator: (output, packed UINT8 keep mask)."""
    return ops.native_dropout(self, p, True)


def npu_mhc_pre(x, phi, alpha, bias, *, gamma=None, norm_eps=1e-6, hc_eps=1e-6, out_flag=0, inner_precise=0):
    """aclnnMhcPre (inner_precise 0) or aclnnMhcPreV2 with HF32 matmul operands (inner_precise 1). out_flag 1
    also writes inv_rms, h_mix and h_pre (the backward's caches); with out_flag 0 they are returned as zeros of
    their shapes (torch_npu returns them unwritten)."""
    if out_flag not in (0, 1):
        raise ValueError(f"out_flag must be 0 or 1, but got {out_flag}.")
    if inner_precise not in (0, 1):
        raise ValueError(f"inner_precise must be 0 or 1, but got {inner_precise}.")
    mode = None if inner_precise == 0 else 1
    out = ops.mhc_pre(x, phi, alpha, bias, gamma, norm_eps=norm_eps, hc_eps=hc_eps, op_impl_mode=mode,
                      caches=bool(out_flag))
    if out_flag:
        return tuple(out)
    lead, n, rows = tuple(x.shape[:-2]), x.shape[-2], phi.shape[0]
    zeros = torch.zeros
    return (out.h_in, out.h_post, out.h_res, zeros(lead), zeros(lead + (rows,)), zeros(lead + (n,)))


def npu_mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post, *,
                         gamma=None, hc_eps=1e-6, grad_x_post=None):
    """aclnnMhcPreBackward: (grad_x, grad_phi, grad_alpha, grad_bias, grad_gamma). Without gamma, grad_gamma is a
    zero [N, D] tensor (torch_npu returns it unwritten)."""
    grad_gamma = None if gamma is not None else torch.zeros(tuple(x.shape[-2:]))
    grads = ops.mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post,
                                 gamma, grad_x_post=grad_x_post, hc_eps=hc_eps, grad_gamma=grad_gamma)
    return tuple(grads)
