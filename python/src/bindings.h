// The operator groups of gradkit._C; each adds its functions to the module (module.cpp calls them all).
// New operators add a bindXxx here and a file of their own.
#pragma once

#include <pybind11/pybind11.h>

namespace gradkit::python {

/** threshold_backward: aclnnThresholdBackward (the backward of ReLU). */
void bindThresholdBackward(pybind11::module_& module);

/** native_dropout, native_dropout_backward (gradkit's host dispatch), dropout_v3_grad, native_dropout_scale. */
void bindDropout(pybind11::module_& module);

/** mhc_pre (aclnnMhcPre / V2), mhc_pre_backward (aclnnMhcPreBackward / V2). */
void bindMhc(pybind11::module_& module);
/** mhc_post (aclnnMhcPost), mhc_post_backward (aclnnMhcPostBackward). */
void bindMhcPost(pybind11::module_& module);
/** mhc_sinkhorn (aclnnMhcSinkhorn), mhc_sinkhorn_backward (aclnnMhcSinkhornBackward). */
void bindMhcSinkhorn(pybind11::module_& module);
/** mhc_pre_sinkhorn (aclnnMhcPreSinkhorn), mhc_pre_sinkhorn_backward (aclnnMhcPreSinkhornBackward). */
void bindMhcPreSinkhorn(pybind11::module_& module);
/** block_attention_residuals (aclnnBlockAttentionResiduals), block_attention_residuals_grad
 * (aclnnBlockAttentionResidualsGrad). */
void bindBlockAttentionResiduals(pybind11::module_& module);

/** compressor (aclnnCompressor, state cache in place), compressor_grad (aclnnCompressorGrad). */
void bindCompressor(pybind11::module_& module);

/** sparse_flash_mla (aclnnSparseFlashMla) and the family's metadata operators: sparse_flash_mla_metadata,
 * sparse_flash_mla_grad_metadata, sparse_flash_mla_softmax_l1_norm_metadata. */
void bindSparseFlashMla(pybind11::module_& module);

/** sparse_flash_mla_grad (aclnnSparseFlashMlaGrad). */
void bindSparseFlashMlaGrad(pybind11::module_& module);

/** sparse_flash_mla_softmax_l1_norm (aclnnSparseFlashMlaSoftmaxL1Norm). */
void bindSparseFlashMlaSoftmaxL1Norm(pybind11::module_& module);

/** lightning_indexer_v2 (+ _metadata), sparse_lightning_indexer_kl_loss_grad (+ _metadata). */
void bindLightningIndexer(pybind11::module_& module);

/** flash_attention_score (aclnnFlashAttentionScoreV2 / V4, VarLenScoreV2 / V4), flash_attention_score_grad (GradV2 /
 * V4, UnpaddingScoreGradV2 / V4): the entry point chosen by the arguments. */
void bindFlashAttention(pybind11::module_& module);

/** fa_sizes, compressor_output_lead, dropout_mask_bytes: the size models (ops/flash_attention/fa_layout.h,
 * ops/compressor/compressor_layout.h) for gradkit.ops' shape helpers. */
void bindShapeModels(pybind11::module_& module);

}  // namespace gradkit::python
