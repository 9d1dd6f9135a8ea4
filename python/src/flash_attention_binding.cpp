// gradkit._C.flash_attention_score / flash_attention_score_grad: the flash attention forward and backward into
// caller-provided outputs, through the entry point that takes the arguments given (the name is returned):
//  - dropout drawn from (seed, offset) by the Philox stream (spec fag.md 3): aclnnFlashAttentionScoreV4 and
//    aclnnFlashAttentionScoreGradV4 (Ascend950), both layouts families, so forward and backward draw the same mask;
//  - otherwise padded layouts: aclnnFlashAttentionScoreV2 / aclnnFlashAttentionScoreGradV2;
//  - TND: aclnnFlashAttentionVarLenScoreV2 / aclnnFlashAttentionUnpaddingScoreGradV2, or their V4 with a softmax
//    layout ("same_as_input"); V4 has no pseType / start indices, so such a call goes to the Ascend950 entry point;
//  - FP8 backward (FLOAT8_E5M2 / FLOAT8_E4M3FN query, key, value, dy with the d_scale_* de-quant scales, out_dtype
//    0: FLOAT16, 1: BFLOAT16 outputs): aclnnFlashAttentionScoreGradV4 (spec fag.md 5.9). FP8 tensors arrive as
//    (uint8 array or tensor, ACL_FLOAT8_*) pairs: torch 1.13's DLPack and numpy know no float8 dtype.
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

using Ints = std::optional<std::vector<int64_t>>;

struct IntArrayDeleter {
  void operator()(aclIntArray* array) const { aclDestroyIntArray(array); }
};
using IntArrayPtr = std::unique_ptr<aclIntArray, IntArrayDeleter>;

/** An aclIntArray of the values, or null for None. */
IntArrayPtr intArray(const Ints& values) {
  if (!values) return nullptr;
  return IntArrayPtr(aclCreateIntArray(values->data(), values->size()));
}

/** The attributes and int arrays both directions share. */
struct Attributes {
  IntArrayPtr prefix, seqQ, seqKv, qStart, kvStart;
  double scale = 1.0, keepProb = 1.0;
  int64_t pre = 0, next = 0, headNum = 0, innerPrecise = 0, sparseMode = 0, pseType = 1;
  std::string layout, softmaxLayout;
  bool philox = false;
  int64_t seed = 0, offset = 0;
  bool fp8 = false;  // the backward's d_scale_* tensors are given
  int64_t outDtype = 0;

  bool tnd() const { return layout == "TND"; }
  /** A TND call whose softmax layout the V4 entry point carries but whose pseType / start indices it does not. */
  bool needsMerged() const {
    return philox || fp8 || (tnd() && !softmaxLayout.empty() && (pseType != 1 || qStart || kvStart));
  }
};

/** One Python call's view of the inputs both directions share. */
struct Inputs {
  TensorArg query, key, value;
  std::optional<TensorArg> pse, dropMask, attenMask;
};

Inputs readInputs(py::handle query, py::handle key, py::handle value, py::handle pse, py::handle dropMask,
                  py::handle attenMask) {
  return Inputs{TensorArg::from(query, "query", false),
                TensorArg::from(key, "key", false),
                TensorArg::from(value, "value", false),
                TensorArg::fromOptional(pse, "pse", false),
                TensorArg::fromOptional(dropMask, "drop_mask", false),
                TensorArg::fromOptional(attenMask, "atten_mask", false)};
}

