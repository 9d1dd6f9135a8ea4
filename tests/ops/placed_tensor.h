// Host memory behind one aclTensor view for the value tests, dense or with gaps everywhere, with a sentinel around
// the view so that a test can tell whether a call wrote outside it.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "ops/op_test_util.h"

namespace gradkit::test {

/**
 * Host memory behind one aclTensor view: dense, or every stride doubled from element offset 1 (gaps everywhere).
 * Bytes outside the view hold kSentinel; the view holds `dense` (row-major values) or, for an output (dense null),
 * 0x7F bytes, so an element the call does not write is NaN-like garbage.
 */
class Placed {
 public:
  static constexpr unsigned char kSentinel = 0x5A;

  Placed(aclDataType dtype, std::vector<int64_t> shape, const void* dense, bool strided)
      : size_(aclDataTypeSize(dtype)), shape_(std::move(shape)) {
    strides_ = rowMajorStrides(shape_);
    const int64_t n = product(shape_);
    if (strided) {
      for (int64_t& s : strides_) s *= 2;
      offset_ = 1;
    }
    const int64_t elements = offset_ + (strided ? 2 * n : n) + (strided ? 1 : 0);
    storage_.assign(static_cast<size_t>(elements * size_ + 8), kSentinel);
    base_ = storage_.data() + (8 - reinterpret_cast<uintptr_t>(storage_.data()) % 8) % 8;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = position(i);
      inside_.push_back(at);
      if (dense != nullptr) {
        std::memcpy(base_ + at * size_, static_cast<const unsigned char*>(dense) + i * size_, size_);
      } else {
        std::memset(base_ + at * size_, 0x7F, size_);
      }
    }
    view_ = makeView(base_, dtype, shape_, strides_, offset_, elements);
  }

  /** The view, for an aclnn call. */
  aclTensor* get() const { return view_.get(); }

  /** The view's elements in row-major order, as T (the element's bytes). */
  template <class T>
  std::vector<T> gather() const {
    std::vector<T> out(inside_.size());
    for (size_t i = 0; i < inside_.size(); ++i) std::memcpy(&out[i], base_ + inside_[i] * size_, sizeof(T));
    return out;
  }

  /** True when every byte outside the view still holds kSentinel. */
  bool gapsIntact() const {
    std::vector<bool> mine(storage_.size(), false);
    const auto first = static_cast<size_t>(base_ - storage_.data());
    for (int64_t at : inside_) {
      for (int64_t b = 0; b < size_; ++b) mine[first + static_cast<size_t>(at * size_ + b)] = true;
    }
    for (size_t b = 0; b < storage_.size(); ++b) {
      if (!mine[b] && storage_[b] != kSentinel) return false;
    }
    return true;
  }

 private:
  int64_t position(int64_t index) const {
    int64_t at = offset_;
    for (int64_t d = static_cast<int64_t>(shape_.size()) - 1; d >= 0; --d) {
      at += (index % shape_[d]) * strides_[d];
      index /= shape_[d];
    }
    return at;
  }

  int64_t size_;
  std::vector<int64_t> shape_, strides_;
  int64_t offset_ = 0;
  std::vector<unsigned char> storage_;
  unsigned char* base_ = nullptr;
  std::vector<int64_t> inside_;
  TensorPtr view_;
};

}  // namespace gradkit::test
