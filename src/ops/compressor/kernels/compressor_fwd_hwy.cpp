// The SIMD Compressor forward kernels, compiled once per Highway target and dispatched at run time. They run on x86
// targets from AVX2 on (native FMA, F16C, and Max with the semantics m > z ? m : z of the scalar kernel); other
// targets run the scalar kernels. One vector of channels at a time, the same operations per lane and in the same
// order as compressor_fwd_scalar.cpp (see compressor_fwd_kernel.h); the channel tail shorter than a vector runs
// the scalar kernel.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/compressor/kernels/compressor_fwd_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstdint>
#include <limits>

#include "gradkit/float_convert.h"
#include "hwy/highway.h"
#include "ops/compressor/kernels/compressor_fwd_kernel.h"
#include "ops/compressor/kernels/compressor_fwd_math.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

/** compressorFwdExp per lane. */
HWY_INLINE VF Exp(VF x) {
  const DF d;
  const hn::RebindToSigned<DF> di;
  const VF n = hn::Round(hn::Mul(x, hn::Set(d, kCompressorLog2e)));
  VF r = hn::MulAdd(n, hn::Set(d, -kCompressorLn2Hi), x);
  r = hn::MulAdd(n, hn::Set(d, -kCompressorLn2Lo), r);
  VF p = hn::Set(d, kCompressorExpPoly[0]);
  for (int i = 1; i < kCompressorExpPolyTerms; ++i) p = hn::MulAdd(p, r, hn::Set(d, kCompressorExpPoly[i]));
  const VF rr = hn::Mul(r, r);
  VF y = hn::MulAdd(p, rr, r);
  y = hn::Add(y, hn::Set(d, 1.0f));
  const auto exponent = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
  const VF value = hn::Mul(y, hn::BitCast(d, exponent));
  const VF flushed = hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, kCompressorExpMin)), value);
  return hn::IfThenElse(hn::IsNaN(x), x, flushed);
}

/** z_n of the lanes at channel `at` (the caller skips padding rows). */
HWY_INLINE VF ScoreOf(const CompressorFwdBlock& b, int64_t n, int64_t at) {
  const DF d;
  const VF score = hn::LoadU(d, b.score[n] + at);
  return b.ape[n] != nullptr ? hn::Add(score, hn::LoadU(d, b.ape[n] + at)) : score;
}

void Channels(const CompressorFwdBlock& b, int64_t at, float* scratch) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  VF top = hn::Set(d, -std::numeric_limits<float>::infinity());
  for (int64_t n = 0; n < b.rows; ++n) {
    if (b.kv[n] != nullptr) top = hn::Max(top, ScoreOf(b, n, at));
  }
  VF sum = hn::Zero(d), sumError = hn::Zero(d);
  for (int64_t n = 0; n < b.rows; ++n) {
    const VF e = b.kv[n] == nullptr ? hn::Zero(d) : Exp(hn::Sub(ScoreOf(b, n, at), top));
    hn::StoreU(e, d, scratch + n * lanes);
    const VF s = hn::Add(sum, e);
    const VF eVirtual = hn::Sub(s, sum);
    const VF sumVirtual = hn::Sub(s, eVirtual);
    sumError = hn::Add(sumError, hn::Add(hn::Sub(sum, sumVirtual), hn::Sub(e, eVirtual)));
    sum = s;
  }
  const VF total = hn::Add(sum, sumError);
  VF acc = hn::Zero(d), accError = hn::Zero(d);
  const int64_t width = b.headDim;
  for (int64_t n = 0; n < b.rows; ++n) {
    const VF weight = hn::Div(hn::LoadU(d, scratch + n * lanes), total);
    const VF k = b.kv[n] == nullptr ? hn::Zero(d) : hn::LoadU(d, b.kv[n] + at);
    if (b.softmaxScore != nullptr) hn::StoreU(weight, d, b.softmaxScore + n * width + at);
    if (b.kvOut != nullptr) hn::StoreU(k, d, b.kvOut + n * width + at);
    const VF product = hn::Mul(weight, k);
    const VF productError = hn::MulSub(weight, k, product);
    const VF s = hn::Add(acc, product);
    const VF pVirtual = hn::Sub(s, acc);
    const VF accVirtual = hn::Sub(s, pVirtual);
    accError = hn::Add(accError, hn::Add(productError, hn::Add(hn::Sub(acc, accVirtual), hn::Sub(product, pVirtual))));
    acc = s;
  }
  HWY_ALIGN float pooled[kCompressorMaxLanes];
  hn::Store(hn::Add(acc, accError), d, pooled);
  for (int64_t lane = 0; lane < lanes; ++lane) {
    b.cmpKv[at + lane] = b.half ? floatToHalf(pooled[lane]) : floatToBf16(pooled[lane]);
  }
}

bool Block(const CompressorFwdBlock& b, float* scratch) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  if (lanes > kCompressorMaxLanes) return false;
  int64_t at = 0;
  for (; at + lanes <= b.headDim; at += lanes) Channels(b, at, scratch);
  if (at < b.headDim) compressorFwdChannelsScalar(b, at, b.headDim, scratch);
  return true;
}

bool WidenHalf(const uint16_t* from, float* to, int64_t count) {
  const DF d;
  const hn::Rebind<uint16_t, DF> d16;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= count; i += lanes)
    hn::StoreU(hn::PromoteTo(d, hn::BitCast(dh, hn::LoadU(d16, from + i))), d, to + i);
  for (; i < count; ++i) to[i] = halfToFloat(from[i]);
  return true;
}

#else

bool Block(const CompressorFwdBlock&, float*) { return false; }  // the caller runs the scalar kernel
bool WidenHalf(const uint16_t*, float*, int64_t) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(Block);
HWY_EXPORT(WidenHalf);

namespace {

void blockSimd(const CompressorFwdBlock& block, float* scratch) {
  if (!HWY_DYNAMIC_DISPATCH(Block)(block, scratch)) compressorFwdChannelsScalar(block, 0, block.headDim, scratch);
}

void widenHalfSimd(const uint16_t* from, float* to, int64_t count) {
  if (HWY_DYNAMIC_DISPATCH(WidenHalf)(from, to, count)) return;
  for (int64_t i = 0; i < count; ++i) to[i] = halfToFloat(from[i]);
}

}  // namespace

const CompressorFwdKernels kCompressorFwdSimdKernels{blockSimd, widenHalfSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