std::string forward(const Inputs& in, Attributes& a, const TensorArg& max, const TensorArg& sum, const TensorArg& out) {
  aclTensor* pse = handleOf(in.pse);
  aclTensor* drop = handleOf(in.dropMask);
  aclTensor* mask = handleOf(in.attenMask);
  char* layout = a.layout.data();
  char* softmaxLayout = a.softmaxLayout.data();
  py::gil_scoped_release release;
  if (a.needsMerged()) {
    runTwoPhase(
        "aclnnFlashAttentionScoreV4",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionScoreV4GetWorkspaceSize(
              in.query.get(), in.key.get(), in.value.get(), pse, drop, nullptr, mask, nullptr, nullptr, nullptr,
              nullptr, nullptr, nullptr, a.prefix.get(), a.seqQ.get(), a.seqKv.get(), a.qStart.get(), a.kvStart.get(),
              a.scale, a.keepProb, a.pre, a.next, a.headNum, layout, a.innerPrecise, a.sparseMode, 0, a.pseType,
              softmaxLayout, a.seed, a.offset, max.get(), sum.get(), nullptr, out.get(), size, executor);
        },
        aclnnFlashAttentionScoreV4);
    return "aclnnFlashAttentionScoreV4";
  }
  if (!a.tnd()) {
    runTwoPhase(
        "aclnnFlashAttentionScoreV2",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionScoreV2GetWorkspaceSize(
              in.query.get(), in.key.get(), in.value.get(), pse, drop, nullptr, mask, a.prefix.get(), a.qStart.get(),
              a.kvStart.get(), a.scale, a.keepProb, a.pre, a.next, a.headNum, layout, a.innerPrecise, a.sparseMode,
              a.pseType, max.get(), sum.get(), nullptr, out.get(), size, executor);
        },
        aclnnFlashAttentionScoreV2);
    return "aclnnFlashAttentionScoreV2";
  }
  if (!a.softmaxLayout.empty()) {
    runTwoPhase(
        "aclnnFlashAttentionVarLenScoreV4",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
              in.query.get(), in.key.get(), in.value.get(), pse, drop, nullptr, mask, a.prefix.get(), a.seqQ.get(),
              a.seqKv.get(), a.scale, a.keepProb, a.pre, a.next, a.headNum, layout, a.innerPrecise, a.sparseMode,
              softmaxLayout, max.get(), sum.get(), nullptr, out.get(), size, executor);
        },
        aclnnFlashAttentionVarLenScoreV4);
    return "aclnnFlashAttentionVarLenScoreV4";
  }
  runTwoPhase(
      "aclnnFlashAttentionVarLenScoreV2",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
            in.query.get(), in.key.get(), in.value.get(), pse, drop, nullptr, mask, a.prefix.get(), a.seqQ.get(),
            a.seqKv.get(), a.qStart.get(), a.kvStart.get(), a.scale, a.keepProb, a.pre, a.next, a.headNum, layout,
            a.innerPrecise, a.sparseMode, a.pseType, max.get(), sum.get(), nullptr, out.get(), size, executor);
      },
      aclnnFlashAttentionVarLenScoreV2);
  return "aclnnFlashAttentionVarLenScoreV2";
}

/** The backward's own tensors. */
struct GradTensors {
  TensorArg dy, max, sum, attentionIn, dq, dk, dv;
  std::optional<TensorArg> dpse, dScaleQ, dScaleK, dScaleV, dScaleDy, dScaleO;
};

std::string backward(const Inputs& in, const GradTensors& g, Attributes& a) {
  aclTensor* pse = handleOf(in.pse);
  aclTensor* drop = handleOf(in.dropMask);
  aclTensor* mask = handleOf(in.attenMask);
  aclTensor* dpse = handleOf(g.dpse);
  aclTensor* dScaleQ = handleOf(g.dScaleQ);
  aclTensor* dScaleK = handleOf(g.dScaleK);
  aclTensor* dScaleV = handleOf(g.dScaleV);
  aclTensor* dScaleDy = handleOf(g.dScaleDy);
  aclTensor* dScaleO = handleOf(g.dScaleO);
  char* layout = a.layout.data();
  char* softmaxLayout = a.softmaxLayout.data();
  py::gil_scoped_release release;
  if (a.needsMerged()) {
    runTwoPhase(
        "aclnnFlashAttentionScoreGradV4",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
              in.query.get(), in.key.get(), in.value.get(), g.dy.get(), pse, drop, nullptr, mask, g.max.get(),
              g.sum.get(), nullptr, g.attentionIn.get(), nullptr, nullptr, nullptr, dScaleQ, dScaleK, dScaleV, dScaleDy,
              dScaleO, a.prefix.get(), a.seqQ.get(), a.seqKv.get(), a.qStart.get(), a.kvStart.get(), a.scale,
              a.keepProb, a.pre, a.next, a.headNum, layout, softmaxLayout, a.innerPrecise, a.sparseMode, a.pseType,
              a.seed, a.offset, a.outDtype, g.dq.get(), g.dk.get(), g.dv.get(), nullptr, nullptr, dpse, nullptr, size,
              executor);
        },
        aclnnFlashAttentionScoreGradV4);
    return "aclnnFlashAttentionScoreGradV4";
  }
  if (!a.tnd()) {
    runTwoPhase(
        "aclnnFlashAttentionScoreGradV2",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
              in.query.get(), in.key.get(), in.value.get(), g.dy.get(), pse, drop, nullptr, mask, g.max.get(),
              g.sum.get(), nullptr, g.attentionIn.get(), a.prefix.get(), a.qStart.get(), a.kvStart.get(), a.scale,
              a.keepProb, a.pre, a.next, a.headNum, layout, a.innerPrecise, a.sparseMode, a.pseType, g.dq.get(),
              g.dk.get(), g.dv.get(), dpse, size, executor);
        },
        aclnnFlashAttentionScoreGradV2);
    return "aclnnFlashAttentionScoreGradV2";
  }
  if (!a.softmaxLayout.empty()) {
    runTwoPhase(
        "aclnnFlashAttentionUnpaddingScoreGradV4",
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
              in.query.get(), in.key.get(), in.value.get(), g.dy.get(), pse, drop, nullptr, mask, g.max.get(),
              g.sum.get(), nullptr, g.attentionIn.get(), a.prefix.get(), a.seqQ.get(), a.seqKv.get(), a.scale,
              a.keepProb, a.pre, a.next, a.headNum, layout, a.innerPrecise, a.sparseMode, g.dq.get(), g.dk.get(),
              g.dv.get(), dpse, softmaxLayout, size, executor);
        },
        aclnnFlashAttentionUnpaddingScoreGradV4);
    return "aclnnFlashAttentionUnpaddingScoreGradV4";
  }
  runTwoPhase(
      "aclnnFlashAttentionUnpaddingScoreGradV2",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
            in.query.get(), in.key.get(), in.value.get(), g.dy.get(), pse, drop, nullptr, mask, g.max.get(),
            g.sum.get(), nullptr, g.attentionIn.get(), a.prefix.get(), a.seqQ.get(), a.seqKv.get(), a.qStart.get(),
            a.kvStart.get(), a.scale, a.keepProb, a.pre, a.next, a.headNum, layout, a.innerPrecise, a.sparseMode,
            a.pseType, g.dq.get(), g.dk.get(), g.dv.get(), dpse, size, executor);
      },
      aclnnFlashAttentionUnpaddingScoreGradV2);
  return "aclnnFlashAttentionUnpaddingScoreGradV2";
}

