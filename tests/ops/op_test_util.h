// Small helpers for op tests: host buffers wrapped as aclTensor views, freed automatically.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "hwy/targets.h"

namespace gradkit::test {

struct TensorDeleter {
  void operator()(aclTensor* t) const { aclDestroyTensor(t); }
};
struct ScalarDeleter {
  void operator()(aclScalar* s) const { aclDestroyScalar(s); }
};
using TensorPtr = std::unique_ptr<aclTensor, TensorDeleter>;
using ScalarPtr = std::unique_ptr<aclScalar, ScalarDeleter>;

inline std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

inline int64_t product(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

/** A view over `data` (storage = 1-D of storageElements); strides default to row-major. */
inline TensorPtr makeView(void* data, aclDataType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides = {},
                          int64_t offset = 0, int64_t storageElements = -1) {
  if (strides.empty() && !shape.empty()) strides = rowMajorStrides(shape);
  if (storageElements < 0) storageElements = product(shape) + offset;
  const int64_t storage[1] = {storageElements};
  return TensorPtr(aclCreateTensor(shape.data(), shape.size(), dtype, strides.empty() ? nullptr : strides.data(),
                                   offset, ACL_FORMAT_ND, storage, 1, data));
}

template <class T>
ScalarPtr makeScalar(T value, aclDataType dtype) {
  return ScalarPtr(aclCreateScalar(&value, dtype));
}

/** The messages recorded since the last call, as a std::string. */
inline std::string recentError() { return aclGetRecentErrMsg(); }

/** Asserts that `message` contains every one of `parts`. */
inline ::testing::AssertionResult mentions(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    if (message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "message \"" << message << "\" does not mention \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

/** Highway targets whose MulAdd is a multiply and an add (no fused multiply-add): kernels give other bits there. */
inline constexpr int64_t kHwyTargetsWithoutFma = HWY_SSE4 | HWY_SSSE3 | HWY_EMU128 | HWY_SCALAR;

/**
 * Calls fn(target) with Highway dispatching to each target with fused multiply-add that this CPU runs (an AVX-512
 * machine then checks its AVX2 kernels too), then restores the normal dispatch.
 */
template <class Fn>
void forEachFmaTarget(Fn&& fn) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if ((target & kHwyTargetsWithoutFma) != 0) continue;  // their MulAdd rounds twice
    hwy::SetSupportedTargetsForTest(target);
    fn(target);
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace gradkit::test
