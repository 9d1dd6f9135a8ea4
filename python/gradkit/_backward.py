"""What the operators save for their backward and how the backward runs, shared by gradkit.autograd's Functions and
gradkit.library's custom ops. A backward is made for the operator it calls: gradkit.ops' in a Function, the
traceable torch.ops.gradkit one in a custom op's registered backward. The setups name their arguments as
torch.library passes them: (ctx, inputs, output)."""
import torch

from . import ops


def relu_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def relu_backward(threshold_backward):
    """ReLU's backward: threshold_backward(grad, output, 0), as PyTorch's own."""

    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return threshold_backward(grad, y, 0)

    return backward


def dropout_setup(ctx, inputs, output):
    _, p, training, _, _ = inputs
    ctx.save_for_backward(output[1])
    ctx.scale = ops.native_dropout_scale(p, training)
    ctx.mark_non_differentiable(output[1])


def dropout_backward(native_dropout_backward):
    """native_dropout's backward: grad * keep * scale with the saved mask (no gradient for the other inputs)."""

    def backward(ctx, grad, _grad_mask):
        (mask,) = ctx.saved_tensors
        return native_dropout_backward(grad, mask, ctx.scale), None, None, None, None

    return backward


def mhc_output_grads(x, h_post, res_shape, grad_h_in, grad_h_post, grad_h_res):
    """mhc_pre's output gradients with zeros of their shape for outputs that took no part in the loss (autograd gives
    None there); res_shape None: alpha [2], which has no backward."""
    if grad_h_in is None:
        grad_h_in = torch.zeros(x.shape[:-2] + x.shape[-1:], dtype=x.dtype)
    if grad_h_post is None:
        grad_h_post = torch.zeros(h_post.shape, dtype=torch.float32)
    if grad_h_res is None:
        if res_shape is None:
            raise NotImplementedError("aclnnMhcPreBackward has no alpha [2] variant (no h_res)")
        grad_h_res = torch.zeros(res_shape, dtype=torch.float32)
    return grad_h_in, grad_h_post, grad_h_res



def mhc_post_setup(ctx, inputs, output):
    x, h_res, h_out, h_post = inputs
    ctx.save_for_backward(x, h_res, h_out, h_post)


def mhc_post_backward(mhc_post_backward_op):
    """mhc_post's backward: (grad_x, grad_h_res, grad_h_out, grad_h_post); none for h_res when it was None."""

    def backward(ctx, grad):
        x, h_res, h_out, h_post = ctx.saved_tensors
        grad_x, grad_h_res, grad_h_out, grad_h_post = mhc_post_backward_op(grad.contiguous(), x, h_res, h_out, h_post)
        return grad_x, grad_h_res if h_res is not None else None, grad_h_out, grad_h_post

    return backward


def mhc_sinkhorn_forward(x, eps, num_iters, save):
    """ops.mhc_sinkhorn as three tensors (output, norm_out, sum_out); without save the saved steps are empty tensors
    (an autograd output or a custom op's cannot be None)."""
    out = ops.mhc_sinkhorn(x, eps, num_iters, save=save)
    if save:
        return tuple(out)
    return out.output, torch.empty(0, dtype=torch.float32), torch.empty(0, dtype=torch.float32)


def mhc_sinkhorn_setup(ctx, inputs, output):
    """Saves the forward's steps (norm_out, sum_out: outputs that take no gradient)."""
    _output, norm_out, sum_out = output
    ctx.save_for_backward(norm_out, sum_out)
    ctx.saved_steps = inputs[3]  # save
    ctx.mark_non_differentiable(norm_out, sum_out)


def mhc_sinkhorn_backward(mhc_sinkhorn_backward_op):
    """mhc_sinkhorn's backward: the gradient of x (none for eps, num_iters, save) from the saved steps."""

    def backward(ctx, grad, _grad_norm, _grad_sum):
        if not ctx.saved_steps:
            raise RuntimeError("mhc_sinkhorn ran with save=False: it kept no steps for the backward")
        norm_out, sum_out = ctx.saved_tensors
        return mhc_sinkhorn_backward_op(grad.contiguous(), norm_out, sum_out), None, None, None

    return backward


def mhc_pre_sinkhorn_forward(x, phi, alpha, bias, hc_mult, num_iters, hc_eps, norm_eps, need_backward):
    """ops.mhc_pre_sinkhorn as eight tensors (hin, h_post, h_res, h_pre, hc_before_norm, inv_rms, sum_out, norm_out);
    without need_backward the last five are empty tensors (an autograd output or a custom op's cannot be None)."""
    out = ops.mhc_pre_sinkhorn(x, phi, alpha, bias, hc_mult=hc_mult, num_iters=num_iters, hc_eps=hc_eps,
                               norm_eps=norm_eps, need_backward=need_backward)
    if need_backward:
        return tuple(out)
    return out[:3] + tuple(torch.empty(0, dtype=torch.float32) for _ in range(5))


