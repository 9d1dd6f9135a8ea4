// gradkit._C.sparse_flash_mla and the sparse attention family's metadata operators (aclnnSparseFlashMla,
// aclnnSparseFlashMlaMetadata, aclnnSparseFlashMlaGradMetadata, aclnnSparseFlashMlaSoftmaxL1NormMetadata) into
// caller-provided outputs. Optional tensors and layouts are None.
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm_metadata.h"
#include "bindings.h"
#include "sparse_attention_args.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void sparseFlashMla(py::handle q, py::handle oriKv, py::handle cmpKv, py::handle oriSparseIndices,
                    py::handle cmpSparseIndices, py::handle oriBlockTable, py::handle cmpBlockTable,
                    py::handle cuSeqlensQ, py::handle cuSeqlensOriKv, py::handle cuSeqlensCmpKv, py::handle sequsedQ,
                    py::handle sequsedOriKv, py::handle sequsedCmpKv, py::handle cmpResidualKv,
                    py::handle oriTopkLength, py::handle cmpTopkLength, py::handle sinks, py::handle metadata,
                    double softmaxScale, int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode, int64_t oriWinLeft,
                    int64_t oriWinRight, const std::optional<std::string>& layoutQ,
                    const std::optional<std::string>& layoutKv, int64_t topkValueMode, bool returnSoftmaxLse,
                    py::handle attnOut, py::handle softmaxLse) {
  const TensorArg qArg = TensorArg::from(q, "q", false);
  const auto oriKvArg = TensorArg::fromOptional(oriKv, "ori_kv", false);
  const auto cmpKvArg = TensorArg::fromOptional(cmpKv, "cmp_kv", false);
  const auto oriIdxArg = TensorArg::fromOptional(oriSparseIndices, "ori_sparse_indices", false);
  const auto cmpIdxArg = TensorArg::fromOptional(cmpSparseIndices, "cmp_sparse_indices", false);
  const auto oriTableArg = TensorArg::fromOptional(oriBlockTable, "ori_block_table", false);
  const auto cmpTableArg = TensorArg::fromOptional(cmpBlockTable, "cmp_block_table", false);
  const SparseLengthArgs lengths(cuSeqlensQ, cuSeqlensOriKv, cuSeqlensCmpKv, sequsedQ, sequsedOriKv, sequsedCmpKv,
                                 cmpResidualKv, oriTopkLength, cmpTopkLength);
  const auto sinksArg = TensorArg::fromOptional(sinks, "sinks", false);
  const auto metadataArg = TensorArg::fromOptional(metadata, "metadata", false);
  const TensorArg attnOutArg = TensorArg::from(attnOut, "attn_out", true);
  const auto lseArg = TensorArg::fromOptional(softmaxLse, "softmax_lse", true);
  LayoutString layoutQText(layoutQ), layoutKvText(layoutKv);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnSparseFlashMla",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnSparseFlashMlaGetWorkspaceSize(
            qArg.get(), handleOf(oriKvArg), handleOf(cmpKvArg), handleOf(oriIdxArg), handleOf(cmpIdxArg),
            handleOf(oriTableArg), handleOf(cmpTableArg), lengths.cuSeqlensQ(), lengths.cuSeqlensOriKv(),
            lengths.cuSeqlensCmpKv(), lengths.sequsedQ(), lengths.sequsedOriKv(), lengths.sequsedCmpKv(),
            lengths.cmpResidualKv(), lengths.oriTopkLength(), lengths.cmpTopkLength(), handleOf(sinksArg),
            handleOf(metadataArg), softmaxScale, cmpRatio, oriMaskMode, cmpMaskMode, oriWinLeft, oriWinRight,
            layoutQText.get(), layoutKvText.get(), topkValueMode, returnSoftmaxLse, attnOutArg.get(), handleOf(lseArg),
            size, executor);
      },
      aclnnSparseFlashMla);
}

