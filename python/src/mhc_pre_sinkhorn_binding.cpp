// gradkit._C.mhc_pre_sinkhorn / mhc_pre_sinkhorn_backward: aclnnMhcPreSinkhorn and aclnnMhcPreSinkhornBackward into
// caller-provided outputs. need_backward false: the saved tensors are None (passed as nullptr, neither checked nor
// written by the operator).
#include <cstdint>

#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void mhcPreSinkhorn(py::handle x, py::handle phi, py::handle alpha, py::handle bias, int64_t hcMult, int64_t numIters,
                    double hcEps, double normEps, bool needBackward, py::handle hin, py::handle hPost, py::handle hRes,
                    py::handle hPre, py::handle hcBeforeNorm, py::handle invRms, py::handle sumOut,
                    py::handle normOut) {
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const TensorArg phiArg = TensorArg::from(phi, "phi", false);
  const TensorArg alphaArg = TensorArg::from(alpha, "alpha", false);
  const TensorArg biasArg = TensorArg::from(bias, "bias", false);
  const TensorArg hinArg = TensorArg::from(hin, "hin", true);
  const TensorArg hPostArg = TensorArg::from(hPost, "h_post", true);
  const TensorArg hResArg = TensorArg::from(hRes, "h_res", true);
  const auto hPreArg = TensorArg::fromOptional(hPre, "h_pre", true);
  const auto hcBeforeNormArg = TensorArg::fromOptional(hcBeforeNorm, "hc_before_norm", true);
  const auto invRmsArg = TensorArg::fromOptional(invRms, "inv_rms", true);
  const auto sumOutArg = TensorArg::fromOptional(sumOut, "sum_out", true);
  const auto normOutArg = TensorArg::fromOptional(normOut, "norm_out", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnMhcPreSinkhorn",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnMhcPreSinkhornGetWorkspaceSize(
            xArg.get(), phiArg.get(), alphaArg.get(), biasArg.get(), hcMult, numIters, hcEps, normEps, needBackward,
            hinArg.get(), hPostArg.get(), hResArg.get(), handleOf(hPreArg), handleOf(hcBeforeNormArg),
            handleOf(invRmsArg), handleOf(sumOutArg), handleOf(normOutArg), size, executor);
      },
      aclnnMhcPreSinkhorn);
}

void mhcPreSinkhornBackward(py::handle gradHin, py::handle gradHPost, py::handle gradHRes, py::handle x, py::handle phi,
                            py::handle alpha, py::handle bias, py::handle hPre, py::handle hcBeforeNorm,
                            py::handle invRms, py::handle sumOut, py::handle normOut, double hcEps, py::handle gradX,
                            py::handle gradPhi, py::handle gradAlpha, py::handle gradBias) {
  const TensorArg gradHinArg = TensorArg::from(gradHin, "grad_hin", false);
  const TensorArg gradHPostArg = TensorArg::from(gradHPost, "grad_h_post", false);
  const TensorArg gradHResArg = TensorArg::from(gradHRes, "grad_h_res", false);
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const TensorArg phiArg = TensorArg::from(phi, "phi", false);
  const TensorArg alphaArg = TensorArg::from(alpha, "alpha", false);
  const TensorArg biasArg = TensorArg::from(bias, "bias", false);
  const TensorArg hPreArg = TensorArg::from(hPre, "h_pre", false);
  const TensorArg hcBeforeNormArg = TensorArg::from(hcBeforeNorm, "hc_before_norm", false);
  const TensorArg invRmsArg = TensorArg::from(invRms, "inv_rms", false);
  const TensorArg sumOutArg = TensorArg::from(sumOut, "sum_out", false);
  const TensorArg normOutArg = TensorArg::from(normOut, "norm_out", false);
  const TensorArg gradXArg = TensorArg::from(gradX, "grad_x", true);
  const TensorArg gradPhiArg = TensorArg::from(gradPhi, "grad_phi", true);
  const TensorArg gradAlphaArg = TensorArg::from(gradAlpha, "grad_alpha", true);
  const TensorArg gradBiasArg = TensorArg::from(gradBias, "grad_bias", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnMhcPreSinkhornBackward",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnMhcPreSinkhornBackwardGetWorkspaceSize(
            gradHinArg.get(), gradHPostArg.get(), gradHResArg.get(), xArg.get(), phiArg.get(), alphaArg.get(),
            biasArg.get(), hPreArg.get(), hcBeforeNormArg.get(), invRmsArg.get(), sumOutArg.get(), normOutArg.get(),
            hcEps, gradXArg.get(), gradPhiArg.get(), gradAlphaArg.get(), gradBiasArg.get(), size, executor);
      },
      aclnnMhcPreSinkhornBackward);
}

}  // namespace

void bindMhcPreSinkhorn(py::module_& module) {
  module.def("mhc_pre_sinkhorn", &mhcPreSinkhorn, py::arg("x"), py::arg("phi"), py::arg("alpha"), py::arg("bias"),
             py::arg("hc_mult"), py::arg("num_iters"), py::arg("hc_eps"), py::arg("norm_eps"), py::arg("need_backward"),
             py::arg("hin"), py::arg("h_post"), py::arg("h_res"), py::arg("h_pre"), py::arg("hc_before_norm"),
             py::arg("inv_rms"), py::arg("sum_out"), py::arg("norm_out"),
             "aclnnMhcPreSinkhorn into hin, h_post, h_res and, with need_backward, the saved h_pre, hc_before_norm, "
             "inv_rms, sum_out, norm_out (None without it).");
  module.def("mhc_pre_sinkhorn_backward", &mhcPreSinkhornBackward, py::arg("grad_hin"), py::arg("grad_h_post"),
             py::arg("grad_h_res"), py::arg("x"), py::arg("phi"), py::arg("alpha"), py::arg("bias"), py::arg("h_pre"),
             py::arg("hc_before_norm"), py::arg("inv_rms"), py::arg("sum_out"), py::arg("norm_out"), py::arg("hc_eps"),
             py::arg("grad_x"), py::arg("grad_phi"), py::arg("grad_alpha"), py::arg("grad_bias"),
             "aclnnMhcPreSinkhornBackward into grad_x, grad_phi, grad_alpha, grad_bias, from the forward's inputs "
             "and saved tensors.");
}

}  // namespace gradkit::python
