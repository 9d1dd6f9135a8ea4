"""torch.autograd.Function wrappers: the forward and the backward of each pair of gradkit operators, so that
gradkit's kernels run inside an ordinary PyTorch training step (CPU tensors, any strides).

Each user function carries its pieces as attributes: `.Function` (the autograd.Function), `.forward_op` and
`.backward_op` (the raw operators of gradkit.ops it calls). A new operator follows the same pattern: a Function
class calling gradkit.ops, a function with those three attributes, an entry in __all__ and in gradkit/__init__.py.

On torch >= 2.4, while torch.compile / torch.export trace, the functions call the torch.ops.gradkit custom ops of
gradkit.library instead (the same operators; library.use_custom_ops). What each saves and its backward are shared
with those ops (gradkit._backward)."""
import math

import torch
from torch.autograd.function import once_differentiable

from . import _arrays, _backward, library, ops

__all__ = ["relu", "dropout", "mhc_pre", "mhc_post", "mhc_sinkhorn", "mhc_pre_sinkhorn", "block_attention_residuals",
           "compressor", "flash_attention", "sparse_flash_mla", "lightning_indexer", "lightning_indexer_kl_loss",
           "sparse_flash_mla_softmax_l1_norm"]


# torch >= 2.0 separates forward from setup_context, which torch.func (grad, vjp, jacrev) needs; 1.13 has only
# forward(ctx, ...). Each Function below is written as forward(*inputs) + setup(ctx, inputs, outputs) + backward and
# built for the torch at hand.
_SEPARATE_SETUP = int(torch.__version__.split(".")[0]) >= 2


def _function(name, doc, forward, setup, backward):
    """A torch.autograd.Function from forward(*inputs), setup(ctx, inputs, outputs) and backward(ctx, *grads)."""
    if _SEPARATE_SETUP:
        body = {"forward": staticmethod(forward), "setup_context": staticmethod(setup)}
    else:
        def forward_with_ctx(ctx, *inputs):
            outputs = forward(*inputs)
            setup(ctx, inputs, outputs)
            return outputs

        body = {"forward": staticmethod(forward_with_ctx)}
    # gradkit's backward operators have no backward: a second derivative raises
    body.update(__doc__=doc, backward=staticmethod(once_differentiable(backward)))
    function = type(name, (torch.autograd.Function,), body)
    if _SEPARATE_SETUP:
        function.vmap = staticmethod(_per_sample_vmap(function))
    return function


def _per_sample_vmap(function):
    """torch.func.vmap's rule for `function`: one call per sample along the batched dims, outputs stacked at dim 0.
    Each call is an ordinary apply at the next transform level (its backward calls the operators through _OpCall, so
    vmap(grad(f)) runs per sample too). The kernels take whole tensors: a batch costs as many calls as it has samples."""

    def vmap(info, in_dims, *inputs):
        return _stacked([function.apply(*_sample(inputs, in_dims, index)) for index in range(info.batch_size)])

    return vmap


def _sample(inputs, in_dims, index):
    """Sample `index` of a vmap rule's inputs: batched tensors selected along their dim, the rest as they are
    (in_dims mirrors the inputs' structure: a dict of options gets a dict of Nones)."""
    return [x.select(dim, index) if isinstance(dim, int) else x for x, dim in zip(inputs, in_dims)]


def _stacked(samples):
    """A vmap rule's result from per-sample outputs (a tensor, or a tuple with tensors and Nones): (outputs, out_dims)."""
    if not isinstance(samples[0], tuple):
        return torch.stack(samples), 0
    outputs = tuple(None if samples[0][k] is None else torch.stack([sample[k] for sample in samples])
                    for k in range(len(samples[0])))
    return outputs, tuple(None if output is None else 0 for output in outputs)


class _ResultType:
    """Where _OpCall's forward leaves the operator's result type (a namedtuple class) for its caller."""

    type = None


class _OpCall(torch.autograd.Function):
    """One raw operator call (gradkit.ops) that torch.func can transform: what the Functions' backwards call, so that
    vmap(grad(f)) (per-sample gradients) runs each backward once per sample. Keyword arguments pass through unbatched.
    Not differentiable (the operators are backwards already)."""

    @staticmethod
    def forward(op, kwargs, result_type, *args):
        out = op(*args, **kwargs)
        if isinstance(out, tuple):
            result_type.type = type(out)
            return tuple(out)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("gradkit's backward operators have no backward (no second derivative)")