/** aclnnSparseFlashMlaMetadata / aclnnSparseFlashMlaGradMetadata (the same 27 arguments, then metaData). */
template <auto Plan, auto Run>
void smlaMetadata(py::handle cuSeqlensQ, py::handle cuSeqlensOriKv, py::handle cuSeqlensCmpKv, py::handle sequsedQ,
                  py::handle sequsedOriKv, py::handle sequsedCmpKv, py::handle cmpResidualKv, py::handle oriTopkLength,
                  py::handle cmpTopkLength, int64_t numHeadsQ, int64_t numHeadsKv, int64_t headDim, int64_t batchSize,
                  int64_t maxSeqlenQ, int64_t maxSeqlenOriKv, int64_t maxSeqlenCmpKv, int64_t oriTopk, int64_t cmpTopk,
                  int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode, int64_t oriWinLeft, int64_t oriWinRight,
                  const std::optional<std::string>& layoutQ, const std::optional<std::string>& layoutKv, bool hasOriKv,
                  bool hasCmpKv, py::handle metadata, const std::string& api) {
  const SparseLengthArgs lengths(cuSeqlensQ, cuSeqlensOriKv, cuSeqlensCmpKv, sequsedQ, sequsedOriKv, sequsedCmpKv,
                                 cmpResidualKv, oriTopkLength, cmpTopkLength);
  const TensorArg metadataArg = TensorArg::from(metadata, "metadata", true);
  LayoutString layoutQText(layoutQ), layoutKvText(layoutKv);
  py::gil_scoped_release release;
  runTwoPhase(
      api,
      [&](uint64_t* size, aclOpExecutor** executor) {
        return Plan(lengths.cuSeqlensQ(), lengths.cuSeqlensOriKv(), lengths.cuSeqlensCmpKv(), lengths.sequsedQ(),
                    lengths.sequsedOriKv(), lengths.sequsedCmpKv(), lengths.cmpResidualKv(), lengths.oriTopkLength(),
                    lengths.cmpTopkLength(), numHeadsQ, numHeadsKv, headDim, batchSize, maxSeqlenQ, maxSeqlenOriKv,
                    maxSeqlenCmpKv, oriTopk, cmpTopk, cmpRatio, oriMaskMode, cmpMaskMode, oriWinLeft, oriWinRight,
                    layoutQText.get(), layoutKvText.get(), hasOriKv, hasCmpKv, metadataArg.get(), size, executor);
      },
      Run);
}

void softmaxL1NormMetadata(py::handle cuSeqlensQ, py::handle cuSeqlensK, py::handle sequsedQ, py::handle sequsedK,
                           py::handle cmpResidualK, py::handle topkLength, int64_t batchSize, int64_t maxSeqlenQ,
                           int64_t maxSeqlenK, int64_t numHeadsQ, int64_t numHeadsK, int64_t headDim, int64_t topk,
                           int64_t cmpRatio, int64_t maskMode, const std::string& layoutQ, const std::string& layoutK,
                           py::handle metadata) {
  const auto cuQ = TensorArg::fromOptional(cuSeqlensQ, "cu_seqlens_q", false);
  const auto cuK = TensorArg::fromOptional(cuSeqlensK, "cu_seqlens_k", false);
  const auto usedQ = TensorArg::fromOptional(sequsedQ, "seqused_q", false);
  const auto usedK = TensorArg::fromOptional(sequsedK, "seqused_k", false);
  const auto residual = TensorArg::fromOptional(cmpResidualK, "cmp_residual_k", false);
  const auto topkLen = TensorArg::fromOptional(topkLength, "topk_length", false);
  const TensorArg metadataArg = TensorArg::from(metadata, "metadata", true);
  LayoutString layoutQText(layoutQ), layoutKText(layoutK);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnSparseFlashMlaSoftmaxL1NormMetadata",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize(
            handleOf(cuQ), handleOf(cuK), handleOf(usedQ), handleOf(usedK), handleOf(residual), handleOf(topkLen),
            batchSize, maxSeqlenQ, maxSeqlenK, numHeadsQ, numHeadsK, headDim, topk, cmpRatio, maskMode,
            layoutQText.get(), layoutKText.get(), metadataArg.get(), size, executor);
      },
      aclnnSparseFlashMlaSoftmaxL1NormMetadata);
}

