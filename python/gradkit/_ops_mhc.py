"""The raw mHC operators of gradkit.ops (pre-mapping, Sinkhorn projection, post-mapping, block attention residuals),
re-exported there: one call of the aclnn operator on torch tensors or numpy arrays, no autograd, outputs allocated
unless given."""
from collections import namedtuple

from . import _C
from ._arrays import arg, empty, empty_like_dtype, result, shape_of


MhcPreResult = namedtuple("MhcPreResult", "h_in h_post h_res inv_rms h_mix h_pre")
MhcPreGrads = namedtuple("MhcPreGrads", "grad_x grad_phi grad_alpha grad_bias grad_gamma")


def mhc_pre(x, phi, alpha, bias, gamma=None, *, norm_eps=1e-6, hc_eps=1e-6, op_impl_mode=None, caches=True):
    """aclnnMhcPre (op_impl_mode None) or aclnnMhcPreV2 (op_impl_mode 0 = fp32, 1 = HF32 matmul operands).
    x [T, N, D] or [B, S, N, D] (bfloat16 / float16), phi [F, N*D], alpha [3] or [2], bias [F], gamma [N, D] or
    None (float32). Returns MhcPreResult(h_in (x's dtype), h_post, h_res (None for alpha [2]), inv_rms, h_mix,
    h_pre); the last three are the caches of the backward (None with caches=False)."""
    shape = shape_of(x)
    lead, n, d = shape[:-2], shape[-2], shape[-1]
    rows = shape_of(phi)[0]
    h_in = empty_like_dtype(x, lead + (d,))
    h_post = empty(x, lead + (n,), "float32")
    h_res = None
    if shape_of(alpha)[0] == 3:
        h_res = empty(x, lead + tuple(_C.mhc_residual_tail(n, rows)), "float32")
    inv_rms = h_mix = h_pre = None
    if caches:
        inv_rms = empty(x, lead, "float32")
        h_mix = empty(x, lead + (rows,), "float32")
        h_pre = empty(x, lead + (n,), "float32")
    _C.mhc_pre(arg(x), arg(phi), arg(alpha), arg(bias), arg(gamma), float(norm_eps), float(hc_eps), op_impl_mode,
               arg(h_in), arg(h_post), arg(h_res), arg(inv_rms), arg(h_mix), arg(h_pre))
    return MhcPreResult(result(h_in), h_post, h_res, inv_rms, h_mix, h_pre)


def mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post, gamma=None,
                     *, grad_x_post=None, hc_eps=1e-6, op_impl_mode=None, grad_x=None, grad_gamma=None):
    """aclnnMhcPreBackward (op_impl_mode None) or aclnnMhcPreBackwardV2. The caches and h_post come from mhc_pre
    with the same x, phi, alpha, gamma and hc_eps. grad_x_post (x's shape and dtype) is added into grad_x; grad_x
    may be grad_x_post itself (in place). Returns MhcPreGrads(grad_x, grad_phi, grad_alpha, grad_bias,
    grad_gamma); grad_gamma is None without gamma unless a buffer is passed (then left untouched, as upstream)."""
    if grad_x is None:
        grad_x = empty_like_dtype(x, shape_of(x))
    grad_phi = empty(x, shape_of(phi), "float32")
    grad_alpha = empty(x, (3,), "float32")
    grad_bias = empty(x, (shape_of(phi)[0],), "float32")
    if gamma is not None and grad_gamma is None:
        grad_gamma = empty(x, shape_of(gamma), "float32")
    _C.mhc_pre_backward(arg(x), arg(phi), arg(alpha), arg(grad_h_in), arg(grad_h_post), arg(grad_h_res),
                        arg(inv_rms), arg(h_mix), arg(h_pre), arg(h_post), arg(gamma), arg(grad_x_post),
                        float(hc_eps), op_impl_mode, arg(grad_x), arg(grad_phi), arg(grad_alpha), arg(grad_bias),
                        arg(grad_gamma))
    return MhcPreGrads(result(grad_x), grad_phi, grad_alpha, grad_bias, grad_gamma)


MhcPostGrads = namedtuple("MhcPostGrads", "grad_x grad_h_res grad_h_out grad_h_post")


def mhc_post(x, h_res, h_out, h_post, *, out=None):
    """aclnnMhcPost: out[.., j, :] = h_post[.., j] * h_out + sum_i h_res[.., i, j] * x[.., i, :] per token. x
    [T, N, D] or [B, S, N, D] and h_out [.., D] (bfloat16 / float16, one dtype), h_res [.., N, N] and h_post [.., N]
    (float32). h_res None: a plain residual x + h_out * h_post (the Ascend950 profile only). Returns out (x's shape
    and dtype)."""
    if out is None:
        out = empty_like_dtype(x, shape_of(x))
    _C.mhc_post(arg(x), arg(h_res), arg(h_out), arg(h_post), arg(out))
    return result(out)


