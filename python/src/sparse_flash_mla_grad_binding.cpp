// gradkit._C.sparse_flash_mla_grad: aclnnSparseFlashMlaGrad into caller-provided outputs (None for optional tensors
// and layouts).
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "bindings.h"
#include "sparse_attention_args.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void sparseFlashMlaGrad(py::handle query, py::handle dOut, py::handle out, py::handle lse, py::handle oriKv,
                        py::handle cmpKv, py::handle oriSparseIndices, py::handle cmpSparseIndices,
                        py::handle cuSeqlensQ, py::handle cuSeqlensOriKv, py::handle cuSeqlensCmpKv,
                        py::handle sequsedQ, py::handle sequsedOriKv, py::handle sequsedCmpKv, py::handle cmpResidualKv,
                        py::handle oriTopkLength, py::handle cmpTopkLength, py::handle sinks, py::handle metadata,
                        double scaleValue, int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode,
                        int64_t oriWinLeft, int64_t oriWinRight, const std::optional<std::string>& layoutQ,
                        const std::optional<std::string>& layoutKv, py::handle dQuery, py::handle dOriKv,
                        py::handle dCmpKv, py::handle dSinks, py::handle oriSoftmaxL1Norm,
                        py::handle cmpSoftmaxL1Norm) {
  const TensorArg queryArg = TensorArg::from(query, "query", false);
  const TensorArg dOutArg = TensorArg::from(dOut, "d_out", false);
  const TensorArg outArg = TensorArg::from(out, "out", false);
  const TensorArg lseArg = TensorArg::from(lse, "lse", false);
  const auto oriKvArg = TensorArg::fromOptional(oriKv, "ori_kv", false);
  const auto cmpKvArg = TensorArg::fromOptional(cmpKv, "cmp_kv", false);
  const auto oriIdxArg = TensorArg::fromOptional(oriSparseIndices, "ori_sparse_indices", false);
  const auto cmpIdxArg = TensorArg::fromOptional(cmpSparseIndices, "cmp_sparse_indices", false);
  const SparseLengthArgs lengths(cuSeqlensQ, cuSeqlensOriKv, cuSeqlensCmpKv, sequsedQ, sequsedOriKv, sequsedCmpKv,
                                 cmpResidualKv, oriTopkLength, cmpTopkLength);
  const auto sinksArg = TensorArg::fromOptional(sinks, "sinks", false);
  const auto metadataArg = TensorArg::fromOptional(metadata, "metadata", false);
  const TensorArg dQueryArg = TensorArg::from(dQuery, "d_query", true);
  const auto dOriKvArg = TensorArg::fromOptional(dOriKv, "d_ori_kv", true);
  const auto dCmpKvArg = TensorArg::fromOptional(dCmpKv, "d_cmp_kv", true);
  const auto dSinksArg = TensorArg::fromOptional(dSinks, "d_sinks", true);
  const auto oriNormArg = TensorArg::fromOptional(oriSoftmaxL1Norm, "ori_softmax_l1_norm", true);
  const auto cmpNormArg = TensorArg::fromOptional(cmpSoftmaxL1Norm, "cmp_softmax_l1_norm", true);
  LayoutString layoutQText(layoutQ), layoutKvText(layoutKv);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnSparseFlashMlaGrad",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnSparseFlashMlaGradGetWorkspaceSize(
            queryArg.get(), dOutArg.get(), outArg.get(), lseArg.get(), handleOf(oriKvArg), handleOf(cmpKvArg),
            handleOf(oriIdxArg), handleOf(cmpIdxArg), lengths.cuSeqlensQ(), lengths.cuSeqlensOriKv(),
            lengths.cuSeqlensCmpKv(), lengths.sequsedQ(), lengths.sequsedOriKv(), lengths.sequsedCmpKv(),
            lengths.cmpResidualKv(), lengths.oriTopkLength(), lengths.cmpTopkLength(), handleOf(sinksArg),
            handleOf(metadataArg), scaleValue, cmpRatio, oriMaskMode, cmpMaskMode, oriWinLeft, oriWinRight,
            layoutQText.get(), layoutKvText.get(), dQueryArg.get(), handleOf(dOriKvArg), handleOf(dCmpKvArg),
            handleOf(dSinksArg), handleOf(oriNormArg), handleOf(cmpNormArg), size, executor);
      },
      aclnnSparseFlashMlaGrad);
}

}  // namespace

void bindSparseFlashMlaGrad(py::module_& module) {
  module.def("sparse_flash_mla_grad", &sparseFlashMlaGrad, py::arg("query"), py::arg("d_out"), py::arg("out"),
             py::arg("lse"), py::arg("ori_kv"), py::arg("cmp_kv"), py::arg("ori_sparse_indices"),
             py::arg("cmp_sparse_indices"), py::arg("cu_seqlens_q"), py::arg("cu_seqlens_ori_kv"),
             py::arg("cu_seqlens_cmp_kv"), py::arg("seqused_q"), py::arg("seqused_ori_kv"), py::arg("seqused_cmp_kv"),
             py::arg("cmp_residual_kv"), py::arg("ori_topk_length"), py::arg("cmp_topk_length"), py::arg("sinks"),
             py::arg("metadata"), py::arg("scale_value"), py::arg("cmp_ratio"), py::arg("ori_mask_mode"),
             py::arg("cmp_mask_mode"), py::arg("ori_win_left"), py::arg("ori_win_right"), py::arg("layout_q"),
             py::arg("layout_kv"), py::arg("d_query"), py::arg("d_ori_kv"), py::arg("d_cmp_kv"), py::arg("d_sinks"),
             py::arg("ori_softmax_l1_norm"), py::arg("cmp_softmax_l1_norm"),
             "aclnnSparseFlashMlaGrad into d_query and the given optional gradients and softmax L1 norms (None for "
             "optional tensors and layouts).");
}

}  // namespace gradkit::python
