// gradkit._C.mhc_pre / mhc_pre_backward: aclnnMhcPre[V2] and aclnnMhcPreBackward[V2] into caller-provided outputs.
// op_impl_mode None calls the V1 entry point, 0 or 1 the V2 one.
#include <optional>

#include <pybind11/stl.h>

#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_pre_backward_v2.h"
#include "aclnnop/aclnn_mhc_pre_v2.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void mhcPre(py::handle x, py::handle phi, py::handle alpha, py::handle bias, py::handle gamma, double normEps,
            double hcEps, std::optional<int64_t> opImplMode, py::handle hIn, py::handle hPost, py::handle hRes,
            py::handle invRms, py::handle hMix, py::handle hPre) {
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const TensorArg phiArg = TensorArg::from(phi, "phi", false);
  const TensorArg alphaArg = TensorArg::from(alpha, "alpha", false);
  const TensorArg biasArg = TensorArg::from(bias, "bias", false);
  const auto gammaArg = TensorArg::fromOptional(gamma, "gamma", false);
  const TensorArg hInArg = TensorArg::from(hIn, "h_in", true);
  const TensorArg hPostArg = TensorArg::from(hPost, "h_post", true);
  const auto hResArg = TensorArg::fromOptional(hRes, "h_res", true);
  const auto invRmsArg = TensorArg::fromOptional(invRms, "inv_rms", true);
  const auto hMixArg = TensorArg::fromOptional(hMix, "h_mix", true);
  const auto hPreArg = TensorArg::fromOptional(hPre, "h_pre", true);
  py::gil_scoped_release release;
  if (opImplMode) {
    runTwoPhase(
        "aclnnMhcPreV2",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnMhcPreV2GetWorkspaceSize(xArg.get(), phiArg.get(), alphaArg.get(), biasArg.get(),
                                               handleOf(gammaArg), normEps, hcEps, *opImplMode, hInArg.get(),
                                               hPostArg.get(), handleOf(hResArg), handleOf(invRmsArg),
                                               handleOf(hMixArg), handleOf(hPreArg), size, executor);
        },
        aclnnMhcPreV2);
  } else {
    runTwoPhase(
        "aclnnMhcPre",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnMhcPreGetWorkspaceSize(xArg.get(), phiArg.get(), alphaArg.get(), biasArg.get(),
                                             handleOf(gammaArg), normEps, hcEps, hInArg.get(), hPostArg.get(),
                                             handleOf(hResArg), handleOf(invRmsArg), handleOf(hMixArg),
                                             handleOf(hPreArg), size, executor);
        },
        aclnnMhcPre);
  }
}

void mhcPreBackward(py::handle x, py::handle phi, py::handle alpha, py::handle gradHIn, py::handle gradHPost,
                    py::handle gradHRes, py::handle invRms, py::handle hMix, py::handle hPre, py::handle hPost,
                    py::handle gamma, py::handle gradXPost, float hcEps, std::optional<int64_t> opImplMode,
                    py::handle gradX, py::handle gradPhi, py::handle gradAlpha, py::handle gradBias,
                    py::handle gradGamma) {
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const TensorArg phiArg = TensorArg::from(phi, "phi", false);
  const TensorArg alphaArg = TensorArg::from(alpha, "alpha", false);
  const TensorArg gradHInArg = TensorArg::from(gradHIn, "grad_h_in", false);
  const TensorArg gradHPostArg = TensorArg::from(gradHPost, "grad_h_post", false);
  const TensorArg gradHResArg = TensorArg::from(gradHRes, "grad_h_res", false);
  const TensorArg invRmsArg = TensorArg::from(invRms, "inv_rms", false);
  const TensorArg hMixArg = TensorArg::from(hMix, "h_mix", false);
  const TensorArg hPreArg = TensorArg::from(hPre, "h_pre", false);
  const TensorArg hPostArg = TensorArg::from(hPost, "h_post", false);
  const auto gammaArg = TensorArg::fromOptional(gamma, "gamma", false);
  // grad_x_post may be grad_x itself (in place): it is read through its own descriptor.
  const auto gradXPostArg = TensorArg::fromOptional(gradXPost, "grad_x_post", false);
  const TensorArg gradXArg = TensorArg::from(gradX, "grad_x", true);
  const TensorArg gradPhiArg = TensorArg::from(gradPhi, "grad_phi", true);
  const TensorArg gradAlphaArg = TensorArg::from(gradAlpha, "grad_alpha", true);
  const TensorArg gradBiasArg = TensorArg::from(gradBias, "grad_bias", true);
  const auto gradGammaArg = TensorArg::fromOptional(gradGamma, "grad_gamma", true);
  py::gil_scoped_release release;
  if (opImplMode) {
    runTwoPhase(
        "aclnnMhcPreBackwardV2",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnMhcPreBackwardV2GetWorkspaceSize(
              xArg.get(), phiArg.get(), alphaArg.get(), gradHInArg.get(), gradHPostArg.get(), gradHResArg.get(),
              invRmsArg.get(), hMixArg.get(), hPreArg.get(), hPostArg.get(), handleOf(gammaArg), handleOf(gradXPostArg),
              hcEps, *opImplMode, gradXArg.get(), gradPhiArg.get(), gradAlphaArg.get(), gradBiasArg.get(),
              handleOf(gradGammaArg), size, executor);
        },
        aclnnMhcPreBackwardV2);
  } else {
    runTwoPhase(
        "aclnnMhcPreBackward",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnMhcPreBackwardGetWorkspaceSize(
              xArg.get(), phiArg.get(), alphaArg.get(), gradHInArg.get(), gradHPostArg.get(), gradHResArg.get(),
              invRmsArg.get(), hMixArg.get(), hPreArg.get(), hPostArg.get(), handleOf(gammaArg), handleOf(gradXPostArg),
              hcEps, gradXArg.get(), gradPhiArg.get(), gradAlphaArg.get(), gradBiasArg.get(), handleOf(gradGammaArg),
              size, executor);
        },
        aclnnMhcPreBackward);
  }
}

}  // namespace

void bindMhc(py::module_& module) {
  module.def("mhc_pre", &mhcPre, py::arg("x"), py::arg("phi"), py::arg("alpha"), py::arg("bias"), py::arg("gamma"),
             py::arg("norm_eps"), py::arg("hc_eps"), py::arg("op_impl_mode"), py::arg("h_in"), py::arg("h_post"),
             py::arg("h_res"), py::arg("inv_rms"), py::arg("h_mix"), py::arg("h_pre"),
             "aclnnMhcPre (op_impl_mode None) or aclnnMhcPreV2 into the given outputs (None for optional ones).");
  module.def("mhc_pre_backward", &mhcPreBackward, py::arg("x"), py::arg("phi"), py::arg("alpha"), py::arg("grad_h_in"),
             py::arg("grad_h_post"), py::arg("grad_h_res"), py::arg("inv_rms"), py::arg("h_mix"), py::arg("h_pre"),
             py::arg("h_post"), py::arg("gamma"), py::arg("grad_x_post"), py::arg("hc_eps"), py::arg("op_impl_mode"),
             py::arg("grad_x"), py::arg("grad_phi"), py::arg("grad_alpha"), py::arg("grad_bias"), py::arg("grad_gamma"),
             "aclnnMhcPreBackward (op_impl_mode None) or aclnnMhcPreBackwardV2 into the given outputs.");
}

}  // namespace gradkit::python
