"""gradkit's operators as PyTorch custom operators (torch.library, torch >= 2.4), under torch.ops.gradkit.*:
each has a fake (meta) kernel computing its outputs' shapes and dtypes from the library's own size model, so that
torch.compile(fullgraph=True) and torch.export trace them, and its backward registered with setup_context.
gradkit.autograd's functions call them while torch.compile / torch.export trace (use_custom_ops) and their
torch.autograd.Functions otherwise (eager, torch.func, Debian's torch 1.13).

Each op takes every argument explicitly (no defaults, no random draws inside: a dropout seed is drawn by the caller),
so that the same inputs give the same outputs, as torch.library.opcheck requires. The backward ops have no backward
of their own: a second derivative raises."""
from typing import List, Optional, Tuple

import torch

from . import _backward, ops

NAMESPACE = "gradkit"
AVAILABLE = hasattr(torch, "library") and hasattr(torch.library, "custom_op")

Tensor = torch.Tensor


def use_custom_ops():
    """Whether a gradkit.autograd function should call the custom op: while torch.compile or torch.export traces
    (they need the op's fake kernel and registered autograd). Eager calls, and torch.func transforms (torch.func.grad
    needs an autograd.Function with setup_context; custom ops do not support it in torch 2.15), keep the
    torch.autograd.Function: the same kernels, without the custom op's dispatch (about 0.1 ms a call, 20 % of a 1M
    element ReLU forward + backward)."""
    if not AVAILABLE:
        return False
    compiler = getattr(torch, "compiler", None)
    return compiler is not None and bool(compiler.is_compiling() or getattr(compiler, "is_exporting", lambda: False)())


# The flash attention op's integer-list arguments, in its order.
FA_LIST_OPTIONS = ("prefix", "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx", "kv_start_idx")


def _fa_options(scale, keep_prob, pre_tokens, next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen,
                actual_seq_kvlen, q_start_idx, kv_start_idx, seed, offset, inner_precise):
    """The keyword arguments gradkit.ops' flash attention entry points take."""
    return dict(scale=scale, keep_prob=keep_prob, pre_tokens=pre_tokens, next_tokens=next_tokens,
                sparse_mode=sparse_mode, pse_type=pse_type, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
                actual_seq_kvlen=actual_seq_kvlen, q_start_idx=q_start_idx, kv_start_idx=kv_start_idx, seed=seed,
                offset=offset, inner_precise=inner_precise)