_OpCall.vmap = staticmethod(_per_sample_vmap(_OpCall))  # op, kwargs and result_type are never batched


def _inside_torch_func():
    """Whether a torch.func transform (vmap, grad, ...) is active: its interpreter stack is not empty."""
    functorch = getattr(torch._C, "_functorch", None)
    return functorch is not None and functorch.peek_interpreter_stack() is not None


def _transformable(op):
    """op, callable under torch.func transforms (through _OpCall) where torch has them (>= 2). Outside them the
    operator is called directly: an extra Function apply costs ~0.15 ms, 13 % of a 1M-element ReLU step."""
    if not _SEPARATE_SETUP:
        return op

    def call(*args, **kwargs):
        if not _inside_torch_func():
            return op(*args, **kwargs)
        result_type = _ResultType()  # an object, not a list: torch.func would flatten a list as a pytree
        out = _OpCall.apply(op, kwargs, result_type, *args)
        return result_type.type(*out) if result_type.type is not None else out

    return call


# The backward operators as the Functions' backwards call them.
_threshold_backward = _transformable(ops.threshold_backward)
_native_dropout_backward = _transformable(ops.native_dropout_backward)
_mhc_pre_backward = _transformable(ops.mhc_pre_backward)
_mhc_post_backward = _transformable(ops.mhc_post_backward)
_mhc_sinkhorn_backward = _transformable(ops.mhc_sinkhorn_backward)
_mhc_pre_sinkhorn_backward = _transformable(ops.mhc_pre_sinkhorn_backward)
_block_attention_residuals_grad = _transformable(ops.block_attention_residuals_grad)
_flash_attention_score_grad = _transformable(ops.flash_attention_score_grad)


def _attach(function, autograd_function, forward_op, backward_op):
    function.Function = autograd_function
    function.forward_op = forward_op
    function.backward_op = backward_op
    return function


def _relu_forward(x):
    try:
        return torch.relu(x)
    except RuntimeError:  # torch 1.13 has no fp16 ReLU on the CPU: through fp32 (exact, ReLU selects)
        return torch.relu(x.float()).to(x.dtype)


ReluFunction = _function(
    "ReluFunction", """ReLU: forward in torch (gradkit has no forward ReLU operator), backward by aclnnThresholdBackward
    on the saved output, as PyTorch's own ReLU backward (threshold_backward(grad, result, 0)).""", _relu_forward,
    _backward.relu_setup, _backward.relu_backward(_threshold_backward))


def relu(x):
    """max(x, 0) with gradkit's ThresholdBackward as the backward. dtypes: float32, float16, bfloat16."""
    if library.use_custom_ops():
        return torch.ops.gradkit.relu(x)
    return ReluFunction.apply(x)


def _dropout_forward(x, p, training, seed, offset):
    return ops.native_dropout(x, p, training, seed=seed, offset=offset)


DropoutFunction = _function(
    "DropoutFunction", "native_dropout forward (packed keep mask) and native_dropout_backward with that mask.",
    _dropout_forward, _backward.dropout_setup, _backward.dropout_backward(_native_dropout_backward))


def dropout(x, p=0.5, training=True, *, seed=None, offset=0, return_mask=False):
    """Dropout as torch.nn.functional.dropout (zero with probability p, scale the rest by 1/(1-p); identity when
    not training), with gradkit's masks: the Ascend950 Philox stream of (seed, offset). seed None draws one from
    torch's global generator. return_mask also returns the packed UINT8 keep mask (unpack_dropout_mask)."""
    if library.use_custom_ops():
        if seed is None:  # drawn in the graph, as ops.random_seed draws it in eager mode (the same generator)
            out, mask = torch.ops.gradkit.native_dropout_seed_tensor(x, float(p), bool(training),
                                                                     _arrays.torch_seed_tensor(), int(offset))
        else:
            out, mask = torch.ops.gradkit.native_dropout(x, float(p), bool(training), int(seed), int(offset))
    else:
        out, mask = DropoutFunction.apply(x, float(p), bool(training), seed, int(offset))
    return (out, mask) if return_mask else out


