// gradkit._C.lightning_indexer_v2 / sparse_lightning_indexer_kl_loss_grad and their metadata operators
// (aclnnLightningIndexerV2, aclnnLightningIndexerV2Metadata, aclnnSparseLightningIndexerKLLossGrad,
// aclnnSparseLightningIndexerKLLossGradMetadata) into caller-provided outputs. Optional tensors are None.
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad_metadata.h"
#include "bindings.h"
#include "sparse_attention_args.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

/** The five optional INT32 length tensors of the indexer family: cu_seqlens q / k, seqused q / k, the residual. */
struct IndexerLengths {
  IndexerLengths(py::handle cuQ, py::handle cuK, py::handle usedQ, py::handle usedK, py::handle residual)
      : cuQ_(TensorArg::fromOptional(cuQ, "cu_seqlens_q", false)),
        cuK_(TensorArg::fromOptional(cuK, "cu_seqlens_k", false)),
        usedQ_(TensorArg::fromOptional(usedQ, "seqused_q", false)),
        usedK_(TensorArg::fromOptional(usedK, "seqused_k", false)),
        residual_(TensorArg::fromOptional(residual, "cmp_residual_k", false)) {}
  std::optional<TensorArg> cuQ_, cuK_, usedQ_, usedK_, residual_;
};

void lightningIndexerV2(py::handle q, py::handle k, py::handle w, py::handle cuSeqlensQ, py::handle cuSeqlensK,
                        py::handle sequsedQ, py::handle sequsedK, py::handle cmpResidualK, py::handle blockTable,
                        py::handle outputIdxOffset, py::handle metadata, int64_t topk, int64_t maxSeqlenQ,
                        const std::string& layoutQ, const std::string& layoutK, int64_t maskMode, int64_t cmpRatio,
                        int64_t returnValue, py::handle sparseIndices, py::handle sparseValues) {
  const TensorArg qArg = TensorArg::from(q, "q", false);
  const TensorArg kArg = TensorArg::from(k, "k", false);
  const TensorArg wArg = TensorArg::from(w, "w", false);
  const IndexerLengths lengths(cuSeqlensQ, cuSeqlensK, sequsedQ, sequsedK, cmpResidualK);
  const auto tableArg = TensorArg::fromOptional(blockTable, "block_table", false);
  const auto offsetArg = TensorArg::fromOptional(outputIdxOffset, "output_idx_offset", false);
  const auto metadataArg = TensorArg::fromOptional(metadata, "metadata", false);
  const TensorArg indicesArg = TensorArg::from(sparseIndices, "sparse_indices", true);
  const TensorArg valuesArg = TensorArg::from(sparseValues, "sparse_values", true);
  LayoutString layoutQText(layoutQ), layoutKText(layoutK);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnLightningIndexerV2",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnLightningIndexerV2GetWorkspaceSize(
            qArg.get(), kArg.get(), wArg.get(), handleOf(lengths.cuQ_), handleOf(lengths.cuK_),
            handleOf(lengths.usedQ_), handleOf(lengths.usedK_), handleOf(lengths.residual_), handleOf(tableArg),
            handleOf(offsetArg), handleOf(metadataArg), topk, maxSeqlenQ, layoutQText.get(), layoutKText.get(),
            maskMode, cmpRatio, returnValue, indicesArg.get(), valuesArg.get(), size, executor);
      },
      aclnnLightningIndexerV2);
}

void lightningIndexerV2Metadata(py::handle cuSeqlensQ, py::handle cuSeqlensK, py::handle sequsedQ, py::handle sequsedK,
                                py::handle cmpResidualK, int64_t numHeadsQ, int64_t numHeadsK, int64_t headDim,
                                int64_t topk, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenK,
                                const std::optional<std::string>& layoutQ, const std::optional<std::string>& layoutK,
                                int64_t maskMode, int64_t cmpRatio, py::handle metadata) {
  const IndexerLengths lengths(cuSeqlensQ, cuSeqlensK, sequsedQ, sequsedK, cmpResidualK);
  const TensorArg metadataArg = TensorArg::from(metadata, "metadata", true);
  LayoutString layoutQText(layoutQ), layoutKText(layoutK);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnLightningIndexerV2Metadata",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnLightningIndexerV2MetadataGetWorkspaceSize(
            handleOf(lengths.cuQ_), handleOf(lengths.cuK_), handleOf(lengths.usedQ_), handleOf(lengths.usedK_),
            handleOf(lengths.residual_), numHeadsQ, numHeadsK, headDim, topk, batchSize, maxSeqlenQ, maxSeqlenK,
            layoutQText.get(), layoutKText.get(), maskMode, cmpRatio, metadataArg.get(), size, executor);
      },
      aclnnLightningIndexerV2Metadata);
}