def mhc_post_backward(grad_output, x, h_res, h_out, h_post, *, grad_x=None):
    """aclnnMhcPostBackward: the gradients of mhc_post for grad_output (x's shape and dtype). Returns
    MhcPostGrads(grad_x (x's dtype), grad_h_res [.., N, N] float32 (x grad_output^T, also without h_res),
    grad_h_out (h_out's dtype), grad_h_post [.., N] float32)."""
    shape = shape_of(x)
    lead, n = shape[:-2], shape[-2]
    if grad_x is None:
        grad_x = empty_like_dtype(x, shape)
    grad_h_res = empty(x, lead + (n, n), "float32")
    grad_h_out = empty_like_dtype(h_out, shape_of(h_out))
    grad_h_post = empty(x, lead + (n,), "float32")
    _C.mhc_post_backward(arg(grad_output), arg(x), arg(h_res), arg(h_out), arg(h_post), arg(grad_x), arg(grad_h_res),
                         arg(grad_h_out), arg(grad_h_post))
    return MhcPostGrads(result(grad_x), grad_h_res, result(grad_h_out), grad_h_post)


MhcSinkhornResult = namedtuple("MhcSinkhornResult", "output norm_out sum_out")
SINKHORN_COLUMNS = 8  # the saved rows are padded to 8 columns (the Ascend950 kernel's layout)


def mhc_sinkhorn_saved_sizes(shape, num_iters):
    """Elements of norm_out and sum_out for x of `shape` ([.., n, n]): (2 num_iters T n 8, 2 num_iters T 8)."""
    tokens = 1
    for dim in shape[:-2]:
        tokens *= dim
    n = shape[-1] if shape else 1
    steps = 2 * num_iters * tokens * SINKHORN_COLUMNS
    return steps * n, steps


def mhc_sinkhorn(x, eps=1e-6, num_iters=20, *, save=True, out=None):
    """aclnnMhcSinkhorn: per token of x ([T, n, n] or [B, S, n, n] float32, n in {4, 6, 8}) the Sinkhorn-Knopp
    projection onto the doubly stochastic matrices: softmax over the last dim, then num_iters (1 .. 100) rounds of
    column and row normalisation, each sum + eps. save also returns the steps the backward reads, norm_out (1-d,
    2 num_iters T n 8) and sum_out (1-d, 2 num_iters T 8), float32 in the Ascend950 kernel's layout. Returns
    MhcSinkhornResult(output (x's shape), norm_out, sum_out), the last two None without save. Ascend950 only."""
    if out is None:
        out = empty_like_dtype(x, shape_of(x))
    norm_out = sum_out = None
    if save:  # sized with at least one iteration, so that the operator itself reports a bad num_iters
        norm_size, sum_size = mhc_sinkhorn_saved_sizes(shape_of(x), max(int(num_iters), 1))
        norm_out, sum_out = empty(x, (norm_size,), "float32"), empty(x, (sum_size,), "float32")
    _C.mhc_sinkhorn(arg(x), float(eps), int(num_iters), arg(out), arg(norm_out), arg(sum_out))
    return MhcSinkhornResult(result(out), norm_out, sum_out)


def mhc_sinkhorn_backward(grad_output, norm_out, sum_out, *, grad_x=None):
    """aclnnMhcSinkhornBackward: the gradient of mhc_sinkhorn's output with respect to its x, for grad_output
    (x's shape, float32), from the forward's norm_out and sum_out (num_iters follows from their size). Returns
    grad_x (grad_output's shape)."""
    if grad_x is None:
        grad_x = empty_like_dtype(grad_output, shape_of(grad_output))
    _C.mhc_sinkhorn_backward(arg(grad_output), arg(norm_out), arg(sum_out), arg(grad_x))
    return result(grad_x)


MhcPreSinkhornResult = namedtuple("MhcPreSinkhornResult",
                                  "hin h_post h_res h_pre hc_before_norm inv_rms sum_out norm_out")
MhcPreSinkhornGrads = namedtuple("MhcPreSinkhornGrads", "grad_x grad_phi grad_alpha grad_bias")