if AVAILABLE:

    @torch.library.custom_op(f"{NAMESPACE}::flash_attention_score", mutates_args=())
    def flash_attention_score(query: Tensor, key: Tensor, value: Tensor, pse: Optional[Tensor],
                              atten_mask: Optional[Tensor], drop_mask: Optional[Tensor], head_num: int,
                              input_layout: str, scale: float, keep_prob: float, pre_tokens: int, next_tokens: int,
                              sparse_mode: int, pse_type: int, prefix: Optional[List[int]],
                              actual_seq_qlen: Optional[List[int]], actual_seq_kvlen: Optional[List[int]],
                              q_start_idx: Optional[List[int]], kv_start_idx: Optional[List[int]], seed: int,
                              offset: int, inner_precise: int) -> Tuple[Tensor, Tensor, Tensor]:
        """gradkit.ops.flash_attention_score as a custom op: (attention_out, softmax_max, softmax_sum)."""
        out = ops.flash_attention_score(
            query, key, value, head_num, input_layout, pse=pse, atten_mask=atten_mask, drop_mask=drop_mask,
            **_fa_options(scale, keep_prob, pre_tokens, next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen,
                          actual_seq_kvlen, q_start_idx, kv_start_idx, seed, offset, inner_precise))
        return out.attention_out, out.softmax_max, out.softmax_sum

    @flash_attention_score.register_fake
    def _(query, key, value, pse, atten_mask, drop_mask, head_num, input_layout, scale, keep_prob, pre_tokens,
          next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen, actual_seq_kvlen, q_start_idx, kv_start_idx,
          seed, offset, inner_precise):
        sizes = ops._fa_sizes(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen)
        out = query.new_empty(tuple(sizes["out_shape"]))
        stats = tuple(sizes["stats_shape"])
        return out, query.new_empty(stats, dtype=torch.float32), query.new_empty(stats, dtype=torch.float32)

    @torch.library.custom_op(f"{NAMESPACE}::flash_attention_score_grad", mutates_args=())
    def flash_attention_score_grad(query: Tensor, key: Tensor, value: Tensor, dy: Tensor, pse: Optional[Tensor],
                                   atten_mask: Optional[Tensor], drop_mask: Optional[Tensor], softmax_max: Tensor,
                                   softmax_sum: Tensor, attention_in: Tensor, head_num: int, input_layout: str,
                                   scale: float, keep_prob: float, pre_tokens: int, next_tokens: int,
                                   sparse_mode: int, pse_type: int, prefix: Optional[List[int]],
                                   actual_seq_qlen: Optional[List[int]], actual_seq_kvlen: Optional[List[int]],
                                   q_start_idx: Optional[List[int]], kv_start_idx: Optional[List[int]], seed: int,
                                   offset: int, inner_precise: int) -> Tuple[Tensor, Tensor, Tensor]:
        """gradkit.ops.flash_attention_score_grad as a custom op: (dq, dk, dv)."""
        grads = ops.flash_attention_score_grad(
            query, key, value, dy.contiguous(), head_num, input_layout, softmax_max, softmax_sum, attention_in,
            pse=pse, atten_mask=atten_mask, drop_mask=drop_mask,
            **_fa_options(scale, keep_prob, pre_tokens, next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen,
                          actual_seq_kvlen, q_start_idx, kv_start_idx, seed, offset, inner_precise))
        return grads.dq, grads.dk, grads.dv

    @flash_attention_score_grad.register_fake
    def _(query, key, value, dy, *rest):
        return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape)

    _FA_TENSORS = ("query", "key", "value", "pse", "atten_mask", "drop_mask")
    _FA_ATTRIBUTES = ("head_num", "input_layout", "scale", "keep_prob", "pre_tokens", "next_tokens", "sparse_mode",
                      "pse_type", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx", "kv_start_idx",
                      "seed", "offset", "inner_precise")

    def _fa_setup_context(ctx, inputs, output):
        named = dict(zip(_FA_TENSORS + _FA_ATTRIBUTES, inputs))
        ctx.save_for_backward(*(named[k] for k in _FA_TENSORS), *output)
        ctx.attributes = [named[k] for k in _FA_ATTRIBUTES]

    def _fa_backward(ctx, grad_out, _grad_max, _grad_sum):
        query, key, value, pse, atten_mask, drop_mask, out, softmax_max, softmax_sum = ctx.saved_tensors
        dq, dk, dv = flash_attention_score_grad(query, key, value, grad_out, pse, atten_mask, drop_mask, softmax_max,
                                                softmax_sum, out, *ctx.attributes)
        return (dq, dk, dv) + (None,) * (len(_FA_TENSORS) - 3 + len(_FA_ATTRIBUTES))

    flash_attention_score.register_autograd(_fa_backward, setup_context=_fa_setup_context)

    # ReLU: torch's forward, aclnnThresholdBackward as its backward (as PyTorch's own ReLU).
    @torch.library.custom_op(f"{NAMESPACE}::threshold_backward", mutates_args=())
    def threshold_backward(grad_output: Tensor, self: Tensor, threshold: float) -> Tensor:
        """gradkit.ops.threshold_backward: grad_output where self > threshold, else 0 (broadcast shape)."""
        return ops.threshold_backward(grad_output, self, threshold)

    @threshold_backward.register_fake
    def _(grad_output, self, threshold):
        return grad_output.new_empty(torch.broadcast_shapes(grad_output.shape, self.shape))

    @torch.library.custom_op(f"{NAMESPACE}::relu", mutates_args=())
    def relu(x: Tensor) -> Tensor:
        """max(x, 0) (torch's forward) whose backward is gradkit's threshold_backward."""
        return torch.relu(x)

    @relu.register_fake
    def _(x):
        return torch.empty_like(x)

    relu.register_autograd(_backward.relu_backward(threshold_backward), setup_context=_backward.relu_setup)

    # Dropout: native_dropout (out and the packed keep mask) and its backward with that mask.
    @torch.library.custom_op(f"{NAMESPACE}::native_dropout", mutates_args=())
    def native_dropout(input: Tensor, p: float, train: bool, seed: int, offset: int) -> Tuple[Tensor, Tensor]:
        """gradkit.ops.native_dropout: (out, packed UINT8 keep mask) from the Philox stream of (seed, offset)."""
        return ops.native_dropout(input, p, train, seed=seed, offset=offset)

    def _native_dropout_fake(input, p, train, seed, offset):
        mask_bytes = ops.dropout_mask_bytes(input.numel())
        return input.new_empty(input.shape), input.new_empty((mask_bytes,), dtype=torch.uint8)

    native_dropout.register_fake(_native_dropout_fake)

    # The same with the seed as a 1-element INT64 tensor: a seed drawn by torch.randint inside a traced region stays
    # in the graph (an int seed would need the tensor's value while tracing, which fullgraph refuses).
    @torch.library.custom_op(f"{NAMESPACE}::native_dropout_seed_tensor", mutates_args=())
    def native_dropout_seed_tensor(input: Tensor, p: float, train: bool, seed: Tensor,
                                   offset: int) -> Tuple[Tensor, Tensor]:
        """gradkit.ops.native_dropout with seed = int(seed): (out, packed UINT8 keep mask)."""
        return ops.native_dropout(input, p, train, seed=int(seed.reshape(()).item()), offset=offset)

    native_dropout_seed_tensor.register_fake(_native_dropout_fake)  # the seed's value does not shape the outputs

    @torch.library.custom_op(f"{NAMESPACE}::native_dropout_backward", mutates_args=())
    def native_dropout_backward(grad: Tensor, mask: Tensor, scale: float) -> Tensor:
        """gradkit.ops.native_dropout_backward: grad * keep * scale."""
        return ops.native_dropout_backward(grad, mask, scale)

    @native_dropout_backward.register_fake
    def _(grad, mask, scale):
        return grad.new_empty(grad.shape)

    native_dropout_seed_tensor.register_autograd(_backward.dropout_backward(native_dropout_backward),
                                                 setup_context=_backward.dropout_setup)
    native_dropout.register_autograd(_backward.dropout_backward(native_dropout_backward),
                                     setup_context=_backward.dropout_setup)

    # mHC pre-mapping with alpha [3] (h_res) and the caches; the backward's grad_gamma is an empty tensor without gamma.
    @torch.library.custom_op(f"{NAMESPACE}::mhc_pre", mutates_args=())
    def mhc_pre(x: Tensor, phi: Tensor, alpha: Tensor, bias: Tensor, gamma: Optional[Tensor], norm_eps: float,
                hc_eps: float, op_impl_mode: Optional[int]) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
        """gradkit.ops.mhc_pre (alpha [3]): (h_in, h_post, h_res, inv_rms, h_mix, h_pre)."""
        return tuple(ops.mhc_pre(x, phi, alpha, bias, gamma, norm_eps=norm_eps, hc_eps=hc_eps,
                                 op_impl_mode=op_impl_mode))

    def _mhc_pre_fakes(x, phi):
        """Fake (h_in, h_post, inv_rms, h_mix, h_pre) of the pre-mapping: every output but h_res."""
        lead, n, d, rows = tuple(x.shape[:-2]), x.shape[-2], x.shape[-1], phi.shape[0]
        fp32 = dict(dtype=torch.float32)
        return (x.new_empty(lead + (d,)), x.new_empty(lead + (n,), **fp32), x.new_empty(lead, **fp32),
                x.new_empty(lead + (rows,), **fp32), x.new_empty(lead + (n,), **fp32))

    @mhc_pre.register_fake
    def _(x, phi, alpha, bias, gamma, norm_eps, hc_eps, op_impl_mode):
        h_in, h_post, inv_rms, h_mix, h_pre = _mhc_pre_fakes(x, phi)
        tail = tuple(ops._C.mhc_residual_tail(x.shape[-2], phi.shape[0]))
        return h_in, h_post, x.new_empty(tuple(x.shape[:-2]) + tail, dtype=torch.float32), inv_rms, h_mix, h_pre

    @torch.library.custom_op(f"{NAMESPACE}::mhc_pre_backward", mutates_args=())
    def mhc_pre_backward(x: Tensor, phi: Tensor, alpha: Tensor, grad_h_in: Tensor, grad_h_post: Tensor,
                         grad_h_res: Tensor, inv_rms: Tensor, h_mix: Tensor, h_pre: Tensor, h_post: Tensor,
                         gamma: Optional[Tensor], hc_eps: float,
                         op_impl_mode: Optional[int]) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """gradkit.ops.mhc_pre_backward: (grad_x, grad_phi, grad_alpha, grad_bias, grad_gamma or an empty tensor)."""
        grads = ops.mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post,
                                     gamma, hc_eps=hc_eps, op_impl_mode=op_impl_mode)
        grad_gamma = grads.grad_gamma if gamma is not None else x.new_empty((0,), dtype=torch.float32)
        return grads.grad_x, grads.grad_phi, grads.grad_alpha, grads.grad_bias, grad_gamma

    @mhc_pre_backward.register_fake
    def _(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post, gamma, hc_eps,
          op_impl_mode):
        fp32 = dict(dtype=torch.float32)
        grad_gamma = x.new_empty(gamma.shape if gamma is not None else (0,), **fp32)
        return (x.new_empty(x.shape), phi.new_empty(phi.shape, **fp32), x.new_empty((3,), **fp32),
                x.new_empty((phi.shape[0],), **fp32), grad_gamma)

    def _mhc_setup_context(ctx, inputs, output):
        x, phi, alpha, _bias, gamma, _norm_eps, hc_eps, op_impl_mode = inputs
        _h_in, h_post, h_res, inv_rms, h_mix, h_pre = output
        ctx.save_for_backward(x, phi, alpha, gamma, inv_rms, h_mix, h_pre, h_post)
        ctx.hc_eps, ctx.op_impl_mode, ctx.res_shape = hc_eps, op_impl_mode, h_res.shape
        ctx.mark_non_differentiable(inv_rms, h_mix, h_pre)

    def _mhc_backward(ctx, grad_h_in, grad_h_post, grad_h_res, *_caches):
        x, phi, alpha, gamma, inv_rms, h_mix, h_pre, h_post = ctx.saved_tensors
        grad_h_in, grad_h_post, grad_h_res = _backward.mhc_output_grads(x, h_post, ctx.res_shape, grad_h_in,
                                                                        grad_h_post, grad_h_res)
        grads = mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post,
                                 gamma, ctx.hc_eps, ctx.op_impl_mode)
        return grads[0], grads[1], grads[2], grads[3], grads[4] if gamma is not None else None, None, None, None

    mhc_pre.register_autograd(_mhc_backward, setup_context=_mhc_setup_context)

    # mHC pre-mapping with alpha [2]: no residual block, so no h_res and no backward (upstream has none).
    @torch.library.custom_op(f"{NAMESPACE}::mhc_pre_no_residual", mutates_args=())
    def mhc_pre_no_residual(x: Tensor, phi: Tensor, alpha: Tensor, bias: Tensor, gamma: Optional[Tensor],
                            norm_eps: float, hc_eps: float,
                            op_impl_mode: Optional[int]) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """gradkit.ops.mhc_pre with alpha [2]: (h_in, h_post, inv_rms, h_mix, h_pre)."""
        out = ops.mhc_pre(x, phi, alpha, bias, gamma, norm_eps=norm_eps, hc_eps=hc_eps, op_impl_mode=op_impl_mode)
        return out.h_in, out.h_post, out.inv_rms, out.h_mix, out.h_pre

    @mhc_pre_no_residual.register_fake
    def _(x, phi, alpha, bias, gamma, norm_eps, hc_eps, op_impl_mode):
        return _mhc_pre_fakes(x, phi)

    def _no_residual_backward(ctx, *grads):
        raise NotImplementedError("aclnnMhcPreBackward has no alpha [2] variant (no h_res)")

    mhc_pre_no_residual.register_autograd(_no_residual_backward, setup_context=lambda ctx, inputs, output: None)

    # mHC post-mapping; h_res None is the plain residual (its gradient output is then still written, and dropped).
    @torch.library.custom_op(f"{NAMESPACE}::mhc_post", mutates_args=())
    def mhc_post(x: Tensor, h_res: Optional[Tensor], h_out: Tensor, h_post: Tensor) -> Tensor:
        """gradkit.ops.mhc_post."""
        return ops.mhc_post(x, h_res, h_out, h_post)

    @mhc_post.register_fake
    def _(x, h_res, h_out, h_post):
        return x.new_empty(x.shape)

    @torch.library.custom_op(f"{NAMESPACE}::mhc_post_backward", mutates_args=())
    def mhc_post_backward(grad_output: Tensor, x: Tensor, h_res: Optional[Tensor], h_out: Tensor,
                          h_post: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """gradkit.ops.mhc_post_backward: (grad_x, grad_h_res, grad_h_out, grad_h_post)."""
        return tuple(ops.mhc_post_backward(grad_output, x, h_res, h_out, h_post))

    @mhc_post_backward.register_fake
    def _(grad_output, x, h_res, h_out, h_post):
        lead, n = tuple(x.shape[:-2]), x.shape[-2]
        fp32 = dict(dtype=torch.float32)
        return (x.new_empty(x.shape), x.new_empty(lead + (n, n), **fp32), h_out.new_empty(h_out.shape),
                x.new_empty(lead + (n,), **fp32))

    mhc_post.register_autograd(_backward.mhc_post_backward(mhc_post_backward), setup_context=_backward.mhc_post_setup)

    # mHC Sinkhorn: the saved steps are outputs (not differentiable), empty without save (inference).
    @torch.library.custom_op(f"{NAMESPACE}::mhc_sinkhorn", mutates_args=())
    def mhc_sinkhorn(x: Tensor, eps: float, num_iters: int, save: bool) -> Tuple[Tensor, Tensor, Tensor]:
        """gradkit.ops.mhc_sinkhorn: (output, norm_out, sum_out); the last two empty without save."""
        return _backward.mhc_sinkhorn_forward(x, eps, num_iters, save)

    @mhc_sinkhorn.register_fake
    def _(x, eps, num_iters, save):
        norm_size, sum_size = ops.mhc_sinkhorn_saved_sizes(tuple(x.shape), max(num_iters, 1)) if save else (0, 0)
        fp32 = dict(dtype=torch.float32)
        return x.new_empty(x.shape), x.new_empty((norm_size,), **fp32), x.new_empty((sum_size,), **fp32)

    @torch.library.custom_op(f"{NAMESPACE}::mhc_sinkhorn_backward", mutates_args=())
    def mhc_sinkhorn_backward(grad_output: Tensor, norm_out: Tensor, sum_out: Tensor) -> Tensor:
        """gradkit.ops.mhc_sinkhorn_backward: the gradient of x."""
        return ops.mhc_sinkhorn_backward(grad_output, norm_out, sum_out)

    @mhc_sinkhorn_backward.register_fake
    def _(grad_output, norm_out, sum_out):
        return grad_output.new_empty(grad_output.shape)

    mhc_sinkhorn.register_autograd(_backward.mhc_sinkhorn_backward(mhc_sinkhorn_backward),
                                   setup_context=_backward.mhc_sinkhorn_setup)

    # mHC pre-mapping fused with Sinkhorn: the saved tensors are outputs (not differentiable), empty without
    # need_backward (inference).
    @torch.library.custom_op(f"{NAMESPACE}::mhc_pre_sinkhorn", mutates_args=())
    def mhc_pre_sinkhorn(x: Tensor, phi: Tensor, alpha: Tensor, bias: Tensor, hc_mult: int, num_iters: int,
                         hc_eps: float, norm_eps: float, need_backward: bool) -> Tuple[(Tensor,) * 8]:
        """gradkit.ops.mhc_pre_sinkhorn: (hin, h_post, h_res, h_pre, hc_before_norm, inv_rms, sum_out, norm_out);
        the last five empty without need_backward."""
        return _backward.mhc_pre_sinkhorn_forward(x, phi, alpha, bias, hc_mult, num_iters, hc_eps, norm_eps,
                                                  need_backward)

    @mhc_pre_sinkhorn.register_fake
    def _(x, phi, alpha, bias, hc_mult, num_iters, hc_eps, norm_eps, need_backward):
        shapes = ops.mhc_pre_sinkhorn_shapes(tuple(x.shape), max(num_iters, 1))
        fp32 = dict(dtype=torch.float32)
        saved = [x.new_empty(shapes[name] if need_backward else (0,), **fp32)
                 for name in ("h_pre", "hc_before_norm", "inv_rms", "sum_out", "norm_out")]
        return (x.new_empty(shapes["hin"]), x.new_empty(shapes["h_post"], **fp32),
                x.new_empty(shapes["h_res"], **fp32), *saved)

    @torch.library.custom_op(f"{NAMESPACE}::mhc_pre_sinkhorn_backward", mutates_args=())
    def mhc_pre_sinkhorn_backward(grad_hin: Tensor, grad_h_post: Tensor, grad_h_res: Tensor, x: Tensor, phi: Tensor,
                                  alpha: Tensor, bias: Tensor, h_pre: Tensor, hc_before_norm: Tensor,
                                  inv_rms: Tensor, sum_out: Tensor, norm_out: Tensor,
                                  hc_eps: float) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """gradkit.ops.mhc_pre_sinkhorn_backward: (grad_x, grad_phi, grad_alpha, grad_bias)."""
        return tuple(ops.mhc_pre_sinkhorn_backward(grad_hin, grad_h_post, grad_h_res, x, phi, alpha, bias, h_pre,
                                                   hc_before_norm, inv_rms, sum_out, norm_out, hc_eps=hc_eps))

    @mhc_pre_sinkhorn_backward.register_fake
    def _(grad_hin, grad_h_post, grad_h_res, x, phi, alpha, bias, h_pre, hc_before_norm, inv_rms, sum_out, norm_out,
          hc_eps):
        fp32 = dict(dtype=torch.float32)
        return (x.new_empty(x.shape), phi.new_empty(phi.shape, **fp32), alpha.new_empty(alpha.shape, **fp32),
                bias.new_empty(bias.shape, **fp32))

    mhc_pre_sinkhorn.register_autograd(_backward.mhc_pre_sinkhorn_backward(mhc_pre_sinkhorn_backward),
                                       setup_context=_backward.mhc_pre_sinkhorn_setup)

    # Block attention residuals: inv_norm and probs are outputs (not differentiable), empty without need_backward
    # (inference).
    @torch.library.custom_op(f"{NAMESPACE}::block_attention_residuals", mutates_args=())
    def block_attention_residuals(partial_block: Tensor, block_res: Tensor, proj_weight: Tensor, norm_weight: Tensor,
                                  valid_block_num: int, norm_eps: float,
                                  need_backward: bool) -> Tuple[Tensor, Tensor, Tensor]:
        """gradkit.ops.block_attention_residuals: (hidden_states, inv_norm, probs); the last two empty without
        need_backward."""
        return _backward.block_attention_residuals_forward(partial_block, block_res, proj_weight, norm_weight,
                                                           valid_block_num, norm_eps, need_backward)

    @block_attention_residuals.register_fake
    def _(partial_block, block_res, proj_weight, norm_weight, valid_block_num, norm_eps, need_backward):
        saved = (0,)
        if need_backward:
            saved = ops.block_attention_residuals_saved_shape(partial_block.shape, block_res.shape)
        fp32 = dict(dtype=torch.float32)
        return (partial_block.new_empty(partial_block.shape), partial_block.new_empty(saved, **fp32),
                partial_block.new_empty(saved, **fp32))

    @torch.library.custom_op(f"{NAMESPACE}::block_attention_residuals_grad", mutates_args=())
    def block_attention_residuals_grad(partial_block: Tensor, block_res: Tensor, proj_weight: Tensor,
                                       norm_weight: Tensor, grad_hidden_states: Tensor, inv_norm: Tensor,
                                       probs: Tensor, valid_block_num: int) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """gradkit.ops.block_attention_residuals_grad: (grad_partial_block, grad_block_res, grad_proj_weight,
        grad_norm_weight); proj_weight [1, H]."""
        return tuple(ops.block_attention_residuals_grad(partial_block, block_res, proj_weight, norm_weight,
                                                        grad_hidden_states, inv_norm, probs,
                                                        valid_block_num=valid_block_num))

    @block_attention_residuals_grad.register_fake
    def _(partial_block, block_res, proj_weight, norm_weight, grad_hidden_states, inv_norm, probs, valid_block_num):
        dtype = dict(dtype=partial_block.dtype)
        return (partial_block.new_empty(partial_block.shape), block_res.new_empty(block_res.shape, **dtype),
                proj_weight.new_empty(proj_weight.shape, **dtype), norm_weight.new_empty(norm_weight.shape, **dtype))

    block_attention_residuals.register_autograd(
        _backward.block_attention_residuals_backward(block_attention_residuals_grad),
        setup_context=_backward.block_attention_residuals_setup)

    # The compressor without a state cache (the training case: stateless, nothing written) and its gradient. A call
    # with a state cache writes it in place, which a custom op with a backward cannot declare: that one stays a
    # gradkit.autograd.Function (a graph break under torch.compile).
    @torch.library.custom_op(f"{NAMESPACE}::compressor", mutates_args=())
    def compressor(x: Tensor, wkv: Tensor, wgate: Tensor, ape: Tensor, cu_seqlens: Optional[Tensor],
                   seqused: Optional[Tensor], start_pos: Optional[Tensor], cmp_ratio: int, coff: int,
                   grad_enabled: bool) -> Tuple[Tensor, Tensor, Tensor]:
        """gradkit.ops.compressor without a state cache: (cmp_kv, softmax_score, kv); the last two are placeholders
        of shape [1, ...] without grad_enabled."""
        out = ops.compressor(x, wkv, wgate, ape, cmp_ratio, cu_seqlens=cu_seqlens, seqused=seqused,
                             start_pos=start_pos, coff=coff, grad_enabled=grad_enabled)
        if grad_enabled:
            return out.cmp_kv, out.softmax_score, out.kv
        placeholder = x.new_zeros((1,) * (out.cmp_kv.dim() + 1), dtype=torch.float32)  # lead dims + 2
        return out.cmp_kv, placeholder, placeholder.clone()

    @compressor.register_fake
    def _(x, wkv, wgate, ape, cu_seqlens, seqused, start_pos, cmp_ratio, coff, grad_enabled):
        return _compressor_fake(x, wkv, cu_seqlens, cmp_ratio, coff, grad_enabled)

    def _compressor_fake(x, wkv, cu_seqlens, cmp_ratio, coff, grad_enabled):
        """(cmp_kv, softmax_score, kv) of the compressor's size model on fake tensors."""
        cr, n = max(cmp_ratio, 1), max(coff, 1)
        if x.dim() == 3:  # BSH; TH: the batches are cu_seqlens' length - 1 (its values are not needed)
            lead = tuple(ops._C.compressor_output_lead(False, x.shape[0], x.shape[1], cr))
        else:
            batch = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else 1
            lead = tuple(ops._C.compressor_output_lead(True, batch, x.shape[0], cr))
        d = wkv.shape[0] // n
        inner = lead + (n * cr, d) if grad_enabled else (1,) * (len(lead) + 2)
        fp32 = dict(dtype=torch.float32)
        return x.new_empty(lead + (d,)), x.new_empty(inner, **fp32), x.new_empty(inner, **fp32)

    # The compressor with a state cache, read and written in place: a mutating op, so without a backward (PyTorch
    # registers none for one); gradkit.autograd.compressor takes it when no input needs a gradient (inference).
    @torch.library.custom_op(f"{NAMESPACE}::compressor_cached", mutates_args=("state_cache",))
    def compressor_cached(x: Tensor, wkv: Tensor, wgate: Tensor, ape: Tensor, state_cache: Tensor,
                          state_block_table: Tensor, cu_seqlens: Optional[Tensor], seqused: Optional[Tensor],
                          start_pos: Optional[Tensor], cmp_ratio: int, coff: int, cache_mode: int) -> Tensor:
        """gradkit.ops.compressor with state_cache written in place: cmp_kv."""
        return ops.compressor(x, wkv, wgate, ape, cmp_ratio, state_cache=state_cache,
                              state_block_table=state_block_table, cu_seqlens=cu_seqlens, seqused=seqused,
                              start_pos=start_pos, coff=coff, cache_mode=cache_mode).cmp_kv

    @compressor_cached.register_fake
    def _(x, wkv, wgate, ape, state_cache, state_block_table, cu_seqlens, seqused, start_pos, cmp_ratio, coff,
          cache_mode):
        return _compressor_fake(x, wkv, cu_seqlens, cmp_ratio, coff, False)[0]

    @torch.library.custom_op(f"{NAMESPACE}::compressor_grad", mutates_args=())
    def compressor_grad(x: Tensor, wkv: Tensor, wgate: Tensor, d_cmp_kv: Tensor, softmax_score: Tensor, kv: Tensor,
                        cu_seqlens: Optional[Tensor], seqused: Optional[Tensor], start_pos: Optional[Tensor],
                        cmp_ratio: int, coff: int) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """gradkit.ops.compressor_grad: (d_x, d_wkv, d_wgate, d_ape)."""
        return tuple(ops.compressor_grad(x, wkv, wgate, d_cmp_kv, softmax_score, kv, cmp_ratio, cu_seqlens=cu_seqlens,
                                         seqused=seqused, start_pos=start_pos, coff=coff))

    @compressor_grad.register_fake
    def _(x, wkv, wgate, d_cmp_kv, softmax_score, kv, cu_seqlens, seqused, start_pos, cmp_ratio, coff):
        d_ape = x.new_empty((max(cmp_ratio, 1), wkv.shape[0]), dtype=torch.float32)
        return x.new_empty(x.shape), x.new_empty(wkv.shape), x.new_empty(wgate.shape), d_ape

    def _compressor_setup_context(ctx, inputs, output):
        x, wkv, wgate, _ape, cu_seqlens, seqused, start_pos, cmp_ratio, coff, _grad_enabled = inputs
        ctx.save_for_backward(x, wkv, wgate, output[1], output[2], cu_seqlens, seqused, start_pos)
        ctx.cmp_ratio, ctx.coff = cmp_ratio, coff
        ctx.mark_non_differentiable(output[1], output[2])

    def _compressor_backward(ctx, d_cmp_kv, _d_score, _d_kv):
        x, wkv, wgate, softmax_score, kv, cu_seqlens, seqused, start_pos = ctx.saved_tensors
        grads = compressor_grad(x, wkv, wgate, d_cmp_kv.contiguous(), softmax_score, kv, cu_seqlens, seqused,
                                start_pos, ctx.cmp_ratio, ctx.coff)
        return tuple(grads) + (None,) * 6

    compressor.register_autograd(_compressor_backward, setup_context=_compressor_setup_context)

if AVAILABLE:  # DeepSeek-V4's sparse attention: sparse_flash_mla (+ _grad), lightning_indexer, its KL loss, the L1 norm
    from . import _library_sparse  # noqa: E402,F401