void klLossGrad(py::handle q, py::handle k, py::handle w, py::handle sparseIndices, py::handle attnSoftmaxL1Norm,
                py::handle cuSeqlensQ, py::handle cuSeqlensK, py::handle sequsedQ, py::handle sequsedK,
                py::handle cmpResidualK, py::handle metadata, const std::string& layoutQ, const std::string& layoutK,
                int64_t maskMode, int64_t cmpRatio, py::handle dq, py::handle dk, py::handle dw,
                py::handle softmaxOut) {
  const TensorArg qArg = TensorArg::from(q, "q", false);
  const TensorArg kArg = TensorArg::from(k, "k", false);
  const TensorArg wArg = TensorArg::from(w, "w", false);
  const TensorArg indicesArg = TensorArg::from(sparseIndices, "sparse_indices", false);
  const TensorArg targetArg = TensorArg::from(attnSoftmaxL1Norm, "attn_softmax_l1_norm", false);
  const IndexerLengths lengths(cuSeqlensQ, cuSeqlensK, sequsedQ, sequsedK, cmpResidualK);
  const auto metadataArg = TensorArg::fromOptional(metadata, "metadata", false);
  const TensorArg dqArg = TensorArg::from(dq, "dq", true);
  const TensorArg dkArg = TensorArg::from(dk, "dk", true);
  const TensorArg dwArg = TensorArg::from(dw, "dw", true);
  const TensorArg softmaxArg = TensorArg::from(softmaxOut, "softmax_out", true);
  LayoutString layoutQText(layoutQ), layoutKText(layoutK);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnSparseLightningIndexerKLLossGrad",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
            qArg.get(), kArg.get(), wArg.get(), indicesArg.get(), targetArg.get(), handleOf(lengths.cuQ_),
            handleOf(lengths.cuK_), handleOf(lengths.usedQ_), handleOf(lengths.usedK_), handleOf(lengths.residual_),
            handleOf(metadataArg), layoutQText.get(), layoutKText.get(), maskMode, cmpRatio, dqArg.get(), dkArg.get(),
            dwArg.get(), softmaxArg.get(), size, executor);
      },
      aclnnSparseLightningIndexerKLLossGrad);
}

void klLossGradMetadata(py::handle cuSeqlensQ, py::handle cuSeqlensK, py::handle sequsedQ, py::handle sequsedK,
                        py::handle cmpResidualK, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenK,
                        int64_t numHeadsQ, int64_t numHeadsK, int64_t headDim, int64_t topk,
                        const std::optional<std::string>& layoutQ, const std::optional<std::string>& layoutK,
                        int64_t maskMode, int64_t cmpRatio, py::handle metadata) {
  const IndexerLengths lengths(cuSeqlensQ, cuSeqlensK, sequsedQ, sequsedK, cmpResidualK);
  const TensorArg metadataArg = TensorArg::from(metadata, "metadata", true);
  LayoutString layoutQText(layoutQ), layoutKText(layoutK);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnSparseLightningIndexerKLLossGradMetadata",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnSparseLightningIndexerKLLossGradMetadataGetWorkspaceSize(
            handleOf(lengths.cuQ_), handleOf(lengths.cuK_), handleOf(lengths.usedQ_), handleOf(lengths.usedK_),
            handleOf(lengths.residual_), batchSize, maxSeqlenQ, maxSeqlenK, numHeadsQ, numHeadsK, headDim, topk,
            layoutQText.get(), layoutKText.get(), maskMode, cmpRatio, metadataArg.get(), size, executor);
      },
      aclnnSparseLightningIndexerKLLossGradMetadata);
}

}  // namespace

void bindLightningIndexer(py::module_& module) {
  module.def("lightning_indexer_v2", &lightningIndexerV2, py::arg("q"), py::arg("k"), py::arg("w"),
             py::arg("cu_seqlens_q"), py::arg("cu_seqlens_k"), py::arg("seqused_q"), py::arg("seqused_k"),
             py::arg("cmp_residual_k"), py::arg("block_table"), py::arg("output_idx_offset"), py::arg("metadata"),
             py::arg("topk"), py::arg("max_seqlen_q"), py::arg("layout_q"), py::arg("layout_k"), py::arg("mask_mode"),
             py::arg("cmp_ratio"), py::arg("return_value"), py::arg("sparse_indices"), py::arg("sparse_values"),
             "aclnnLightningIndexerV2 into sparse_indices and (return_value 1) sparse_values (None for optional "
             "tensors).");
  module.def("lightning_indexer_v2_metadata", &lightningIndexerV2Metadata, py::arg("cu_seqlens_q"),
             py::arg("cu_seqlens_k"), py::arg("seqused_q"), py::arg("seqused_k"), py::arg("cmp_residual_k"),
             py::arg("num_heads_q"), py::arg("num_heads_k"), py::arg("head_dim"), py::arg("topk"),
             py::arg("batch_size"), py::arg("max_seqlen_q"), py::arg("max_seqlen_k"), py::arg("layout_q"),
             py::arg("layout_k"), py::arg("mask_mode"), py::arg("cmp_ratio"), py::arg("metadata"),
             "aclnnLightningIndexerV2Metadata into metadata (INT32 [1024]).");
  module.def("sparse_lightning_indexer_kl_loss_grad", &klLossGrad, py::arg("q"), py::arg("k"), py::arg("w"),
             py::arg("sparse_indices"), py::arg("attn_softmax_l1_norm"), py::arg("cu_seqlens_q"),
             py::arg("cu_seqlens_k"), py::arg("seqused_q"), py::arg("seqused_k"), py::arg("cmp_residual_k"),
             py::arg("metadata"), py::arg("layout_q"), py::arg("layout_k"), py::arg("mask_mode"), py::arg("cmp_ratio"),
             py::arg("dq"), py::arg("dk"), py::arg("dw"), py::arg("softmax_out"),
             "aclnnSparseLightningIndexerKLLossGrad into dq, dk, dw and softmax_out (None for optional tensors).");
  module.def("sparse_lightning_indexer_kl_loss_grad_metadata", &klLossGradMetadata, py::arg("cu_seqlens_q"),
             py::arg("cu_seqlens_k"), py::arg("seqused_q"), py::arg("seqused_k"), py::arg("cmp_residual_k"),
             py::arg("batch_size"), py::arg("max_seqlen_q"), py::arg("max_seqlen_k"), py::arg("num_heads_q"),
             py::arg("num_heads_k"), py::arg("head_dim"), py::arg("topk"), py::arg("layout_q"), py::arg("layout_k"),
             py::arg("mask_mode"), py::arg("cmp_ratio"), py::arg("metadata"),
             "aclnnSparseLightningIndexerKLLossGradMetadata into metadata (INT32 [64]).");
}

}  // namespace gradkit::python
