"""The pure-torch mHC references of gradkit.reference (pre-mapping, Sinkhorn projection, the two fused, post-mapping,
block attention residuals, HF32 rounding), re-exported there: no gradkit call inside."""
import torch
import torch.nn.functional as F


def mhc_pre(x, phi, alpha, bias, gamma=None, norm_eps=1e-6, hc_eps=1e-6, compute=torch.float32, hf32=False,
            hf32_backward=False):
    """The mHC pre-mapping of docs/mhc.md in `compute` precision: (h_in in x's dtype, h_post, h_res) with h_res
    [.., N, N] when phi has N^2 + 2N rows, else [.., F - 2N]; (h_in, h_post) for alpha [2]. hf32 rounds the
    matmul operands to HF32 (11 explicit mantissa bits, ties away from zero), as opImplMode 1 does. Autograd does
    not differentiate that rounding: the backward's two matmuls take h_mix's gradient and the fp32 operands, or with
    hf32_backward all three rounded to HF32 (aclnnMhcPreBackwardV2 opImplMode 1, MhcPreSinkhornBackward on A2/A3)."""
    shape = x.shape
    lead, n, d = shape[:-2], shape[-2], shape[-1]
    xf = x.to(compute).reshape(*lead, n * d)
    inv_rms = torch.rsqrt(xf.square().mean(-1, keepdim=True) + norm_eps)
    xg = xf if gamma is None else xf * gamma.to(compute).reshape(n * d)
    phi_c = phi.to(compute)
    h_mix = _Hf32Linear.apply(xg, phi_c, hf32_backward) if hf32 else F.linear(xg, phi_c)
    w = h_mix * inv_rms
    alpha_c, bias_c = alpha.to(compute), bias.to(compute)
    h_pre = torch.sigmoid(w[..., :n] * alpha_c[0] + bias_c[:n]) + hc_eps
    h_post = 2 * torch.sigmoid(w[..., n:2 * n] * alpha_c[1] + bias_c[n:2 * n])
    h_in = (h_pre.unsqueeze(-1) * xf.reshape(*lead, n, d)).sum(-2).to(x.dtype)
    if alpha.shape[0] == 2:
        return h_in, h_post + hc_eps
    h_res = w[..., 2 * n:] * alpha_c[2] + bias_c[2 * n:]
    if h_res.shape[-1] == n * n:
        h_res = h_res.reshape(*lead, n, n)
    return h_in, h_post, h_res


def mhc_post(x, h_res, h_out, h_post, compute=torch.float32):
    """The mHC post-mapping of docs/mhc.md in `compute` precision, rounded to x's dtype: h_res^T x + h_out (x) h_post
    per token (h_res None: x + h_out (x) h_post)."""
    xc = x.to(compute)
    mixed = xc if h_res is None else torch.einsum("...ij,...id->...jd", h_res.to(compute), xc)
    return (mixed + h_post.to(compute).unsqueeze(-1) * h_out.to(compute).unsqueeze(-2)).to(x.dtype)


def mhc_sinkhorn(x, eps=1e-6, num_iters=20, compute=None):
    """The Sinkhorn-Knopp projection of aclnnMhcSinkhorn per [.., n, n] matrix, in `compute` precision (None: x's
    dtype), returned in it: softmax over the last dim; then (norm + eps) / (colsum(norm + eps) + eps); then
    alternately norm / (rowsum + eps) and norm / (colsum + eps), 2 num_iters - 1 divisions after the softmax."""
    norm = torch.softmax(x.to(compute or x.dtype), dim=-1)
    for k in range(1, 2 * num_iters):
        if k == 1:
            norm = norm + eps  # the first step alone adds eps to the matrix as well as to its sums
        dim = -2 if k % 2 else -1  # odd steps: column sums (over the rows), even steps: row sums
        norm = norm / (norm.sum(dim, keepdim=True) + eps)
    return norm


