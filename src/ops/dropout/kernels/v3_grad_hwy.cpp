// SIMD DropoutV3Grad, compiled once per Highway target and dispatched at run time:
// widen to f32, multiply by the 0.0f / 1.0f mask lanes, multiply by the f32 scale, narrow once (RNE).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/dropout/kernels/v3_grad_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cmath>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/dropout/kernels/masked_lanes-inl.h"
#include "ops/dropout/kernels/v3_grad_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// True when g * (bit ? scale : +0) equals (g * (bit ? 1 : 0)) * scale bit for bit for every g: scale finite and
// not negative (+0 included, -0 not). Kept: the same single multiply g * scale. Dropped: (g * 0) * scale keeps the
// sign of g * 0 (scale > 0) and its NaN for Inf/NaN g, exactly as g * +0 does. Saves one multiply per vector.
bool scaleFoldsIntoMask(float scale) { return scale >= 0.0f && scale <= 3.4028235e38f && !std::signbit(scale); }

template <int kIn, int kOut>
void V3GradTyped(const void* grad, const uint8_t* mask, float scale, void* out, size_t n, bool stream) {
  if (scaleFoldsIntoMask(scale)) {
    masked::RunMasked<kIn, kOut>(grad, mask, out, n, stream, scale, [scale](auto tag, auto g, auto keep) {
      return hn::Mul(g, hn::IfThenElseZero(keep, hn::Set(tag, scale)));  // scale or +0 lanes, multiplied
    });
    return;
  }
  masked::RunMasked<kIn, kOut>(grad, mask, out, n, stream, scale, [scale](auto tag, auto g, auto keep) {
    const auto m = hn::IfThenElseZero(keep, hn::Set(tag, 1.0f));  // 1.0f / 0.0f lanes, multiplied: Inf * 0 = NaN
    return hn::Mul(hn::Mul(g, m), hn::Set(tag, scale));
  });
}

// Returns false when this target cannot run the format pair exactly (the caller then runs the scalar kernel).
bool V3GradKernel(int in, int outFormat, const void* grad, const uint8_t* mask, float scale, void* out, size_t n,
                  bool stream) {
  stream = stream && masked::CanStream(out);
  return masked::WithFormats(in, outFormat, [&](auto kIn, auto kOut) {
    V3GradTyped<decltype(kIn)::value, decltype(kOut)::value>(grad, mask, scale, out, n, stream);
  });
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {
namespace {

int formatOf(aclDataType dtype) { return dtype == ACL_FLOAT16 ? 1 : dtype == ACL_BF16 ? 2 : 0; }

}  // namespace

HWY_EXPORT(V3GradKernel);

void dropoutV3GradSimd(aclDataType gradDtype, aclDataType outDtype, const void* grad, const uint8_t* mask, float scale,
                       void* out, int64_t n, bool streamStores) {
  if (n <= 0) return;
  const bool done = HWY_DYNAMIC_DISPATCH(V3GradKernel)(formatOf(gradDtype), formatOf(outDtype), grad, mask, scale, out,
                                                       static_cast<size_t>(n), streamStores);
  if (!done) dropoutV3GradScalar(gradDtype, outDtype, grad, mask, scale, out, n);
}

const V3GradKernels kV3GradSimdKernels{dropoutV3GradSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