Attributes attributes(const Ints& prefix, const Ints& seqQ, const Ints& seqKv, const Ints& qStart, const Ints& kvStart,
                      double scale, double keepProb, int64_t pre, int64_t next, int64_t headNum,
                      const std::string& layout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
                      const std::string& softmaxLayout, bool philox, int64_t seed, int64_t offset) {
  Attributes a;
  a.prefix = intArray(prefix), a.seqQ = intArray(seqQ), a.seqKv = intArray(seqKv);
  a.qStart = intArray(qStart), a.kvStart = intArray(kvStart);
  a.scale = scale, a.keepProb = keepProb, a.pre = pre, a.next = next, a.headNum = headNum;
  a.layout = layout, a.innerPrecise = innerPrecise, a.sparseMode = sparseMode, a.pseType = pseType;
  a.softmaxLayout = softmaxLayout, a.philox = philox, a.seed = seed, a.offset = offset;
  return a;
}

std::string flashAttentionScore(py::handle query, py::handle key, py::handle value, py::handle pse, py::handle dropMask,
                                py::handle attenMask, const Ints& prefix, const Ints& seqQ, const Ints& seqKv,
                                const Ints& qStart, const Ints& kvStart, double scale, double keepProb, int64_t pre,
                                int64_t next, int64_t headNum, const std::string& layout, int64_t innerPrecise,
                                int64_t sparseMode, int64_t pseType, const std::string& softmaxLayout, bool philox,
                                int64_t seed, int64_t offset, py::handle softmaxMax, py::handle softmaxSum,
                                py::handle attentionOut) {
  Attributes a = attributes(prefix, seqQ, seqKv, qStart, kvStart, scale, keepProb, pre, next, headNum, layout,
                            innerPrecise, sparseMode, pseType, softmaxLayout, philox, seed, offset);
  const Inputs in = readInputs(query, key, value, pse, dropMask, attenMask);
  const TensorArg max = TensorArg::from(softmaxMax, "softmax_max", true);
  const TensorArg sum = TensorArg::from(softmaxSum, "softmax_sum", true);
  const TensorArg out = TensorArg::from(attentionOut, "attention_out", true);
  return forward(in, a, max, sum, out);
}