def _mhc_forward(x, phi, alpha, bias, gamma, norm_eps, hc_eps, op_impl_mode):
    out = ops.mhc_pre(x, phi, alpha, bias, gamma, norm_eps=norm_eps, hc_eps=hc_eps, op_impl_mode=op_impl_mode)
    return tuple(o for o in out if o is not None)  # h_in, h_post, (h_res,) then the caches inv_rms, h_mix, h_pre


def _mhc_setup(ctx, inputs, outputs):
    x, phi, alpha, _bias, gamma, _norm_eps, hc_eps, op_impl_mode = inputs
    h_post, caches = outputs[1], outputs[-3:]
    ctx.save_for_backward(x, phi, alpha, gamma, *caches, h_post)
    ctx.hc_eps, ctx.op_impl_mode, ctx.has_gamma = hc_eps, op_impl_mode, gamma is not None
    ctx.res_shape = tuple(outputs[2].shape) if len(outputs) == 6 else None
    ctx.mark_non_differentiable(*caches)


def _mhc_backward(ctx, grad_h_in, grad_h_post, *rest):
    x, phi, alpha, gamma, inv_rms, h_mix, h_pre, h_post = ctx.saved_tensors
    grad_h_res = rest[0] if ctx.res_shape is not None else None
    grad_h_in, grad_h_post, grad_h_res = _backward.mhc_output_grads(x, h_post, ctx.res_shape, grad_h_in, grad_h_post,
                                                                    grad_h_res)
    grads = _mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post,
                              gamma if ctx.has_gamma else None, hc_eps=ctx.hc_eps, op_impl_mode=ctx.op_impl_mode)
    grad_gamma = grads.grad_gamma if ctx.has_gamma else None
    return grads.grad_x, grads.grad_phi, grads.grad_alpha, grads.grad_bias, grad_gamma, None, None, None


MhcPreFunction = _function(
    "MhcPreFunction", """aclnnMhcPre[V2] forward and aclnnMhcPreBackward[V2] backward: outputs h_in, h_post, (h_res,)
    and the caches inv_rms, h_mix, h_pre (not differentiable).""", _mhc_forward, _mhc_setup, _mhc_backward)


def mhc_pre(x, phi, alpha, bias, gamma=None, *, norm_eps=1e-6, hc_eps=1e-6, op_impl_mode=None):
    """mHC pre-mapping (aclnnMhcPre, docs/mhc.md) with autograd: returns (h_in, h_post, h_res) for alpha [3],
    (h_in, h_post) for alpha [2] (forward only). x [T, N, D] or [B, S, N, D] bfloat16 / float16; phi [F, N*D],
    alpha, bias [F], gamma [N, D] or None float32. op_impl_mode None: the V1 entry points; 0 / 1: V2 with fp32 /
    HF32 matmul operands. Gradients flow to x, phi, alpha, bias and gamma."""
    if library.use_custom_ops():
        if alpha.shape[0] == 2:
            return torch.ops.gradkit.mhc_pre_no_residual(x, phi, alpha, bias, gamma, float(norm_eps), float(hc_eps),
                                                         op_impl_mode)[:2]
        return torch.ops.gradkit.mhc_pre(x, phi, alpha, bias, gamma, float(norm_eps), float(hc_eps), op_impl_mode)[:3]
    outputs = MhcPreFunction.apply(x, phi, alpha, bias, gamma, float(norm_eps), float(hc_eps), op_impl_mode)
    return outputs[:-3]


MhcPostFunction = _function(
    "MhcPostFunction", "aclnnMhcPost forward and aclnnMhcPostBackward backward.",
    lambda x, h_res, h_out, h_post: ops.mhc_post(x, h_res, h_out, h_post), _backward.mhc_post_setup,
    _backward.mhc_post_backward(_mhc_post_backward))


def mhc_post(x, h_res, h_out, h_post):
    """mHC post-mapping and residual merge (aclnnMhcPost, docs/mhc.md) with autograd: returns
    h_res^T x + h_out (x) h_post per token, x's shape and dtype. x [T, N, D] or [B, S, N, D] and h_out [.., D]
    bfloat16 / float16 (one dtype); h_res [.., N, N] (MhcSinkhorn's doubly stochastic matrix) and h_post [.., N]
    float32. h_res None: x + h_out (x) h_post (the Ascend950 profile only). Gradients flow to all four."""
    if library.use_custom_ops():
        return torch.ops.gradkit.mhc_post(x, h_res, h_out, h_post)
    return MhcPostFunction.apply(x, h_res, h_out, h_post)