def mhc_pre_sinkhorn(x, phi, alpha, bias, hc_mult=4, num_iters=20, hc_eps=1e-6, norm_eps=1e-6, compute=torch.float32,
                     hf32=True, hf32_backward=False):
    """aclnnMhcPreSinkhorn's formula in `compute` precision: mhc_pre (no gamma; hf32: the matmul operands rounded to
    HF32 as the NPU's cube unit rounds them, which gradkit's forward emulates) whose residual logits [.., n, n] go
    through mhc_sinkhorn(eps=hc_eps, num_iters). Returns (hin in x's dtype, h_post [.., n], h_res [.., n*n]),
    differentiable in x, phi, alpha and bias; the backward's matmuls take fp32 operands, as the Ascend950 backward
    does, or with hf32_backward operands rounded to HF32, as the Ascend910B / Ascend910_93 backward does (mhc_pre)."""
    if x.shape[-2] != hc_mult:
        raise ValueError(f"x's dim -2 (n = {x.shape[-2]}) must equal hc_mult ({hc_mult})")
    hin, h_post, logits = mhc_pre(x, phi, alpha, bias, None, norm_eps, hc_eps, compute, hf32, hf32_backward)
    h_res = mhc_sinkhorn(logits, hc_eps, num_iters, compute)
    return hin, h_post, h_res.reshape(*h_res.shape[:-2], hc_mult * hc_mult)


def block_attention_residuals(partial_block, block_res, proj_weight, norm_weight, valid_block_num=-1, norm_eps=1e-6,
                              compute=torch.float32, intermediates=False):
    """aclnnBlockAttentionResiduals' formula in `compute` precision, differentiable in all four inputs: per token the
    N + 1 values v = (block_res[t, 0..N-1, :], partial_block[t, :]), inv_norm = 1 / sqrt(mean_h v^2 + norm_eps),
    score = sum_h v inv_norm norm_weight proj_weight, probs = softmax(score) over the N + 1 values, hidden_states =
    sum_i probs[i] v[i] rounded to partial_block's dtype. proj_weight [H] or [1, H]; valid_block_num -1 or N (every
    block; anything else is a ValueError, as the operator refuses it). Returns hidden_states [T, H]; with
    intermediates (hidden_states, inv_norm, probs), the last two [T, N + 1] in `compute`."""
    blocks = block_res.shape[1]
    if valid_block_num not in (-1, blocks):
        raise ValueError(f"valid_block_num must be -1 or N = {blocks} (block_res dim 1), given {valid_block_num}")
    values = torch.cat([block_res.to(compute), partial_block.to(compute).unsqueeze(1)], dim=1)  # [T, N + 1, H]
    inv_norm = torch.rsqrt(values.square().mean(-1) + norm_eps)
    weight = norm_weight.to(compute) * proj_weight.to(compute).reshape(-1)
    scores = ((values * inv_norm.unsqueeze(-1)) * weight).sum(-1)
    probs = torch.softmax(scores, dim=-1)
    hidden_states = (probs.unsqueeze(-1) * values).sum(1).to(partial_block.dtype)
    if intermediates:
        return hidden_states, inv_norm, probs
    return hidden_states


class _Hf32Linear(torch.autograd.Function):
    """F.linear(xg, phi) on operands rounded to HF32. The backward is F.linear's (grad @ phi, grad^T @ xg): on the
    fp32 operands, or with round_operands on all three rounded to HF32 (autograd cannot differentiate round_hf32's
    bit operations, and the operators' backwards do not differentiate the rounding either)."""

    @staticmethod
    def forward(ctx, xg, phi, round_operands):
        ctx.save_for_backward(xg, phi)
        ctx.round_operands = round_operands
        return F.linear(round_hf32(xg), round_hf32(phi))

    @staticmethod
    def backward(ctx, grad):
        xg, phi = ctx.saved_tensors
        if ctx.round_operands:
            grad, xg, phi = round_hf32(grad), round_hf32(xg), round_hf32(phi)
        grad_phi = grad.reshape(-1, grad.shape[-1]).T @ xg.reshape(-1, xg.shape[-1])
        return grad @ phi, grad_phi, None


def round_hf32(values):
    """fp32 values rounded to HF32: 11 explicit mantissa bits, ties away from zero (fp32 range)."""
    bits = values.float().contiguous().view(torch.int32)
    rounded = (bits + 0x800) & ~0xFFF  # add half of the dropped 12 bits on the magnitude, then truncate
    finite = torch.isfinite(values.float())
    return torch.where(finite, rounded.view(torch.float32), values.float()).to(values.dtype)
