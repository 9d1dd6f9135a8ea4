"""cann_ops_transformer.ops: the operators of upstream's torch extension that gradkit implements (the compressor,
mhc_post)."""
from .. import autograd

__all__ = ["compressor", "mhc_post"]


def compressor(x, wkv, wgate, state_cache, ape, cmp_ratio=4, *, state_block_table=None, cu_seqlens=None,
               seqused=None, start_pos=None, coff=1, cache_mode=1):
    """Upstream's `compressor(x, wkv, wgate, state_cache, ape, cmp_ratio=4, *, state_block_table=None,
    cu_seqlens=None, seqused=None, start_pos=None, coff=1, cache_mode=1) -> Tensor`: aclnnCompressor with autograd
    (aclnnCompressorGrad), returning cmp_kv; state_cache is written in place. As upstream, gradients flow to x, wkv,
    wgate and ape only. Differences: the intermediates of the backward are kept when any of x, wkv, wgate, ape
    needs a gradient (upstream: x only), and state_cache None is accepted (a zero cache, nothing kept; see
    gradkit.ops.compressor)."""
    return autograd.compressor(x, wkv, wgate, ape, cmp_ratio, state_cache=state_cache,
                               state_block_table=state_block_table, cu_seqlens=cu_seqlens, seqused=seqused,
                               start_pos=start_pos, coff=coff, cache_mode=cache_mode)


def mhc_post(x, h_res, h_out, h_post):
    """Upstream's `mhc_post(x, h_res, h_out, h_post) -> Tensor`: aclnnMhcPost with autograd (aclnnMhcPostBackward).
    h_res None (the Ascend950 profile only) skips the residual mapping: x + h_out * h_post."""
    return autograd.mhc_post(x, h_res, h_out, h_post)