MhcSinkhornFunction = _function(
    "MhcSinkhornFunction", """aclnnMhcSinkhorn forward (outputs: output, then the saved steps norm_out and sum_out,
    not differentiable; empty without save) and aclnnMhcSinkhornBackward backward from those steps.""",
    _backward.mhc_sinkhorn_forward, _backward.mhc_sinkhorn_setup,
    _backward.mhc_sinkhorn_backward(_mhc_sinkhorn_backward))


def mhc_sinkhorn(x, eps=1e-6, num_iters=20):
    """mHC's Sinkhorn-Knopp projection (aclnnMhcSinkhorn) with autograd (aclnnMhcSinkhornBackward): returns the
    doubly stochastic matrices, x's shape. x [T, n, n] or [B, S, n, n] float32 (n in {4, 6, 8}; mhc_pre's h_res),
    num_iters 1 .. 100 rounds of column and row normalisation (gradkit.reference.mhc_sinkhorn). The forward keeps
    its 2 num_iters steps for the backward (2 num_iters n 8 + 16 num_iters floats a token) only when x needs a
    gradient; without one (inference, torch.no_grad) nothing is kept."""
    if library.use_custom_ops():
        save = torch.is_grad_enabled() and x.requires_grad
        return torch.ops.gradkit.mhc_sinkhorn(x, float(eps), int(num_iters), save)[0]
    transformed = _SEPARATE_SETUP and _inside_torch_func()  # torch.func's wrappers: through the Function
    if not transformed and not (torch.is_grad_enabled() and x.requires_grad):
        return ops.mhc_sinkhorn(x, eps, num_iters, save=False).output
    return MhcSinkhornFunction.apply(x, float(eps), int(num_iters), True)[0]


MhcPreSinkhornFunction = _function(
    "MhcPreSinkhornFunction", """aclnnMhcPreSinkhorn forward (outputs: hin, h_post, h_res, then the saved h_pre,
    hc_before_norm, inv_rms, sum_out, norm_out, not differentiable; empty without need_backward) and
    aclnnMhcPreSinkhornBackward backward from those.""", _backward.mhc_pre_sinkhorn_forward,
    _backward.mhc_pre_sinkhorn_setup, _backward.mhc_pre_sinkhorn_backward(_mhc_pre_sinkhorn_backward))


def mhc_pre_sinkhorn(x, phi, alpha, bias, hc_mult=4, num_iters=20, hc_eps=1e-6, norm_eps=1e-6):
    """mHC's pre-mapping fused with the Sinkhorn projection of its residual matrix (aclnnMhcPreSinkhorn) with
    autograd (aclnnMhcPreSinkhornBackward), as upstream's cann_ops_transformer.mhc_pre_sinkhorn: returns (hin in x's
    dtype [.., c], h_post [.., n], h_res [.., n*n] float32). x [B, S, n, c] or [T, n, c] (TND: Ascend950 profile
    only) bfloat16 / float16; phi [n*n + 2n, n*c], alpha [3], bias [n*n + 2n] float32; hc_mult = n = 4,
    num_iters = 20; c in {4096, 7168} in the Ascend950 profile, a multiple of 128 in the Ascend910B / Ascend910_93
    ones (gradkit.reference.mhc_pre_sinkhorn is the formula). The forward keeps what the backward reads (h_pre,
    hc_before_norm, inv_rms and the 2 num_iters Sinkhorn steps: n^2 + 3n + 1 + 2 num_iters (n^2 + n) floats a token,
    829 for n = 4) only when x, phi, alpha or bias needs a gradient (not under torch.no_grad); gradients flow to all
    four."""
    need = torch.is_grad_enabled() and any(t.requires_grad for t in (x, phi, alpha, bias))
    numbers = (int(hc_mult), int(num_iters), float(hc_eps), float(norm_eps))
    if library.use_custom_ops():
        return torch.ops.gradkit.mhc_pre_sinkhorn(x, phi, alpha, bias, *numbers, need)[:3]
    transformed = _SEPARATE_SETUP and _inside_torch_func()  # torch.func's wrappers: through the Function
    if not transformed and not need:
        return tuple(ops.mhc_pre_sinkhorn(x, phi, alpha, bias, hc_mult=numbers[0], num_iters=numbers[1],
                                          hc_eps=numbers[2], norm_eps=numbers[3], need_backward=False)[:3])
    return MhcPreSinkhornFunction.apply(x, phi, alpha, bias, *numbers, True)[:3]