def mhc_pre_sinkhorn_shapes(x_shape, num_iters):
    """The output shapes of mhc_pre_sinkhorn for x of `x_shape` ([.., n, c]), as a dict: hin [.., c], h_post and h_pre
    [.., n], h_res [.., n*n], hc_before_norm [.., n*n + 2n], inv_rms [.., 1], sum_out [2 num_iters, .., n], norm_out
    [2 num_iters, .., n, n]."""
    lead, n, c = tuple(x_shape[:-2]), x_shape[-2], x_shape[-1]
    steps = (2 * num_iters,) + lead
    return dict(hin=lead + (c,), h_post=lead + (n,), h_res=lead + (n * n,), h_pre=lead + (n,),
                hc_before_norm=lead + (n * n + 2 * n,), inv_rms=lead + (1,), sum_out=steps + (n,),
                norm_out=steps + (n, n))


def mhc_pre_sinkhorn(x, phi, alpha, bias, *, hc_mult=4, num_iters=20, hc_eps=1e-6, norm_eps=1e-6, need_backward=True,
                     hin=None, h_post=None, h_res=None):
    """aclnnMhcPreSinkhorn: mHC's pre-mapping (HF32 matmul operands, as the NPU's cube unit) fused with the
    Sinkhorn projection of its residual matrix (include/aclnnop/aclnn_mhc_pre_sinkhorn.h). x [B, S, n, c] or
    [T, n, c] (TND: the Ascend950 profile only) bfloat16 / float16 with n = hc_mult = 4; phi [n*n + 2n, n*c], alpha
    [3], bias [n*n + 2n] float32; num_iters 20; c in {4096, 7168} in the Ascend950 profile, a multiple of 128 in the
    Ascend910B / Ascend910_93 ones. Returns MhcPreSinkhornResult(hin (x's dtype, [.., c]), h_post [.., n], h_res
    [.., n*n], then what the backward reads: h_pre [.., n], hc_before_norm [.., n*n + 2n], inv_rms [.., 1], sum_out
    [2 num_iters, .., n], norm_out [2 num_iters, .., n, n]), float32; the last five None without need_backward (the
    operator then neither checks nor writes them). hin, h_post, h_res may be given (any strides)."""
    # Sized from x's own n and at least one iteration, so that the operator itself reports a bad hc_mult / num_iters.
    shapes = mhc_pre_sinkhorn_shapes(shape_of(x), max(int(num_iters), 1))
    if hin is None:
        hin = empty_like_dtype(x, shapes["hin"])
    if h_post is None:
        h_post = empty(x, shapes["h_post"], "float32")
    if h_res is None:
        h_res = empty(x, shapes["h_res"], "float32")
    saved = [None] * 5
    if need_backward:
        saved = [empty(x, shapes[name], "float32") for name in MhcPreSinkhornResult._fields[3:]]
    _C.mhc_pre_sinkhorn(arg(x), arg(phi), arg(alpha), arg(bias), int(hc_mult), int(num_iters), float(hc_eps),
                        float(norm_eps), bool(need_backward), arg(hin), arg(h_post), arg(h_res),
                        *(arg(t) for t in saved))
    return MhcPreSinkhornResult(result(hin), h_post, h_res, *saved)


def mhc_pre_sinkhorn_backward(grad_hin, grad_h_post, grad_h_res, x, phi, alpha, bias, h_pre, hc_before_norm, inv_rms,
                              sum_out, norm_out, *, hc_eps=1e-6, grad_x=None):
    """aclnnMhcPreSinkhornBackward (include/aclnnop/aclnn_mhc_pre_sinkhorn_backward.h): the gradients of
    mhc_pre_sinkhorn's hin (grad_hin, x's dtype), h_post and h_res (grad_h_post [.., n], grad_h_res [.., n*n] or
    [.., n, n], float32) with respect to x, phi, alpha and bias, from the forward's inputs and saved tensors (h_pre,
    hc_before_norm, inv_rms, sum_out, norm_out of mhc_pre_sinkhorn with need_backward and the same hc_eps). Upstream's
    argument order. The matmuls run in fp32 (Ascend950) or on HF32 operands (Ascend910B / Ascend910_93). Returns
    MhcPreSinkhornGrads(grad_x (x's shape and dtype; may be given), grad_phi, grad_alpha, grad_bias (float32))."""
    if grad_x is None:
        grad_x = empty_like_dtype(x, shape_of(x))
    grad_phi = empty(x, shape_of(phi), "float32")
    grad_alpha = empty(x, shape_of(alpha), "float32")
    grad_bias = empty(x, shape_of(bias), "float32")
    _C.mhc_pre_sinkhorn_backward(arg(grad_hin), arg(grad_h_post), arg(grad_h_res), arg(x), arg(phi), arg(alpha),
                                 arg(bias), arg(h_pre), arg(hc_before_norm), arg(inv_rms), arg(sum_out),
                                 arg(norm_out), float(hc_eps), arg(grad_x), arg(grad_phi), arg(grad_alpha),
                                 arg(grad_bias))
    return MhcPreSinkhornGrads(result(grad_x), grad_phi, grad_alpha, grad_bias)


