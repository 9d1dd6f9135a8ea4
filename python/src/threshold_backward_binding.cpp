// gradkit._C.threshold_backward: aclnnThresholdBackward into a caller-provided output.
#include "aclnnop/aclnn_threshold_backward.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

/** An aclScalar for a Python int (INT64) or float (DOUBLE), as torch_npu passes an at::Scalar. */
class ScalarArg {
 public:
  explicit ScalarArg(py::handle value) {
    if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
      int64_t integer = value.cast<int64_t>();
      scalar_ = aclCreateScalar(&integer, ACL_INT64);
    } else {
      double real = value.cast<double>();
      scalar_ = aclCreateScalar(&real, ACL_DOUBLE);
    }
  }
  ~ScalarArg() { aclDestroyScalar(scalar_); }
  ScalarArg(const ScalarArg&) = delete;
  ScalarArg& operator=(const ScalarArg&) = delete;
  const aclScalar* get() const { return scalar_; }

 private:
  aclScalar* scalar_ = nullptr;
};

void thresholdBackward(py::handle gradOutput, py::handle self, py::handle threshold, py::handle out) {
  const TensorArg grad = TensorArg::from(gradOutput, "grad_output", false);
  const TensorArg input = TensorArg::from(self, "self", false);
  const TensorArg result = TensorArg::from(out, "out", true);
  const ScalarArg scalar(threshold);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnThresholdBackward",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnThresholdBackwardGetWorkspaceSize(grad.get(), input.get(), scalar.get(), result.get(), size,
                                                      executor);
      },
      aclnnThresholdBackward);
}

}  // namespace

void bindThresholdBackward(py::module_& module) {
  module.def("threshold_backward", &thresholdBackward, py::arg("grad_output"), py::arg("self"), py::arg("threshold"),
             py::arg("out"),
             "aclnnThresholdBackward(grad_output, self, threshold, out): out = grad_output where self > threshold, "
             "else 0. threshold: a Python int (INT64 scalar) or float (DOUBLE scalar).");
}

}  // namespace gradkit::python