BlockAttentionResidualsFunction = _function(
    "BlockAttentionResidualsFunction", """aclnnBlockAttentionResiduals forward (outputs: hidden_states, then the saved
    inv_norm and probs, not differentiable; empty without need_backward) and aclnnBlockAttentionResidualsGrad backward
    from those.""", _backward.block_attention_residuals_forward, _backward.block_attention_residuals_setup,
    _backward.block_attention_residuals_backward(_block_attention_residuals_grad))


def block_attention_residuals(partial_block, block_res, proj_weight, norm_weight, valid_block_num=-1, norm_eps=1e-6):
    """Attention over a token's block-level residuals (aclnnBlockAttentionResiduals) with autograd
    (aclnnBlockAttentionResidualsGrad), as upstream's cann_ops_transformer.block_attention_residuals: per token t the
    N + 1 values v = (block_res[t, 0..N-1], partial_block[t]) are scored by their RMS-normed projection (score[i] =
    sum_h v[i] / rms(v[i]) * norm_weight * proj_weight, rms with norm_eps) and mixed by the softmax of the scores.
    Returns hidden_states [T, H] in the inputs' dtype. partial_block [T, H], block_res [T, N, H] (1 <= N <= 100),
    proj_weight [H] or [1, H], norm_weight [H]: one dtype of float32 / float16 / bfloat16; valid_block_num -1 or N
    (gradkit.reference.block_attention_residuals is the formula). The forward keeps inv_norm and probs (2 (N + 1)
    floats a token) only when an input needs a gradient (not under torch.no_grad); gradients flow to all four."""
    tensors = (partial_block, block_res, proj_weight, norm_weight)
    need = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    numbers = (int(valid_block_num), float(norm_eps))
    if library.use_custom_ops():
        return torch.ops.gradkit.block_attention_residuals(*tensors, *numbers, need)[0]
    transformed = _SEPARATE_SETUP and _inside_torch_func()  # torch.func's wrappers: through the Function
    if not transformed and not need:
        return ops.block_attention_residuals(*tensors, valid_block_num=numbers[0], norm_eps=numbers[1],
                                             need_backward=False).hidden_states
    return BlockAttentionResidualsFunction.apply(*tensors, *numbers, True)[0]


_attach(relu, ReluFunction, None, ops.threshold_backward)
_attach(dropout, DropoutFunction, ops.native_dropout, ops.native_dropout_backward)
_attach(mhc_pre, MhcPreFunction, ops.mhc_pre, ops.mhc_pre_backward)
_attach(mhc_post, MhcPostFunction, ops.mhc_post, ops.mhc_post_backward)
_attach(mhc_sinkhorn, MhcSinkhornFunction, ops.mhc_sinkhorn, ops.mhc_sinkhorn_backward)
_attach(mhc_pre_sinkhorn, MhcPreSinkhornFunction, ops.mhc_pre_sinkhorn, ops.mhc_pre_sinkhorn_backward)
_attach(block_attention_residuals, BlockAttentionResidualsFunction, ops.block_attention_residuals,
        ops.block_attention_residuals_grad)


class CompressorFunction(torch.autograd.Function):
    """aclnnCompressor forward (gradEnabled when x, wkv, wgate or ape needs a gradient: softmax_score and kv saved)
    and aclnnCompressorGrad backward. Gradients for x, wkv, wgate and ape only, as upstream's torch extension: the
    state cache, block table and per-batch values get none (the gradient stops at the call boundary)."""

    @staticmethod
    def forward(ctx, x, wkv, wgate, ape, state_cache, state_block_table, cu_seqlens, seqused, start_pos, cmp_ratio,
                coff, cache_mode):
        grad_enabled = any(ctx.needs_input_grad[:4])
        out = ops.compressor(x, wkv, wgate, ape, cmp_ratio, state_cache=state_cache,
                             state_block_table=state_block_table, cu_seqlens=cu_seqlens, seqused=seqused,
                             start_pos=start_pos, coff=coff, cache_mode=cache_mode, grad_enabled=grad_enabled)
        if grad_enabled:
            ctx.save_for_backward(x, wkv, wgate, out.softmax_score, out.kv, cu_seqlens, seqused, start_pos)
        ctx.cmp_ratio, ctx.coff = cmp_ratio, coff
        return out.cmp_kv

    @staticmethod
    @once_differentiable  # gradkit's backward operators have no backward: a second derivative raises
    def backward(ctx, d_cmp_kv):
        x, wkv, wgate, softmax_score, kv, cu_seqlens, seqused, start_pos = ctx.saved_tensors
        grads = ops.compressor_grad(x, wkv, wgate, d_cmp_kv, softmax_score, kv, ctx.cmp_ratio, cu_seqlens=cu_seqlens,
                                    seqused=seqused, start_pos=start_pos, coff=ctx.coff)
        return tuple(grads) + (None,) * 8


