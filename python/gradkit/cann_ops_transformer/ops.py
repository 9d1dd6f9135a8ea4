"""cann_ops_transformer.ops: the operators of upstream's torch extension that gradkit implements (the compressor,
mhc_post, mhc_pre_sinkhorn and block_attention_residuals, the last two with their backwards)."""
from .. import autograd
from .. import ops as _ops

__all__ = ["compressor", "mhc_post", "mhc_pre_sinkhorn", "mhc_pre_sinkhorn_backward", "block_attention_residuals",
           "block_attention_residuals_backward"]


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


def mhc_pre_sinkhorn(x, phi, alpha, bias, hc_mult, num_iters, hc_eps=1e-6, norm_eps=1e-6):
    """Upstream's `mhc_pre_sinkhorn(x, phi, alpha, bias, hc_mult, num_iters, hc_eps=1e-6, norm_eps=1e-6) -> (hin,
    h_post, h_res)`: aclnnMhcPreSinkhorn with autograd (aclnnMhcPreSinkhornBackward); gradients flow to x, phi,
    alpha and bias. gradkit.mhc_pre_sinkhorn has the limits (hc_mult 4, num_iters 20)."""
    return autograd.mhc_pre_sinkhorn(x, phi, alpha, bias, hc_mult, num_iters, hc_eps, norm_eps)


def mhc_pre_sinkhorn_backward(grad_hin, grad_h_post, grad_h_res, x, phi, alpha, bias, h_pre, hc_before_norm, inv_rms,
                              sum_out, norm_out, hc_eps=1e-6):
    """Upstream's `mhc_pre_sinkhorn_backward(grad_hin, grad_h_post, grad_h_res, x, phi, alpha, bias, h_pre,
    hc_before_norm, inv_rms, sum_out, norm_out, hc_eps) -> (grad_x, grad_phi, grad_alpha, grad_bias)`: one call of
    aclnnMhcPreSinkhornBackward (no autograd) on the saved tensors of gradkit.ops.mhc_pre_sinkhorn."""
    return tuple(_ops.mhc_pre_sinkhorn_backward(grad_hin, grad_h_post, grad_h_res, x, phi, alpha, bias, h_pre,
                                                hc_before_norm, inv_rms, sum_out, norm_out, hc_eps=hc_eps))


def block_attention_residuals(partial_block, block_res, proj_weight, norm_weight, valid_block_num=-1, norm_eps=1e-6):
    """Upstream's `block_attention_residuals(partial_block, block_res, proj_weight, norm_weight, valid_block_num=-1,
    norm_eps=1e-6) -> Tensor`: aclnnBlockAttentionResiduals with autograd (aclnnBlockAttentionResidualsGrad);
    gradients flow to all four inputs. As upstream, the forward keeps inv_norm and probs for the backward when an
    input needs a gradient (gradkit.block_attention_residuals has the shapes and limits)."""
    return autograd.block_attention_residuals(partial_block, block_res, proj_weight, norm_weight, valid_block_num,
                                              norm_eps)


def block_attention_residuals_backward(partial_block, block_res, proj_weight, norm_weight, grad_hidden_states,
                                       inv_norm, probs, *, valid_block_num=0):
    """Upstream's `block_attention_residuals_backward(partial_block, block_res, proj_weight, norm_weight,
    grad_hidden_states, inv_norm, probs, *, valid_block_num=0) -> (grad_partial, grad_block_res, grad_proj,
    grad_norm)`: one call of aclnnBlockAttentionResidualsGrad (no autograd) on the inv_norm and probs of
    gradkit.ops.block_attention_residuals; proj_weight [1, H] (grad_proj [1, H])."""
    return tuple(_ops.block_attention_residuals_grad(partial_block, block_res, proj_weight, norm_weight,
                                                     grad_hidden_states, inv_norm, probs,
                                                     valid_block_num=valid_block_num))
