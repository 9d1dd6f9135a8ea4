// Helpers for the mHC argument-check tests: tensors that own their (zeroed, 8-byte aligned) host buffers, views
// over another tensor's memory, a scoped platform profile, and the outcome of one GetWorkspaceSize call.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/op_test_util.h"
#include "runtime/runtime.h"

namespace gradkit::test::mhc {

/** Element sizes of the dtypes these tests use. */
inline int64_t elementBytes(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_DOUBLE:
      return 8;
    default:
      return 4;
  }
}

/** Owns every tensor and buffer of one test. */
class TensorPool {
 public:
  /** A tensor over a fresh zeroed buffer; strides default to row-major. */
  aclTensor* make(aclDataType dtype, const std::vector<int64_t>& shape, std::vector<int64_t> strides = {},
                  aclFormat format = ACL_FORMAT_ND) {
    if (strides.empty()) strides = rowMajorStrides(shape);
    int64_t elements = 1;  // last element reached + 1
    for (size_t d = 0; d < shape.size(); ++d) elements += (shape[d] - 1) * strides[d];
    for (int64_t dim : shape) {
      if (dim == 0) elements = 1;
    }
    auto& buffer = buffers_.emplace_back(static_cast<size_t>((elements * elementBytes(dtype) + 7) / 8 + 1), 0);
    return view(buffer.data(), dtype, shape, strides, 0, elements, format);
  }

  /** The same shape with every stride doubled: a non-contiguous view (gaps between all elements). */
  aclTensor* makeStrided(aclDataType dtype, const std::vector<int64_t>& shape) {
    std::vector<int64_t> strides = rowMajorStrides(shape);
    for (int64_t& stride : strides) stride *= 2;
    return make(dtype, shape, strides);
  }

  /** A view over `data` (storage of `storageElements`, default: exactly what the view reaches). */
  aclTensor* view(void* data, aclDataType dtype, const std::vector<int64_t>& shape, std::vector<int64_t> strides = {},
                  int64_t offset = 0, int64_t storageElements = -1, aclFormat format = ACL_FORMAT_ND) {
    if (strides.empty()) strides = rowMajorStrides(shape);
    if (storageElements < 0) {
      storageElements = offset + 1;
      for (size_t d = 0; d < shape.size(); ++d) storageElements += (shape[d] - 1) * strides[d];
    }
    const int64_t storage[1] = {storageElements};
    aclTensor* tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.empty() ? nullptr : strides.data(),
                                        offset, format, storage, 1, data);
    EXPECT_NE(tensor, nullptr) << aclGetRecentErrMsg();
    tensors_.emplace_back(tensor);
    return tensor;
  }

  /** A view of `shape` at element `offset` of `base`'s memory (which must hold it). */
  aclTensor* alias(const aclTensor* base, aclDataType dtype, const std::vector<int64_t>& shape, int64_t offset = 0,
                   std::vector<int64_t> strides = {}) {
    return view(base->data, dtype, shape, std::move(strides), offset);
  }

 private:
  std::deque<std::vector<uint64_t>> buffers_;
  std::vector<TensorPtr> tensors_;
};

/** Emulates `soc` for a scope through GRADKIT_SOC (any gradkitSetSoc choice forgotten), then restores. */
class ScopedSoc {
 public:
  explicit ScopedSoc(const char* soc) {
    if (const char* old = std::getenv("GRADKIT_SOC")) previous_ = old;
    setenv("GRADKIT_SOC", soc, 1);
    rt::clearSocOverride();
  }
  ~ScopedSoc() {
    if (previous_) {
      setenv("GRADKIT_SOC", previous_->c_str(), 1);
    } else {
      unsetenv("GRADKIT_SOC");
    }
    rt::clearSocOverride();
  }
  ScopedSoc(const ScopedSoc&) = delete;
  ScopedSoc& operator=(const ScopedSoc&) = delete;

 private:
  std::optional<std::string> previous_;
};

/** What one GetWorkspaceSize call gave back (its executor, if any, is destroyed unrun). */
struct Outcome {
  aclnnStatus status = -1;
  std::string message;
};

/** Status, then every fragment in the message, then the code in the message. */
inline ::testing::AssertionResult failsWith(const Outcome& outcome, aclnnStatus code,
                                            std::initializer_list<std::string> fragments) {
  if (outcome.status != code) {
    return ::testing::AssertionFailure() << "status " << outcome.status << ", expected " << code << "; message \""
                                         << outcome.message << "\"";
  }
  auto result = mentions(outcome.message, fragments);
  if (!result) return result;
  return mentions(outcome.message, {"(code " + std::to_string(code) + ")"});
}

/** "'name'" as the check messages quote an argument. */
inline std::string quoted(const std::string& name) { return "'" + name + "'"; }

/** One broken argument of a call of type Call: how to break it, the code, the argument named, a fragment of what was
 *  expected, the value given. */
template <class Call>
struct Rejection {
  std::string what;
  std::function<void(Call&)> change;
  aclnnStatus code;
  std::string arg, expected, given;
};

/**
 * Each rejection on a fresh valid Call(config): its code, then "<api>: argument '<arg>': expected ..<expected>..",
 * ", given <given>" and "(code <code>)." in the message.
 */
template <class Call, class Config>
void expectRejected(const char* api, const Config& config, const std::vector<Rejection<Call>>& cases) {
  for (const Rejection<Call>& r : cases) {
    Call call(config);
    r.change(call);
    const Outcome o = call.call();
    const std::string code = "(code " + std::to_string(r.code) + ").";
    EXPECT_TRUE(failsWith(
        o, r.code,
        {std::string(api) + ": argument " + quoted(r.arg) + ": expected ", r.expected, ", given " + r.given, code}))
        << r.what;
  }
}

/** The three profiles gradkit emulates. */
inline constexpr const char* kAllSocs[] = {"Ascend950", "Ascend910B", "Ascend910_93"};

}  // namespace gradkit::test::mhc