def compressor(x, wkv, wgate, ape, cmp_ratio, *, state_cache=None, state_block_table=None, cu_seqlens=None,
               seqused=None, start_pos=None, coff=1, cache_mode=1):
    """The KV compressor (aclnnCompressor + aclnnCompressorGrad) with autograd: returns cmp_kv, x's dtype, BSH
    [B, ceil(S/cr), D] or TH [min(T, T//cr + B), D]. x [B, S, H] or [T, H] with cu_seqlens (INT32 [B+1]),
    bfloat16 / float16; wkv, wgate [coff*D, H] in x's dtype; ape float32 [cr, coff*D]; seqused, start_pos INT32
    [B] or None. state_cache (float32 [blocks, block_size, 2*coff*D], with state_block_table) is read before
    start_pos and written in place; None: zeros, nothing kept (gradkit.ops.compressor). Gradients flow to x, wkv,
    wgate and ape; positions read from the cache get none."""
    if library.use_custom_ops():
        grad_enabled = torch.is_grad_enabled() and any(t.requires_grad for t in (x, wkv, wgate, ape))
        if state_cache is None:
            return torch.ops.gradkit.compressor(x, wkv, wgate, ape, cu_seqlens, seqused, start_pos, int(cmp_ratio),
                                                int(coff), grad_enabled)[0]
        if not grad_enabled:  # inference with a cache: the mutating op (it has no backward)
            return torch.ops.gradkit.compressor_cached(x, wkv, wgate, ape, state_cache, state_block_table, cu_seqlens,
                                                       seqused, start_pos, int(cmp_ratio), int(coff), int(cache_mode))
    return CompressorFunction.apply(x, wkv, wgate, ape, state_cache, state_block_table, cu_seqlens, seqused, start_pos,
                                    int(cmp_ratio), int(coff), int(cache_mode))


_attach(compressor, CompressorFunction, ops.compressor, ops.compressor_grad)


def _fa_forward(query, key, value, pse, atten_mask, drop_mask, head_num, input_layout, options):
    out = ops.flash_attention_score(query, key, value, head_num, input_layout, pse=pse, atten_mask=atten_mask,
                                    drop_mask=drop_mask, **options)
    return out.attention_out, out.softmax_max, out.softmax_sum


def _fa_setup(ctx, inputs, outputs):
    query, key, value, pse, atten_mask, drop_mask, head_num, input_layout, options = inputs
    ctx.save_for_backward(query, key, value, pse, atten_mask, drop_mask, *outputs)
    ctx.head_num, ctx.input_layout, ctx.options = head_num, input_layout, options
    ctx.mark_non_differentiable(outputs[1], outputs[2])


def _fa_backward(ctx, dy, _grad_max, _grad_sum):
    query, key, value, pse, atten_mask, drop_mask, out, softmax_max, softmax_sum = ctx.saved_tensors
    grads = _flash_attention_score_grad(query, key, value, dy.contiguous(), ctx.head_num, ctx.input_layout,
                                           softmax_max, softmax_sum, out, pse=pse, atten_mask=atten_mask,
                                           drop_mask=drop_mask, **ctx.options)
    return grads.dq, grads.dk, grads.dv, None, None, None, None, None, None


FlashAttentionFunction = _function(
    "FlashAttentionFunction", """The flash attention forward (gradkit.ops.flash_attention_score: attention_out and
    the statistics, which are not differentiable) and backward (flash_attention_score_grad), fed the forward's
    attention_out, softmax_max and softmax_sum and, for dropout, the seed and offset (or packed mask) the caller
    fixed, so both directions use the same keep mask. Gradients for query, key and value; pse, masks and the
    per-batch values get none (upstream computes no pse gradient).""", _fa_forward, _fa_setup, _fa_backward)