/** Defines `name` as the metadata operator Plan / Run under `api` with the shared keyword names. */
template <auto Plan, auto Run>
void defineSmlaMetadata(py::module_& module, const char* name, const char* api, const char* doc) {
  const std::string apiName = api;
  module.def(
      name,
      [apiName](py::handle cuQ, py::handle cuOri, py::handle cuCmp, py::handle usedQ, py::handle usedOri,
                py::handle usedCmp, py::handle residual, py::handle oriTopkLength, py::handle cmpTopkLength,
                int64_t numHeadsQ, int64_t numHeadsKv, int64_t headDim, int64_t batchSize, int64_t maxSeqlenQ,
                int64_t maxSeqlenOriKv, int64_t maxSeqlenCmpKv, int64_t oriTopk, int64_t cmpTopk, int64_t cmpRatio,
                int64_t oriMaskMode, int64_t cmpMaskMode, int64_t oriWinLeft, int64_t oriWinRight,
                const std::optional<std::string>& layoutQ, const std::optional<std::string>& layoutKv, bool hasOriKv,
                bool hasCmpKv, py::handle metadata) {
        smlaMetadata<Plan, Run>(cuQ, cuOri, cuCmp, usedQ, usedOri, usedCmp, residual, oriTopkLength, cmpTopkLength,
                                numHeadsQ, numHeadsKv, headDim, batchSize, maxSeqlenQ, maxSeqlenOriKv, maxSeqlenCmpKv,
                                oriTopk, cmpTopk, cmpRatio, oriMaskMode, cmpMaskMode, oriWinLeft, oriWinRight, layoutQ,
                                layoutKv, hasOriKv, hasCmpKv, metadata, apiName);
      },
      py::arg("cu_seqlens_q"), py::arg("cu_seqlens_ori_kv"), py::arg("cu_seqlens_cmp_kv"), py::arg("seqused_q"),
      py::arg("seqused_ori_kv"), py::arg("seqused_cmp_kv"), py::arg("cmp_residual_kv"), py::arg("ori_topk_length"),
      py::arg("cmp_topk_length"), py::arg("num_heads_q"), py::arg("num_heads_kv"), py::arg("head_dim"),
      py::arg("batch_size"), py::arg("max_seqlen_q"), py::arg("max_seqlen_ori_kv"), py::arg("max_seqlen_cmp_kv"),
      py::arg("ori_topk"), py::arg("cmp_topk"), py::arg("cmp_ratio"), py::arg("ori_mask_mode"),
      py::arg("cmp_mask_mode"), py::arg("ori_win_left"), py::arg("ori_win_right"), py::arg("layout_q"),
      py::arg("layout_kv"), py::arg("has_ori_kv"), py::arg("has_cmp_kv"), py::arg("metadata"), doc);
}

}  // namespace

void bindSparseFlashMla(py::module_& module) {
  module.def("sparse_flash_mla", &sparseFlashMla, py::arg("q"), py::arg("ori_kv"), py::arg("cmp_kv"),
             py::arg("ori_sparse_indices"), py::arg("cmp_sparse_indices"), py::arg("ori_block_table"),
             py::arg("cmp_block_table"), py::arg("cu_seqlens_q"), py::arg("cu_seqlens_ori_kv"),
             py::arg("cu_seqlens_cmp_kv"), py::arg("seqused_q"), py::arg("seqused_ori_kv"), py::arg("seqused_cmp_kv"),
             py::arg("cmp_residual_kv"), py::arg("ori_topk_length"), py::arg("cmp_topk_length"), py::arg("sinks"),
             py::arg("metadata"), py::arg("softmax_scale"), py::arg("cmp_ratio"), py::arg("ori_mask_mode"),
             py::arg("cmp_mask_mode"), py::arg("ori_win_left"), py::arg("ori_win_right"), py::arg("layout_q"),
             py::arg("layout_kv"), py::arg("topk_value_mode"), py::arg("return_softmax_lse"), py::arg("attn_out"),
             py::arg("softmax_lse"),
             "aclnnSparseFlashMla into attn_out and, with return_softmax_lse, softmax_lse (None for optional tensors "
             "and layouts).");
  defineSmlaMetadata<aclnnSparseFlashMlaMetadataGetWorkspaceSize, aclnnSparseFlashMlaMetadata>(
      module, "sparse_flash_mla_metadata", "aclnnSparseFlashMlaMetadata",
      "aclnnSparseFlashMlaMetadata into metadata (INT32 [1024]).");
  defineSmlaMetadata<aclnnSparseFlashMlaGradMetadataGetWorkspaceSize, aclnnSparseFlashMlaGradMetadata>(
      module, "sparse_flash_mla_grad_metadata", "aclnnSparseFlashMlaGradMetadata",
      "aclnnSparseFlashMlaGradMetadata into metadata words 0..6 (INT32 [1024]; Ascend950 only).");
  module.def("sparse_flash_mla_softmax_l1_norm_metadata", &softmaxL1NormMetadata, py::arg("cu_seqlens_q"),
             py::arg("cu_seqlens_k"), py::arg("seqused_q"), py::arg("seqused_k"), py::arg("cmp_residual_k"),
             py::arg("topk_length"), py::arg("batch_size"), py::arg("max_seqlen_q"), py::arg("max_seqlen_k"),
             py::arg("num_heads_q"), py::arg("num_heads_k"), py::arg("head_dim"), py::arg("topk"), py::arg("cmp_ratio"),
             py::arg("mask_mode"), py::arg("layout_q"), py::arg("layout_k"), py::arg("metadata"),
             "aclnnSparseFlashMlaSoftmaxL1NormMetadata into metadata (INT32 [64]; Ascend950 only).");
}

}  // namespace gradkit::python