std::string flashAttentionScoreGrad(py::handle query, py::handle key, py::handle value, py::handle dy, py::handle pse,
                                    py::handle dropMask, py::handle attenMask, py::handle softmaxMax,
                                    py::handle softmaxSum, py::handle attentionIn, const Ints& prefix, const Ints& seqQ,
                                    const Ints& seqKv, const Ints& qStart, const Ints& kvStart, double scale,
                                    double keepProb, int64_t pre, int64_t next, int64_t headNum,
                                    const std::string& layout, int64_t innerPrecise, int64_t sparseMode,
                                    int64_t pseType, const std::string& softmaxLayout, bool philox, int64_t seed,
                                    int64_t offset, py::handle dq, py::handle dk, py::handle dv, py::handle dpse,
                                    py::handle dScaleQ, py::handle dScaleK, py::handle dScaleV, py::handle dScaleDy,
                                    py::handle dScaleO, int64_t outDtype) {
  Attributes a = attributes(prefix, seqQ, seqKv, qStart, kvStart, scale, keepProb, pre, next, headNum, layout,
                            innerPrecise, sparseMode, pseType, softmaxLayout, philox, seed, offset);
  // Any scale given selects the FP8 entry point; the operator names the ones missing (161001).
  a.fp8 = !dScaleQ.is_none() || !dScaleK.is_none() || !dScaleV.is_none() || !dScaleDy.is_none() || !dScaleO.is_none();
  a.outDtype = outDtype;
  const Inputs in = readInputs(query, key, value, pse, dropMask, attenMask);
  const GradTensors g{TensorArg::from(dy, "dy", false),
                      TensorArg::from(softmaxMax, "softmax_max", false),
                      TensorArg::from(softmaxSum, "softmax_sum", false),
                      TensorArg::from(attentionIn, "attention_in", false),
                      TensorArg::from(dq, "dq", true),
                      TensorArg::from(dk, "dk", true),
                      TensorArg::from(dv, "dv", true),
                      TensorArg::fromOptional(dpse, "dpse", true),
                      TensorArg::fromOptional(dScaleQ, "d_scale_q", false),
                      TensorArg::fromOptional(dScaleK, "d_scale_k", false),
                      TensorArg::fromOptional(dScaleV, "d_scale_v", false),
                      TensorArg::fromOptional(dScaleDy, "d_scale_dy", false),
                      TensorArg::fromOptional(dScaleO, "d_scale_o", false)};
  return backward(in, g, a);
}

}  // namespace

void bindFlashAttention(py::module_& module) {
  module.def("flash_attention_score", &flashAttentionScore, py::arg("query"), py::arg("key"), py::arg("value"),
             py::arg("pse"), py::arg("drop_mask"), py::arg("atten_mask"), py::arg("prefix"), py::arg("actual_seq_qlen"),
             py::arg("actual_seq_kvlen"), py::arg("q_start_idx"), py::arg("kv_start_idx"), py::arg("scale"),
             py::arg("keep_prob"), py::arg("pre_tokens"), py::arg("next_tokens"), py::arg("head_num"),
             py::arg("input_layout"), py::arg("inner_precise"), py::arg("sparse_mode"), py::arg("pse_type"),
             py::arg("softmax_layout"), py::arg("philox"), py::arg("seed"), py::arg("offset"), py::arg("softmax_max"),
             py::arg("softmax_sum"), py::arg("attention_out"),
             "The flash attention forward into the given outputs (None for optional inputs and int lists); philox "
             "draws the dropout mask from (seed, offset) (aclnnFlashAttentionScoreV4). Returns the entry point's "
             "name.");
  module.def("flash_attention_score_grad", &flashAttentionScoreGrad, py::arg("query"), py::arg("key"), py::arg("value"),
             py::arg("dy"), py::arg("pse"), py::arg("drop_mask"), py::arg("atten_mask"), py::arg("softmax_max"),
             py::arg("softmax_sum"), py::arg("attention_in"), py::arg("prefix"), py::arg("actual_seq_qlen"),
             py::arg("actual_seq_kvlen"), py::arg("q_start_idx"), py::arg("kv_start_idx"), py::arg("scale"),
             py::arg("keep_prob"), py::arg("pre_tokens"), py::arg("next_tokens"), py::arg("head_num"),
             py::arg("input_layout"), py::arg("inner_precise"), py::arg("sparse_mode"), py::arg("pse_type"),
             py::arg("softmax_layout"), py::arg("philox"), py::arg("seed"), py::arg("offset"), py::arg("dq"),
             py::arg("dk"), py::arg("dv"), py::arg("dpse"), py::arg("d_scale_q") = py::none(),
             py::arg("d_scale_k") = py::none(), py::arg("d_scale_v") = py::none(), py::arg("d_scale_dy") = py::none(),
             py::arg("d_scale_o") = py::none(), py::arg("out_dtype") = 0,
             "The flash attention backward into dq, dk, dv (dpse: None, or a buffer the operator leaves as it is); "
             "philox draws the mask from (seed, offset), and d_scale_* (FP8 query, key, value, dy; out_dtype 0: "
             "float16, 1: bfloat16 outputs) select aclnnFlashAttentionScoreGradV4. Returns the entry point's name.");
  // The FP8 dtypes for (array, dtype) pairs of uint8 codes.
  module.attr("ACL_FLOAT8_E5M2") = static_cast<int>(ACL_FLOAT8_E5M2);
  module.attr("ACL_FLOAT8_E4M3FN") = static_cast<int>(ACL_FLOAT8_E4M3FN);
}

}  // namespace gradkit::python