BlockAttentionResidualsResult = namedtuple("BlockAttentionResidualsResult", "hidden_states inv_norm probs")
BlockAttentionResidualsGrads = namedtuple("BlockAttentionResidualsGrads",
                                          "grad_partial_block grad_block_res grad_proj_weight grad_norm_weight")


def block_attention_residuals_saved_shape(partial_block_shape, block_res_shape):
    """The shape of the saved inv_norm and probs: [T, N + 1] for partial_block [T, H] and block_res [T, N, H]."""
    return (partial_block_shape[0], block_res_shape[1] + 1)


def block_attention_residuals(partial_block, block_res, proj_weight, norm_weight, *, valid_block_num=-1,
                              norm_eps=1e-6, need_backward=True, hidden_states=None):
    """aclnnBlockAttentionResiduals (include/aclnnop/aclnn_block_attention_residuals.h): per token, attention over
    its N + 1 block-level values v = (block_res[t, 0..N-1, :], partial_block[t, :]) scored by their RMS-normed
    projection: inv_norm[i] = 1 / sqrt(mean_h v[i]^2 + norm_eps), score[i] = sum_h v[i] inv_norm[i] norm_weight
    proj_weight, probs = softmax(score), hidden_states = sum_i probs[i] v[i] (rounded once to the inputs' dtype).
    partial_block [T, H], block_res [T, N, H] (1 <= N <= 100), proj_weight [H] or [1, H], norm_weight [H]: one
    dtype of float32 / float16 / bfloat16; valid_block_num -1 or N; norm_eps > 0. Returns
    BlockAttentionResidualsResult(hidden_states [T, H] (may be given, any strides), inv_norm, probs (float32
    [T, N + 1], what the gradient reads)); the last two None without need_backward (the operator then neither checks
    nor writes them)."""
    if hidden_states is None:
        hidden_states = empty_like_dtype(partial_block, shape_of(partial_block))
    inv_norm = probs = None
    if need_backward:
        shape = block_attention_residuals_saved_shape(shape_of(partial_block), shape_of(block_res))
        inv_norm, probs = empty(partial_block, shape, "float32"), empty(partial_block, shape, "float32")
    _C.block_attention_residuals(arg(partial_block), arg(block_res), arg(proj_weight), arg(norm_weight),
                                 int(valid_block_num), float(norm_eps), bool(need_backward), arg(hidden_states),
                                 arg(inv_norm), arg(probs))
    return BlockAttentionResidualsResult(result(hidden_states), inv_norm, probs)


def block_attention_residuals_grad(partial_block, block_res, proj_weight, norm_weight, grad_hidden_states, inv_norm,
                                   probs, *, valid_block_num=-1, grad_partial_block=None, grad_block_res=None,
                                   grad_proj_weight=None, grad_norm_weight=None):
    """aclnnBlockAttentionResidualsGrad (include/aclnnop/aclnn_block_attention_residuals_grad.h): the gradients of
    block_attention_residuals' hidden_states (grad_hidden_states [T, H]) with respect to its four inputs, from the
    forward's inv_norm and probs (float32 [T, N + 1]). proj_weight must be [1, H] here (upstream's rule; a forward
    given [H] passes proj_weight.reshape(1, -1)); 0 <= N <= 128; one dtype of float32 / float16 / bfloat16 for the
    inputs, grad_hidden_states and the gradients; valid_block_num -1, 0 (upstream's default) or N. Returns
    BlockAttentionResidualsGrads(grad_partial_block, grad_block_res, grad_proj_weight, grad_norm_weight), each the
    shape and dtype of its input (each may be given, any strides)."""
    dtype_of = partial_block
    if grad_partial_block is None:
        grad_partial_block = empty_like_dtype(dtype_of, shape_of(partial_block))
    if grad_block_res is None:
        grad_block_res = empty_like_dtype(dtype_of, shape_of(block_res))
    if grad_proj_weight is None:
        grad_proj_weight = empty_like_dtype(dtype_of, shape_of(proj_weight))
    if grad_norm_weight is None:
        grad_norm_weight = empty_like_dtype(dtype_of, shape_of(norm_weight))
    _C.block_attention_residuals_grad(arg(partial_block), arg(block_res), arg(proj_weight), arg(norm_weight),
                                      arg(grad_hidden_states), arg(inv_norm), arg(probs), int(valid_block_num),
                                      arg(grad_partial_block), arg(grad_block_res), arg(grad_proj_weight),
                                      arg(grad_norm_weight))
    return BlockAttentionResidualsGrads(result(grad_partial_block), result(grad_block_res), result(grad_proj_weight),
                                        result(grad_norm_weight))
