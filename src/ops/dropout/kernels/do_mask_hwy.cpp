// SIMD DropoutDoMask (legacy arithmetic), compiled once per Highway target and dispatched at run time:
// widen to f32, multiply by the f32 reciprocal of keep, select by the mask lanes (+0 where dropped), narrow once.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/dropout/kernels/do_mask_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/dropout/kernels/do_mask_kernel.h"
#include "ops/dropout/kernels/masked_lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <int kIn, int kOut>
void DoMaskTyped(const void* x, const uint8_t* mask, float reciprocal, void* out, size_t n, bool stream) {
  masked::RunMasked<kIn, kOut>(x, mask, out, n, stream, reciprocal, [reciprocal](auto tag, auto v, auto keep) {
    return hn::IfThenElseZero(keep, hn::Mul(v, hn::Set(tag, reciprocal)));  // select: a dropped NaN/Inf gives +0
  });
}

// Returns false when this target cannot run the format pair exactly (the caller then runs the scalar kernel).
bool DoMaskKernel(int in, int outFormat, const void* x, const uint8_t* mask, float reciprocal, void* out, size_t n,
                  bool stream) {
  stream = stream && masked::CanStream(out);
  return masked::WithFormats(in, outFormat, [&](auto kIn, auto kOut) {
    DoMaskTyped<decltype(kIn)::value, decltype(kOut)::value>(x, mask, reciprocal, out, n, stream);
  });
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {
namespace {

int formatOf(aclDataType dtype) { return dtype == ACL_FLOAT16 ? 1 : dtype == ACL_BF16 ? 2 : 0; }

}  // namespace

HWY_EXPORT(DoMaskKernel);

void dropoutDoMaskSimd(aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, float reciprocal,
                       void* out, int64_t n, bool streamStores) {
  if (n <= 0) return;
  const bool done = HWY_DYNAMIC_DISPATCH(DoMaskKernel)(formatOf(xDtype), formatOf(outDtype), x, mask, reciprocal, out,
                                                       static_cast<size_t>(n), streamStores);
  if (!done) dropoutDoMaskScalar(xDtype, outDtype, x, mask, reciprocal, out, n);
}

const DoMaskKernels kDoMaskSimdKernels{dropoutDoMaskSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
