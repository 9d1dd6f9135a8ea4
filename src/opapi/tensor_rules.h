// Argument rules every operator's check shares, beyond opapi/check.h: rank and exact-shape wording, private NPU
// formats, and gradkit's memory rules (allocation fit, no output overlapping an input or another output). Every
// helper returns ACLNN_SUCCESS or records "<api>: argument '<name>': expected ..., given ..." and returns the code.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

namespace gradkit {

/** 161002 unless the tensor has one of `ranks` dims; `why` explains the rule ("rank of x - 1"). */
aclnnStatus checkRankIn(std::string_view api, std::string_view name, const aclTensor& tensor,
                        std::initializer_list<int64_t> ranks, std::string_view why);

/** 161002 unless the view shape is exactly `expected`; `why` says where the dims come from. */
aclnnStatus checkShapeIs(std::string_view api, std::string_view name, const aclTensor& tensor,
                         const std::vector<int64_t>& expected, std::string_view why);

/** 161002 for a private (NPU-internal) format: NC1HWC0, FRACTAL_Z, NC1HWC0_C04, FRACTAL_NZ, NDC1HWC0, FRACTAL_Z_3D. */
aclnnStatus checkNotPrivateFormat(std::string_view api, std::string_view name, const aclTensor& tensor);

/**
 * An optional tensor as the rules see it: null when absent or 0-dim (upstream treats a 0-dim optional tensor as
 * absent, e.g. flash attention spec fag.md 2.4).
 */
inline const aclTensor* absentIfScalar(const aclTensor* t) { return t != nullptr && t->dim() == 0 ? nullptr : t; }

/** One argument for the memory rules; `tensor` null means absent (skipped). */
struct NamedTensor {
  std::string_view name;
  const aclTensor* tensor;
  /** For an output: the one input it may be exactly the same view of (an in-place call); empty for none. */
  std::string_view inPlaceWith = {};
};

/**
 * gradkit's memory rules after upstream's (docs/reliability.md): every tensor's data is not in a freed block and
 * its storage fits in the tracked allocation behind it (aclCreateTensor's rules, asked again because the memory may
 * have been freed since the descriptor was made), no output writes an address twice, no output shares a byte with an
 * input (the kernels read inputs across tokens while they write) except exactly the same view of its `inPlaceWith`
 * input, and no two outputs share a byte. 161002 naming the tensors.
 */
aclnnStatus checkMemoryRules(std::string_view api, const std::vector<NamedTensor>& inputs,
                             const std::vector<NamedTensor>& outputs);

/** checkNotNull (161001) for each tensor of the list in order. */
aclnnStatus checkEachNotNull(std::string_view api, const std::vector<NamedTensor>& tensors);

/** checkDtypeIn for each tensor of the list in order (all present). */
aclnnStatus checkEachDtypeIn(std::string_view api, const std::vector<NamedTensor>& tensors,
                             std::initializer_list<aclDataType> allowed);

/** 161002 for the first tensor of the list (absent ones skipped) that has elements but a null data pointer. */
aclnnStatus checkEachHasData(std::string_view api, const std::vector<NamedTensor>& tensors);

/** checkNotPrivateFormat for each tensor of the list in order (absent ones skipped). */
aclnnStatus checkNotPrivateFormats(std::string_view api, const std::vector<NamedTensor>& tensors);

/** `lead` followed by `tail`: the expected shape of a per-token tensor. */
std::vector<int64_t> shapeWithTail(const std::vector<int64_t>& lead, const std::vector<int64_t>& tail);

}  // namespace gradkit
