// SIMD ThresholdBackward, compiled once per Highway target and dispatched at run time.
// fp32 compares as float. fp16/bf16 compare on their bit patterns as int16, without widening: the key
// (bits & 0x7fff, negated when the sign is set) orders every non-NaN value like the number it encodes
// (+0 and -0 share key 0), so float(self) <= t exactly when key(self) <= key(largest value <= t), and NaN
// is kept by its magnitude (> Inf bits). Integers compare in their own type.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/threshold_backward/kernels/threshold_backward_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cmath>

#include "gradkit/float_convert.h"
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

// The gradient lanes at element i: a load, or the row's one value broadcast.
template <bool kScalar, class D>
HWY_INLINE hn::VFromD<D> gradAt(D d, const hn::TFromD<D>* grad, size_t i) {
  if constexpr (kScalar) {
    return hn::Set(d, grad[0]);
  } else {
    return hn::LoadU(d, grad + i);
  }
}

// The keep mask at element i: from loaded self lanes, or the row's one decision broadcast.
template <bool kScalar, class D, class Keep>
HWY_INLINE auto keepAt(D d, const hn::TFromD<D>* self, size_t i, Keep keep) {
  if constexpr (kScalar) {
    return keep(d, hn::Set(d, self[0]));
  } else {
    return keep(d, hn::LoadU(d, self + i));
  }
}

// The per-lane rule over one row, shared by the head, body and tail. kGradScalar / kSelfScalar: that input
// has stride 0 along the row.
template <bool kGradScalar, bool kSelfScalar, class D, class Keep>
HWY_INLINE void selectRow(D d, const hn::TFromD<D>* grad, const hn::TFromD<D>* self, hn::TFromD<D>* out, size_t n,
                          bool stream, Keep keep) {
  using T = hn::TFromD<D>;
  const size_t lanes = hn::Lanes(d);
  const hn::CappedTag<T, 1> one;
  if (stream && (reinterpret_cast<uintptr_t>(out) % sizeof(T)) != 0) stream = false;  // cannot reach alignment
  const size_t head = headToAlign(out, n, lanes * sizeof(T), stream);
  size_t i = 0;
  for (; i < head; ++i) {
    const auto m = keepAt<kSelfScalar>(one, self, i, keep);
    hn::StoreU(hn::IfThenElseZero(m, gradAt<kGradScalar>(one, grad, i)), one, out + i);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto m = keepAt<kSelfScalar>(d, self, i, keep);
    storeOut(d, hn::IfThenElseZero(m, gradAt<kGradScalar>(d, grad, i)), out + i, stream);
  }
  for (; i < n; ++i) {
    const auto m = keepAt<kSelfScalar>(one, self, i, keep);
    hn::StoreU(hn::IfThenElseZero(m, gradAt<kGradScalar>(one, grad, i)), one, out + i);
  }
  if (stream) hwy::FlushStream();
}

// Picks the instantiation for the strides (each 0 or 1).
template <class D, class Keep>
HWY_INLINE void selectStrided(D d, const hn::TFromD<D>* grad, int64_t gradStride, const hn::TFromD<D>* self,
                              int64_t selfStride, hn::TFromD<D>* out, size_t n, bool stream, Keep keep) {
  if (selfStride == 0) {
    if (gradStride == 0) return selectRow<true, true>(d, grad, self, out, n, stream, keep);
    return selectRow<false, true>(d, grad, self, out, n, stream, keep);
  }
  if (gradStride == 0) return selectRow<true, false>(d, grad, self, out, n, stream, keep);
  return selectRow<false, false>(d, grad, self, out, n, stream, keep);
}

void ThresholdFloat(const float* grad, int64_t gradStride, const float* self, int64_t selfStride, float* out, size_t n,
                    float threshold, bool stream) {
  const hn::ScalableTag<float> d;
  selectStrided(d, grad, gradStride, self, selfStride, out, n, stream,
                [threshold](auto tag, auto s) { return hn::Not(hn::Le(s, hn::Set(tag, threshold))); });
}

void ThresholdHalfBits(const int16_t* grad, int64_t gradStride, const int16_t* self, int64_t selfStride, int16_t* out,
                       size_t n, int16_t infBits, int16_t thresholdKey, bool stream) {
  const hn::ScalableTag<int16_t> d;
  selectStrided(d, grad, gradStride, self, selfStride, out, n, stream, [infBits, thresholdKey](auto tag, auto s) {
    const auto magnitude = hn::And(s, hn::Set(tag, int16_t{0x7fff}));
    const auto sign = hn::ShiftRight<15>(s);  // 0 or -1
    const auto key = hn::Sub(hn::Xor(magnitude, sign), sign);
    return hn::Or(hn::Gt(key, hn::Set(tag, thresholdKey)), hn::Gt(magnitude, hn::Set(tag, infBits)));
  });
}

template <class T>
void ThresholdSigned(const T* grad, int64_t gradStride, const T* self, int64_t selfStride, T* out, size_t n,
                     T threshold, bool keepAll, bool stream) {
  const hn::ScalableTag<T> d;
  if (keepAll) {
    selectStrided(d, grad, gradStride, self, selfStride, out, n, stream,
                  [](auto /*tag*/, auto s) { return hn::Eq(s, s); });
    return;
  }
  selectStrided(d, grad, gradStride, self, selfStride, out, n, stream,
                [threshold](auto tag, auto s) { return hn::Gt(s, hn::Set(tag, threshold)); });
}

