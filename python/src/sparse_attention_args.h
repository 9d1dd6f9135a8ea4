// Helpers of the sparse attention family's bindings: the nine INT32 length tensors most of its operators take (in
// upstream's order), and a layout string passed as the `char*` the prototypes declare.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "tensor_arg.h"

namespace gradkit::python {

/** cu_seqlens (q, ori kv, cmp kv), seqused (the same), the cmp residual and the ori / cmp top-k lengths. */
class SparseLengthArgs {
 public:
  SparseLengthArgs(pybind11::handle cuQ, pybind11::handle cuOri, pybind11::handle cuCmp, pybind11::handle usedQ,
                   pybind11::handle usedOri, pybind11::handle usedCmp, pybind11::handle residual,
                   pybind11::handle oriTopk, pybind11::handle cmpTopk)
      : cuQ_(TensorArg::fromOptional(cuQ, "cu_seqlens_q", false)),
        cuOri_(TensorArg::fromOptional(cuOri, "cu_seqlens_ori_kv", false)),
        cuCmp_(TensorArg::fromOptional(cuCmp, "cu_seqlens_cmp_kv", false)),
        usedQ_(TensorArg::fromOptional(usedQ, "seqused_q", false)),
        usedOri_(TensorArg::fromOptional(usedOri, "seqused_ori_kv", false)),
        usedCmp_(TensorArg::fromOptional(usedCmp, "seqused_cmp_kv", false)),
        residual_(TensorArg::fromOptional(residual, "cmp_residual_kv", false)),
        oriTopk_(TensorArg::fromOptional(oriTopk, "ori_topk_length", false)),
        cmpTopk_(TensorArg::fromOptional(cmpTopk, "cmp_topk_length", false)) {}

  aclTensor* cuSeqlensQ() const { return handleOf(cuQ_); }
  aclTensor* cuSeqlensOriKv() const { return handleOf(cuOri_); }
  aclTensor* cuSeqlensCmpKv() const { return handleOf(cuCmp_); }
  aclTensor* sequsedQ() const { return handleOf(usedQ_); }
  aclTensor* sequsedOriKv() const { return handleOf(usedOri_); }
  aclTensor* sequsedCmpKv() const { return handleOf(usedCmp_); }
  aclTensor* cmpResidualKv() const { return handleOf(residual_); }
  aclTensor* oriTopkLength() const { return handleOf(oriTopk_); }
  aclTensor* cmpTopkLength() const { return handleOf(cmpTopk_); }

 private:
  std::optional<TensorArg> cuQ_, cuOri_, cuCmp_, usedQ_, usedOri_, usedCmp_, residual_, oriTopk_, cmpTopk_;
};

/** A layout ("BSND", "TND", "PA_BBND") as a mutable C string; None gives nullptr. */
class LayoutString {
 public:
  explicit LayoutString(const std::optional<std::string>& text) : text_(text) {}
  char* get() { return text_ ? text_->data() : nullptr; }

 private:
  std::optional<std::string> text_;
};

}  // namespace gradkit::python
