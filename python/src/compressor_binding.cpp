// gradkit._C.compressor / compressor_grad: aclnnCompressor and aclnnCompressorGrad into caller-provided outputs.
// The state cache is read and written in place (stateCacheRef); optional tensors are None.
#include <cstdint>

#include "aclnnop/aclnn_compressor.h"
#include "aclnnop/aclnn_compressor_grad.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void compressor(py::handle x, py::handle wkv, py::handle wgate, py::handle stateCache, py::handle ape,
                py::handle stateBlockTable, py::handle cuSeqlens, py::handle seqused, py::handle startPos,
                int64_t cmpRatio, int64_t coff, int64_t cacheMode, int64_t stateCacheStrideDim0, bool gradEnabled,
                py::handle cmpKv, py::handle softmaxScore, py::handle kv) {
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const TensorArg wkvArg = TensorArg::from(wkv, "wkv", false);
  const TensorArg wgateArg = TensorArg::from(wgate, "wgate", false);
  const TensorArg stateCacheArg = TensorArg::from(stateCache, "state_cache", true);  // read and written
  const TensorArg apeArg = TensorArg::from(ape, "ape", false);
  const auto tableArg = TensorArg::fromOptional(stateBlockTable, "state_block_table", false);
  const auto cuSeqlensArg = TensorArg::fromOptional(cuSeqlens, "cu_seqlens", false);
  const auto sequsedArg = TensorArg::fromOptional(seqused, "seqused", false);
  const auto startPosArg = TensorArg::fromOptional(startPos, "start_pos", false);
  const TensorArg cmpKvArg = TensorArg::from(cmpKv, "cmp_kv", true);
  const auto softmaxScoreArg = TensorArg::fromOptional(softmaxScore, "softmax_score", true);
  const auto kvArg = TensorArg::fromOptional(kv, "kv", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnCompressor",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnCompressorGetWorkspaceSize(xArg.get(), wkvArg.get(), wgateArg.get(), stateCacheArg.get(),
                                               apeArg.get(), handleOf(tableArg), handleOf(cuSeqlensArg),
                                               handleOf(sequsedArg), handleOf(startPosArg), cmpRatio, coff, cacheMode,
                                               stateCacheStrideDim0, gradEnabled, cmpKvArg.get(),
                                               handleOf(softmaxScoreArg), handleOf(kvArg), size, executor);
      },
      aclnnCompressor);
}

void compressorGrad(py::handle x, py::handle wkv, py::handle wgate, py::handle dCmpKv, py::handle softmaxScore,
                    py::handle kv, py::handle cuSeqlens, py::handle seqused, py::handle startPos, int64_t cmpRatio,
                    int64_t coff, py::handle dX, py::handle dWkv, py::handle dWgate, py::handle dApe) {
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const TensorArg wkvArg = TensorArg::from(wkv, "wkv", false);
  const TensorArg wgateArg = TensorArg::from(wgate, "wgate", false);
  const TensorArg dCmpKvArg = TensorArg::from(dCmpKv, "d_cmp_kv", false);
  const TensorArg softmaxScoreArg = TensorArg::from(softmaxScore, "softmax_score", false);
  const TensorArg kvArg = TensorArg::from(kv, "kv", false);
  const auto cuSeqlensArg = TensorArg::fromOptional(cuSeqlens, "cu_seqlens", false);
  const auto sequsedArg = TensorArg::fromOptional(seqused, "seqused", false);
  const auto startPosArg = TensorArg::fromOptional(startPos, "start_pos", false);
  const TensorArg dXArg = TensorArg::from(dX, "d_x", true);
  const TensorArg dWkvArg = TensorArg::from(dWkv, "d_wkv", true);
  const TensorArg dWgateArg = TensorArg::from(dWgate, "d_wgate", true);
  const TensorArg dApeArg = TensorArg::from(dApe, "d_ape", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnCompressorGrad",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnCompressorGradGetWorkspaceSize(
            xArg.get(), wkvArg.get(), wgateArg.get(), dCmpKvArg.get(), softmaxScoreArg.get(), kvArg.get(),
            handleOf(cuSeqlensArg), handleOf(sequsedArg), handleOf(startPosArg), cmpRatio, coff, dXArg.get(),
            dWkvArg.get(), dWgateArg.get(), dApeArg.get(), size, executor);
      },
      aclnnCompressorGrad);
}

}  // namespace

void bindCompressor(py::module_& module) {
  module.def("compressor", &compressor, py::arg("x"), py::arg("wkv"), py::arg("wgate"), py::arg("state_cache"),
             py::arg("ape"), py::arg("state_block_table"), py::arg("cu_seqlens"), py::arg("seqused"),
             py::arg("start_pos"), py::arg("cmp_ratio"), py::arg("coff"), py::arg("cache_mode"),
             py::arg("state_cache_stride_dim0"), py::arg("grad_enabled"), py::arg("cmp_kv"), py::arg("softmax_score"),
             py::arg("kv"),
             "aclnnCompressor into the given outputs; state_cache is read and written in place (None for optional "
             "tensors).");
  module.def("compressor_grad", &compressorGrad, py::arg("x"), py::arg("wkv"), py::arg("wgate"), py::arg("d_cmp_kv"),
             py::arg("softmax_score"), py::arg("kv"), py::arg("cu_seqlens"), py::arg("seqused"), py::arg("start_pos"),
             py::arg("cmp_ratio"), py::arg("coff"), py::arg("d_x"), py::arg("d_wkv"), py::arg("d_wgate"),
             py::arg("d_ape"), "aclnnCompressorGrad into the given outputs (None for optional tensors).");
}

}  // namespace gradkit::python