def mhc_pre_sinkhorn_setup(ctx, inputs, output):
    """Saves the inputs and the forward's saved tensors (outputs that take no gradient) for the backward."""
    x, phi, alpha, bias, _hc_mult, _num_iters, hc_eps, _norm_eps, need_backward = inputs
    saved = output[3:]
    ctx.save_for_backward(x, phi, alpha, bias, *saved)
    ctx.hc_eps, ctx.saved_steps = hc_eps, need_backward
    ctx.mark_non_differentiable(*saved)


def mhc_pre_sinkhorn_backward(mhc_pre_sinkhorn_backward_op):
    """mhc_pre_sinkhorn's backward: the gradients of x, phi, alpha and bias (none for the numbers) from the saved
    tensors; outputs that took no part in the loss get zero gradients."""

    def backward(ctx, grad_hin, grad_h_post, grad_h_res, *_saved_grads):
        if not ctx.saved_steps:
            raise RuntimeError("mhc_pre_sinkhorn ran with need_backward=False: it kept nothing for the backward")
        x, phi, alpha, bias, h_pre, hc_before_norm, inv_rms, sum_out, norm_out = ctx.saved_tensors
        lead, n = x.shape[:-2], x.shape[-2]
        if grad_hin is None:
            grad_hin = torch.zeros(lead + x.shape[-1:], dtype=x.dtype)
        if grad_h_post is None:
            grad_h_post = torch.zeros(h_pre.shape, dtype=torch.float32)
        if grad_h_res is None:
            grad_h_res = torch.zeros(lead + (n * n,), dtype=torch.float32)
        grads = mhc_pre_sinkhorn_backward_op(grad_hin, grad_h_post, grad_h_res, x, phi, alpha, bias, h_pre,
                                             hc_before_norm, inv_rms, sum_out, norm_out, hc_eps=ctx.hc_eps)
        return tuple(grads) + (None,) * 5

    return backward


def block_attention_residuals_forward(partial_block, block_res, proj_weight, norm_weight, valid_block_num, norm_eps,
                                      need_backward):
    """ops.block_attention_residuals as three tensors (hidden_states, inv_norm, probs); without need_backward the
    last two are empty tensors (an autograd output or a custom op's cannot be None)."""
    out = ops.block_attention_residuals(partial_block, block_res, proj_weight, norm_weight,
                                        valid_block_num=valid_block_num, norm_eps=norm_eps,
                                        need_backward=need_backward)
    if need_backward:
        return tuple(out)
    return out.hidden_states, torch.empty(0, dtype=torch.float32), torch.empty(0, dtype=torch.float32)


def block_attention_residuals_setup(ctx, inputs, output):
    """Saves the four inputs and the forward's inv_norm and probs (outputs that take no gradient)."""
    partial_block, block_res, proj_weight, norm_weight, valid_block_num, _norm_eps, need_backward = inputs
    _hidden, inv_norm, probs = output
    ctx.save_for_backward(partial_block, block_res, proj_weight, norm_weight, inv_norm, probs)
    ctx.valid_block_num, ctx.saved_steps = valid_block_num, need_backward
    ctx.mark_non_differentiable(inv_norm, probs)


def block_attention_residuals_backward(block_attention_residuals_grad_op):
    """block_attention_residuals' backward: the gradients of partial_block, block_res, proj_weight (in its own shape,
    [H] or [1, H]; the operator takes [1, H]) and norm_weight (none for the numbers) from the saved tensors."""

    def backward(ctx, grad_hidden, _grad_inv_norm, _grad_probs):
        if not ctx.saved_steps:
            raise RuntimeError("block_attention_residuals ran with need_backward=False: it kept nothing for the "
                               "backward")
        partial_block, block_res, proj_weight, norm_weight, inv_norm, probs = ctx.saved_tensors
        grads = block_attention_residuals_grad_op(partial_block, block_res, proj_weight.reshape(1, -1), norm_weight,
                                                  grad_hidden, inv_norm, probs, valid_block_num=ctx.valid_block_num)
        grad_partial, grad_block_res, grad_proj, grad_norm = grads
        return grad_partial, grad_block_res, grad_proj.reshape(proj_weight.shape), grad_norm, None, None, None

    return backward


def indexer_kl_loss(target, softmax_out):
    """The lightning indexer's KL loss from aclnnSparseLightningIndexerKLLossGrad's softmax_out y and the target p:
    sum p log(p / y) over the slots where both are positive, in fp64, as a float32 scalar."""
    p, y = target.double(), softmax_out.double()
    used = (p > 0) & (y > 0)
    terms = torch.where(used, p * (torch.log(torch.where(used, p, torch.ones_like(p))) -
                                   torch.log(torch.where(used, y, torch.ones_like(y)))), torch.zeros_like(p))
    return terms.sum().float()
