// gradkit._C.sparse_flash_mla_softmax_l1_norm: aclnnSparseFlashMlaSoftmaxL1Norm into a caller-provided output (None
// for optional tensors and layouts).
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h"
#include "bindings.h"
#include "sparse_attention_args.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void softmaxL1Norm(py::handle q, py::handle k, py::handle softmaxLse, py::handle sparseIndices, py::handle cuSeqlensQ,
                   py::handle cuSeqlensK, py::handle sequsedQ, py::handle sequsedK, py::handle cmpResidualK,
                   py::handle topkLength, py::handle metadata, double softmaxScale, int64_t maxSeqlenK,
                   int64_t cmpRatio, int64_t maskMode, const std::optional<std::string>& layoutQ,
                   const std::optional<std::string>& layoutK, py::handle out) {
  const TensorArg qArg = TensorArg::from(q, "q", false);
  const TensorArg kArg = TensorArg::from(k, "k", false);
  const TensorArg lseArg = TensorArg::from(softmaxLse, "softmax_lse", false);
  const auto indicesArg = TensorArg::fromOptional(sparseIndices, "sparse_indices", false);
  const auto cuQ = TensorArg::fromOptional(cuSeqlensQ, "cu_seqlens_q", false);
  const auto cuK = TensorArg::fromOptional(cuSeqlensK, "cu_seqlens_k", false);
  const auto usedQ = TensorArg::fromOptional(sequsedQ, "seqused_q", false);
  const auto usedK = TensorArg::fromOptional(sequsedK, "seqused_k", false);
  const auto residual = TensorArg::fromOptional(cmpResidualK, "cmp_residual_k", false);
  const auto topkLen = TensorArg::fromOptional(topkLength, "topk_length", false);
  const auto metadataArg = TensorArg::fromOptional(metadata, "metadata", false);
  const TensorArg outArg = TensorArg::from(out, "softmax_l1_norm", true);
  LayoutString layoutQText(layoutQ), layoutKText(layoutK);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnSparseFlashMlaSoftmaxL1Norm",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
            qArg.get(), kArg.get(), lseArg.get(), handleOf(indicesArg), handleOf(cuQ), handleOf(cuK), handleOf(usedQ),
            handleOf(usedK), handleOf(residual), handleOf(topkLen), handleOf(metadataArg), softmaxScale, maxSeqlenK,
            cmpRatio, maskMode, layoutQText.get(), layoutKText.get(), outArg.get(), size, executor);
      },
      aclnnSparseFlashMlaSoftmaxL1Norm);
}

}  // namespace

void bindSparseFlashMlaSoftmaxL1Norm(py::module_& module) {
  module.def("sparse_flash_mla_softmax_l1_norm", &softmaxL1Norm, py::arg("q"), py::arg("k"), py::arg("softmax_lse"),
             py::arg("sparse_indices"), py::arg("cu_seqlens_q"), py::arg("cu_seqlens_k"), py::arg("seqused_q"),
             py::arg("seqused_k"), py::arg("cmp_residual_k"), py::arg("topk_length"), py::arg("metadata"),
             py::arg("softmax_scale"), py::arg("max_seqlen_k"), py::arg("cmp_ratio"), py::arg("mask_mode"),
             py::arg("layout_q"), py::arg("layout_k"), py::arg("softmax_l1_norm"),
             "aclnnSparseFlashMlaSoftmaxL1Norm into softmax_l1_norm (None for optional tensors and layouts).");
}

}  // namespace gradkit::python