def _cpu_autocast_dtype():
    """The dtype CPU autocast runs matmul-like ops in (torch.autocast("cpu"), default bfloat16), or None when off."""
    try:
        enabled = torch.is_autocast_enabled("cpu")
        return torch.get_autocast_dtype("cpu") if enabled else None
    except TypeError:  # torch < 2.4
        return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


def _autocast(*tensors):
    """Under CPU autocast, float32 tensors in autocast's dtype (as torch's own SDPA runs); others unchanged."""
    dtype = _cpu_autocast_dtype()
    if dtype is None:
        return tensors
    return tuple(t.to(dtype) if t is not None and t.dtype == torch.float32 else t for t in tensors)


def flash_attention(query, key, value, head_num, input_layout="BNSD", *, pse=None, atten_mask=None, scale=None,
                    keep_prob=1.0, pre_tokens=ops.FA_NO_WINDOW, next_tokens=ops.FA_NO_WINDOW, sparse_mode=0,
                    pse_type=1, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, q_start_idx=None,
                    kv_start_idx=None, drop_mask=None, seed=None, offset=0, inner_precise=0):
    """Flash attention with autograd (aclnnFlashAttentionScore* + aclnnFlashAttentionScoreGrad*, docs/python.md):
    returns attention_out in query's dtype and layout. Arguments as gradkit.ops.flash_attention_score, except scale:
    None means 1/sqrt(D) (D = query's head dim). Causal attention: sparse_mode=3 (or 2) with the [2048, 2048]
    template as atten_mask (flash_attention_causal_mask()). Dropout: keep_prob < 1 draws the keep mask from the Philox
    stream of (seed, offset) (seed None: from torch's global generator) in the forward, and the backward draws the
    same one; or give drop_mask (packed keep bits). Gradients flow to query, key and value (float32, float16,
    bfloat16). Under torch.autocast("cpu") float32 inputs run in autocast's dtype (bfloat16), as torch's SDPA."""
    query, key, value, pse = _autocast(query, key, value, pse)
    if scale is None:
        scale = 1.0 / math.sqrt(ops.flash_attention_dims(query, key, value, head_num, input_layout,
                                                         actual_seq_qlen)[4])
    if float(keep_prob) < 1.0 and drop_mask is None and seed is None:
        seed = int(torch.randint(0, 2**62, (1,), dtype=torch.int64).item())
    options = dict(scale=float(scale), keep_prob=float(keep_prob), pre_tokens=int(pre_tokens),
                   next_tokens=int(next_tokens), sparse_mode=int(sparse_mode), pse_type=int(pse_type), prefix=prefix,
                   actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen, q_start_idx=q_start_idx,
                   kv_start_idx=kv_start_idx, seed=seed, offset=int(offset), inner_precise=int(inner_precise))
    if library.use_custom_ops():
        lists = [ops._int_list(options[k]) for k in library.FA_LIST_OPTIONS]
        return torch.ops.gradkit.flash_attention_score(
            query, key, value, pse, atten_mask, drop_mask, int(head_num), str(input_layout), options["scale"],
            options["keep_prob"], options["pre_tokens"], options["next_tokens"], options["sparse_mode"],
            options["pse_type"], *lists, 0 if seed is None else int(seed), options["offset"],
            options["inner_precise"])[0]
    return FlashAttentionFunction.apply(query, key, value, pse, atten_mask, drop_mask, int(head_num),
                                        str(input_layout), options)[0]


def flash_attention_causal_mask():
    """The compressed causal mask of sparse modes 2, 3 and 4: bool [2048, 2048], True above the diagonal."""
    return torch.ones(2048, 2048, dtype=torch.bool).triu(1)


_attach(flash_attention, FlashAttentionFunction, ops.flash_attention_score, ops.flash_attention_score_grad)


# DeepSeek-V4's sparse attention (its own module; gradkit.autograd is its public namespace).
from ._autograd_sparse import (lightning_indexer, lightning_indexer_kl_loss, sparse_flash_mla,  # noqa: E402,F401
                               sparse_flash_mla_softmax_l1_norm)
