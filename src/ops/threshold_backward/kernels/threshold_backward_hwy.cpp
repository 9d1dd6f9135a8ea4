// SIMD ThresholdBackward, compiled once per Highway target and dispatched at run time.
// fp16/bf16 are handled on their bit patterns as int16 (no widening needed): self <= 0 exactly when
// the bits are +0, or negative and not NaN, so keep = (bits > 0 as int16) | ((bits & 0x7fff) > Inf bits).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/threshold_backward/kernels/threshold_backward_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Stores a vector, non-temporally when asked (the pointer is then vector-aligned).
template <class D, class V, class T>
HWY_INLINE void storeOut(D d, V v, T* out, bool stream) {
  if (stream) {
    hn::Stream(v, d, out);
  } else {
    hn::StoreU(v, d, out);
  }
}

// Elements to process one by one before `out` reaches vector alignment (0 when streaming is off).
template <class T>
HWY_INLINE size_t headToAlign(const T* out, size_t n, size_t vectorBytes, bool stream) {
  if (!stream) return 0;
  const auto address = reinterpret_cast<uintptr_t>(out);
  const size_t misaligned = address % vectorBytes;
  if (misaligned == 0) return 0;
  return HWY_MIN(n, (vectorBytes - misaligned) / sizeof(T));
}

// The per-lane rule, shared by the head, body and tail of every loop below.
template <class D, class Keep>
HWY_INLINE void selectLoop(D d, const hn::TFromD<D>* grad, const hn::TFromD<D>* self, hn::TFromD<D>* out, size_t n,
                           bool stream, Keep keep) {
  using T = hn::TFromD<D>;
  const size_t lanes = hn::Lanes(d);
  const hn::CappedTag<T, 1> one;
  if (stream && (reinterpret_cast<uintptr_t>(out) % sizeof(T)) != 0) stream = false;  // cannot reach alignment
  const size_t head = headToAlign(out, n, lanes * sizeof(T), stream);
  size_t i = 0;
  for (; i < head; ++i) {
    const auto s = hn::LoadU(one, self + i);
    hn::StoreU(hn::IfThenElseZero(keep(one, s), hn::LoadU(one, grad + i)), one, out + i);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto s = hn::LoadU(d, self + i);
    storeOut(d, hn::IfThenElseZero(keep(d, s), hn::LoadU(d, grad + i)), out + i, stream);
  }
  for (; i < n; ++i) {
    const auto s = hn::LoadU(one, self + i);
    hn::StoreU(hn::IfThenElseZero(keep(one, s), hn::LoadU(one, grad + i)), one, out + i);
  }
  if (stream) hwy::FlushStream();
}

void ThresholdFloat(const float* grad, const float* self, float* out, size_t n, bool stream) {
  const hn::ScalableTag<float> d;
  selectLoop(d, grad, self, out, n, stream, [](auto tag, auto s) { return hn::Not(hn::Le(s, hn::Zero(tag))); });
}

void ThresholdHalfBits(const int16_t* grad, const int16_t* self, int16_t* out, size_t n, int16_t infBits, bool stream) {
  const hn::ScalableTag<int16_t> d;
  selectLoop(d, grad, self, out, n, stream, [infBits](auto tag, auto s) {
    const auto magnitude = hn::And(s, hn::Set(tag, int16_t{0x7fff}));
    return hn::Or(hn::Gt(s, hn::Zero(tag)), hn::Gt(magnitude, hn::Set(tag, infBits)));
  });
}

template <class T>
void ThresholdSigned(const T* grad, const T* self, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  selectLoop(d, grad, self, out, n, false, [](auto tag, auto s) { return hn::Gt(s, hn::Zero(tag)); });
}

void ThresholdInt8(const int8_t* grad, const int8_t* self, int8_t* out, size_t n) {
  ThresholdSigned(grad, self, out, n);
}
void ThresholdInt32(const int32_t* grad, const int32_t* self, int32_t* out, size_t n) {
  ThresholdSigned(grad, self, out, n);
}
void ThresholdInt64(const int64_t* grad, const int64_t* self, int64_t* out, size_t n) {
  ThresholdSigned(grad, self, out, n);
}

void ThresholdUint8(const uint8_t* grad, const uint8_t* self, uint8_t* out, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  selectLoop(d, grad, self, out, n, false, [](auto tag, auto s) { return hn::Not(hn::Eq(s, hn::Zero(tag))); });
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(ThresholdFloat);
HWY_EXPORT(ThresholdHalfBits);
HWY_EXPORT(ThresholdInt8);
HWY_EXPORT(ThresholdUint8);
HWY_EXPORT(ThresholdInt32);
HWY_EXPORT(ThresholdInt64);

void thresholdBackwardSimd(aclDataType dtype, const void* gradOutput, const void* self, void* out, int64_t n,
                           bool streamStores) {
  const auto count = static_cast<size_t>(n);
  switch (dtype) {
    case ACL_FLOAT:
      return HWY_DYNAMIC_DISPATCH(ThresholdFloat)(static_cast<const float*>(gradOutput),
                                                  static_cast<const float*>(self), static_cast<float*>(out), count,
                                                  streamStores);
    case ACL_FLOAT16:
    case ACL_BF16: {
      const int16_t infBits = dtype == ACL_FLOAT16 ? int16_t{0x7c00} : int16_t{0x7f80};
      return HWY_DYNAMIC_DISPATCH(ThresholdHalfBits)(static_cast<const int16_t*>(gradOutput),
                                                     static_cast<const int16_t*>(self), static_cast<int16_t*>(out),
                                                     count, infBits, streamStores);
    }
    case ACL_INT8:
      return HWY_DYNAMIC_DISPATCH(ThresholdInt8)(static_cast<const int8_t*>(gradOutput),
                                                 static_cast<const int8_t*>(self), static_cast<int8_t*>(out), count);
    case ACL_UINT8:
      return HWY_DYNAMIC_DISPATCH(ThresholdUint8)(static_cast<const uint8_t*>(gradOutput),
                                                  static_cast<const uint8_t*>(self), static_cast<uint8_t*>(out), count);
    case ACL_INT32:
      return HWY_DYNAMIC_DISPATCH(ThresholdInt32)(static_cast<const int32_t*>(gradOutput),
                                                  static_cast<const int32_t*>(self), static_cast<int32_t*>(out), count);
    case ACL_INT64:
      return HWY_DYNAMIC_DISPATCH(ThresholdInt64)(static_cast<const int64_t*>(gradOutput),
                                                  static_cast<const int64_t*>(self), static_cast<int64_t*>(out), count);
    default:
      return;  // the check rejects every other dtype before a kernel runs
  }
}

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
