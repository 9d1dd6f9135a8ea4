// gradkit._C.block_attention_residuals / block_attention_residuals_grad: aclnnBlockAttentionResiduals and
// aclnnBlockAttentionResidualsGrad into caller-provided outputs. need_backward false: inv_norm and probs may be None
// (passed as nullptr, neither checked nor written by the operator).
#include <cstdint>

#include "aclnnop/aclnn_block_attention_residuals.h"
#include "aclnnop/aclnn_block_attention_residuals_grad.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void blockAttentionResiduals(py::handle partialBlock, py::handle blockRes, py::handle projWeight, py::handle normWeight,
                             int64_t validBlockNum, double normEps, bool needBackward, py::handle hiddenStates,
                             py::handle invNorm, py::handle probs) {
  const TensorArg partialBlockArg = TensorArg::from(partialBlock, "partial_block", false);
  const TensorArg blockResArg = TensorArg::from(blockRes, "block_res", false);
  const TensorArg projWeightArg = TensorArg::from(projWeight, "proj_weight", false);
  const TensorArg normWeightArg = TensorArg::from(normWeight, "norm_weight", false);
  const TensorArg hiddenStatesArg = TensorArg::from(hiddenStates, "hidden_states", true);
  const auto invNormArg = TensorArg::fromOptional(invNorm, "inv_norm", true);
  const auto probsArg = TensorArg::fromOptional(probs, "probs", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnBlockAttentionResiduals",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnBlockAttentionResidualsGetWorkspaceSize(
            partialBlockArg.get(), blockResArg.get(), projWeightArg.get(), normWeightArg.get(), validBlockNum, normEps,
            needBackward, hiddenStatesArg.get(), handleOf(invNormArg), handleOf(probsArg), size, executor);
      },
      aclnnBlockAttentionResiduals);
}

void blockAttentionResidualsGrad(py::handle partialBlock, py::handle blockRes, py::handle projWeight,
                                 py::handle normWeight, py::handle gradHiddenStates, py::handle invNorm,
                                 py::handle probs, int64_t validBlockNum, py::handle gradPartialBlock,
                                 py::handle gradBlockRes, py::handle gradProjWeight, py::handle gradNormWeight) {
  const TensorArg partialBlockArg = TensorArg::from(partialBlock, "partial_block", false);
  const TensorArg blockResArg = TensorArg::from(blockRes, "block_res", false);
  const TensorArg projWeightArg = TensorArg::from(projWeight, "proj_weight", false);
  const TensorArg normWeightArg = TensorArg::from(normWeight, "norm_weight", false);
  const TensorArg gradHiddenStatesArg = TensorArg::from(gradHiddenStates, "grad_hidden_states", false);
  const TensorArg invNormArg = TensorArg::from(invNorm, "inv_norm", false);
  const TensorArg probsArg = TensorArg::from(probs, "probs", false);
  const TensorArg gradPartialBlockArg = TensorArg::from(gradPartialBlock, "grad_partial_block", true);
  const TensorArg gradBlockResArg = TensorArg::from(gradBlockRes, "grad_block_res", true);
  const TensorArg gradProjWeightArg = TensorArg::from(gradProjWeight, "grad_proj_weight", true);
  const TensorArg gradNormWeightArg = TensorArg::from(gradNormWeight, "grad_norm_weight", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnBlockAttentionResidualsGrad",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnBlockAttentionResidualsGradGetWorkspaceSize(
            partialBlockArg.get(), blockResArg.get(), projWeightArg.get(), normWeightArg.get(),
            gradHiddenStatesArg.get(), invNormArg.get(), probsArg.get(), validBlockNum, gradPartialBlockArg.get(),
            gradBlockResArg.get(), gradProjWeightArg.get(), gradNormWeightArg.get(), size, executor);
      },
      aclnnBlockAttentionResidualsGrad);
}

}  // namespace

void bindBlockAttentionResiduals(py::module_& module) {
  module.def("block_attention_residuals", &blockAttentionResiduals, py::arg("partial_block"), py::arg("block_res"),
             py::arg("proj_weight"), py::arg("norm_weight"), py::arg("valid_block_num"), py::arg("norm_eps"),
             py::arg("need_backward"), py::arg("hidden_states"), py::arg("inv_norm"), py::arg("probs"),
             "aclnnBlockAttentionResiduals into hidden_states and, with need_backward, the saved inv_norm and probs "
             "(None without it).");
  module.def("block_attention_residuals_grad", &blockAttentionResidualsGrad, py::arg("partial_block"),
             py::arg("block_res"), py::arg("proj_weight"), py::arg("norm_weight"), py::arg("grad_hidden_states"),
             py::arg("inv_norm"), py::arg("probs"), py::arg("valid_block_num"), py::arg("grad_partial_block"),
             py::arg("grad_block_res"), py::arg("grad_proj_weight"), py::arg("grad_norm_weight"),
             "aclnnBlockAttentionResidualsGrad into grad_partial_block, grad_block_res, grad_proj_weight, "
             "grad_norm_weight, from the forward's inputs and its saved inv_norm and probs.");
}

}  // namespace gradkit::python