void ThresholdInt8(const int8_t* grad, int64_t gradStride, const int8_t* self, int64_t selfStride, int8_t* out,
                   size_t n, int8_t threshold, bool keepAll, bool stream) {
  ThresholdSigned(grad, gradStride, self, selfStride, out, n, threshold, keepAll, stream);
}
void ThresholdInt32(const int32_t* grad, int64_t gradStride, const int32_t* self, int64_t selfStride, int32_t* out,
                    size_t n, int32_t threshold, bool keepAll, bool stream) {
  ThresholdSigned(grad, gradStride, self, selfStride, out, n, threshold, keepAll, stream);
}
void ThresholdInt64(const int64_t* grad, int64_t gradStride, const int64_t* self, int64_t selfStride, int64_t* out,
                    size_t n, int64_t threshold, bool keepAll, bool stream) {
  ThresholdSigned(grad, gradStride, self, selfStride, out, n, threshold, keepAll, stream);
}

// uint8: self > t exactly when the saturating difference self - t is non-zero.
void ThresholdUint8(const uint8_t* grad, int64_t gradStride, const uint8_t* self, int64_t selfStride, uint8_t* out,
                    size_t n, uint8_t threshold, bool keepAll, bool stream) {
  const hn::ScalableTag<uint8_t> d;
  if (keepAll) {
    selectStrided(d, grad, gradStride, self, selfStride, out, n, stream,
                  [](auto /*tag*/, auto s) { return hn::Eq(s, s); });
    return;
  }
  selectStrided(d, grad, gradStride, self, selfStride, out, n, stream, [threshold](auto tag, auto s) {
    return hn::Not(hn::Eq(hn::SaturatedSub(s, hn::Set(tag, threshold)), hn::Zero(tag)));
  });
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {
namespace {

// The order key of a non-NaN fp16/bf16 bit pattern (see the top of this file).
int32_t keyOf(uint16_t bits) {
  const int32_t magnitude = bits & 0x7fff;
  return (bits & 0x8000) != 0 ? -magnitude : magnitude;
}

// The key of the largest fp16/bf16 value v with float(v) <= threshold; below every key for a NaN threshold.
template <class Narrow, class Widen>
int16_t thresholdKey(float threshold, Narrow narrow, Widen widen) {
  if (std::isnan(threshold)) return INT16_MIN;  // !(x <= NaN): keep everything
  const uint16_t nearest = narrow(threshold);   // a finite threshold may round to +-Inf: the step below fixes it
  int32_t key = keyOf(nearest);
  if (widen(nearest) > threshold) --key;  // rounded up: the next value below is the largest one <= threshold
  return static_cast<int16_t>(key);
}

}  // namespace

HWY_EXPORT(ThresholdFloat);
HWY_EXPORT(ThresholdHalfBits);
HWY_EXPORT(ThresholdInt8);
HWY_EXPORT(ThresholdUint8);
HWY_EXPORT(ThresholdInt32);
HWY_EXPORT(ThresholdInt64);

void thresholdBackwardSimd(aclDataType dtype, const void* gradOutput, int64_t gradStride, const void* self,
                           int64_t selfStride, void* out, int64_t n, const ThresholdValue& threshold,
                           bool streamStores) {
  const auto count = static_cast<size_t>(n);
  const bool all = threshold.keepAll;
  switch (dtype) {
    case ACL_FLOAT:
      return HWY_DYNAMIC_DISPATCH(ThresholdFloat)(static_cast<const float*>(gradOutput), gradStride,
                                                  static_cast<const float*>(self), selfStride, static_cast<float*>(out),
                                                  count, threshold.asFloat, streamStores);
    case ACL_FLOAT16:
    case ACL_BF16: {
      const bool half = dtype == ACL_FLOAT16;
      const int16_t infBits = half ? int16_t{0x7c00} : int16_t{0x7f80};
      const int16_t key = half ? thresholdKey(threshold.asFloat, floatToHalf, halfToFloat)
                               : thresholdKey(threshold.asFloat, floatToBf16, bf16ToFloat);
      return HWY_DYNAMIC_DISPATCH(ThresholdHalfBits)(static_cast<const int16_t*>(gradOutput), gradStride,
                                                     static_cast<const int16_t*>(self), selfStride,
                                                     static_cast<int16_t*>(out), count, infBits, key, streamStores);
    }
    case ACL_INT8:
      return HWY_DYNAMIC_DISPATCH(ThresholdInt8)(
          static_cast<const int8_t*>(gradOutput), gradStride, static_cast<const int8_t*>(self), selfStride,
          static_cast<int8_t*>(out), count, static_cast<int8_t>(threshold.asInt), all, streamStores);
    case ACL_UINT8:
      return HWY_DYNAMIC_DISPATCH(ThresholdUint8)(
          static_cast<const uint8_t*>(gradOutput), gradStride, static_cast<const uint8_t*>(self), selfStride,
          static_cast<uint8_t*>(out), count, static_cast<uint8_t>(threshold.asInt), all, streamStores);
    case ACL_INT32:
      return HWY_DYNAMIC_DISPATCH(ThresholdInt32)(
          static_cast<const int32_t*>(gradOutput), gradStride, static_cast<const int32_t*>(self), selfStride,
          static_cast<int32_t*>(out), count, static_cast<int32_t>(threshold.asInt), all, streamStores);
    case ACL_INT64:
      return HWY_DYNAMIC_DISPATCH(ThresholdInt64)(
          static_cast<const int64_t*>(gradOutput), gradStride, static_cast<const int64_t*>(self), selfStride,
          static_cast<int64_t*>(out), count, threshold.asInt, all, streamStores);
    default:
      return;  // the check rejects every other dtype before a kernel runs
  }
}

const ThresholdBackwardKernels kThresholdBackwardSimdKernels{thresholdBackwardSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
