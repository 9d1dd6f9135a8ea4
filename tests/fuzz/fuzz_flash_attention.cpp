// libFuzzer target: the flash attention entry points (tests/fuzz/README.md). The first byte picks one of twelve:
// forward aclnnFlashAttentionScore, V2, V4 (padded or TND), VarLenScore, VarLenScoreV2, VarLenScoreV4; backward
// aclnnFlashAttentionScoreGrad, V2, V4 (padded or TND, Philox dropout from seed / offset), UnpaddingScoreGrad, V2, V4.
// The next bytes pick the emulated SoC (the V4 entry points exist only on Ascend950), the layout the shapes follow and
// the layout string passed (sometimes another one, a bad one or null), the dtype, the sizes (B, N2, the group N1 / N2,
// S1, S2, D, D_V: small, with edge and hostile values), the TND lengths and their cumulative arrays, headNum, the
// scale, keepProb, the mask (none, [S1, S2], [1, 1, S1, S2], [B, 1, S1, S2], [B, N1, S1, S2], upstream's [2048, 2048]
// and [3072, 2048] templates), the sparse mode and tokens, prefix, the pse (the user shapes, the 1024-row ALiBi
// form, the slopes) and pseType, qStartIdx / kvStartIdx, the statistics layout, innerPrecise; then every tensor is
// decoded with fuzz_common.h's hostile descriptors (shape mutations, strides, offsets, dtypes, formats, aliasing of
// earlier buffers, null).
//
// Issue 27's families have their own choices: keepProb near 0 (1e-300, 1e-46, 1e-40, FLT_MIN and its neighbours,
// denormals), FP8 GradV4 calls with their de-quant scales (NaN, +/-Inf, 1e20 ...), qStartIdx / kvStartIdx at the int64
// extremes and around +/-2^61, stride-0 keys of 2^40 .. INT64_MAX rows, and stride-0 dropMasks of up to 2^62 bytes.
//
// The oracle is fuzz_common.h's (no crash, no sanitizer report, a failed first phase changes no byte, an accepted call
// runs, synchronizes and writes only its outputs' views: an FP8 run with NaN scales included) plus the rules this
// target recognises by itself: a null required tensor, workspaceSize or executor, a V4 entry point off Ascend950, and
// (unless the backward has nothing to compute, spec 2.4) a keepProb outside (0, 1] or below FLT_MIN as a float, a
// sparse mode 2..8 without attenMask, a start index outside [-2^61, 2^61], or dropout over more than 2^62 scores must
// fail; an accepted call with a stride-0 dropMask may not ask for a workspace that grows with the mask's claimed size.
// The numerics are not compared here (tests/ops does that).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "fuzz_common.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace {

using gradkit::rt::Soc;

enum Entry {
  kScore,
  kScoreV2,
  kScoreV4,
  kVarLen,
  kVarLenV2,
  kVarLenV4,
  kGrad,
  kGradV2,
  kGradV4,
  kUnpad,
  kUnpadV2,
  kUnpadV4,
  kEntries
};

bool isBackward(int e) { return e >= kGrad; }
bool isV4(int e) { return e == kScoreV4 || e == kGradV4; }  // the Ascend950-only entry points
bool tndOnly(int e) { return e == kVarLen || e == kVarLenV2 || e == kVarLenV4 || e >= kUnpad; }
// The entry points whose signature has qStartIdxOptional / kvStartIdxOptional.
bool takesStartIdx(int e) {
  return e == kScoreV2 || e == kScoreV4 || e == kVarLenV2 || e == kGradV2 || e == kGradV4 || e == kUnpadV2;
}
bool isFp8(int dtype) { return dtype == ACL_FLOAT8_E5M2 || dtype == ACL_FLOAT8_E4M3FN; }

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kTemplateRows = 3072, kTemplateCols = 2048;

/** Upstream's templates, read-only for every input: [2048, 2048] causal rows, then 1024 more rows for mode 6. */
unsigned char* templateBytes() {
  static std::vector<unsigned char> bytes = [] {
    std::vector<unsigned char> t(static_cast<size_t>(kTemplateRows * kTemplateCols), 0);
    for (int64_t i = 0; i < kTemplateRows; ++i) {
      for (int64_t j = i + 1; j < kTemplateCols; ++j) t[static_cast<size_t>(i * kTemplateCols + j)] = 1;
    }
    return t;
  }();
  return bytes.data();
}

/** a * b, saturated (hostile sizes must not overflow in the target itself). */
int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kI64Max : r;
}

/** Mostly small sizes, sometimes 0 or hostile. */
int64_t smallSize(fuzz::Input& in, int64_t small, int64_t plus) {
  const uint8_t m = in.u8();
  if (m < 230) return m % small + plus;
  return in.dim();
}

int64_t headDim(fuzz::Input& in) {
  static constexpr int64_t kDims[] = {16, 8, 32, 64, 24, 128, 1, 3, 72, 192, 0, 768, 769, 256};
  const uint8_t m = in.u8();
  if (m < 120) return 16;
  if (m < 250) return kDims[m % (sizeof kDims / sizeof kDims[0])];
  return in.dim();
}

int64_t tokens(fuzz::Input& in) {
  static constexpr int64_t kTokens[] = {2147483647, 0, 1, 3, -2, -100, 65536, kI64Max, kI64Min, 2147483648LL};
  const uint8_t m = in.u8();
  if (m < 100) return 2147483647;
  if (m < 240) return kTokens[m % (sizeof kTokens / sizeof kTokens[0])];
  return static_cast<int64_t>(in.u64());
}

struct Decoded {
  int entry = kScore;
  std::string layout = "BNSD";  // the shapes' layout
  bool tnd = false;
  int dtype = ACL_FLOAT;
  int64_t b = 1, n1 = 2, n2 = 1, s1 = 4, s2 = 4, d = 16, dv = 16;
  std::vector<int64_t> seqQ, seqKv;  // TND lengths
  int64_t tq = 0, tkv = 0;

  std::vector<int64_t> side(bool query, int64_t heads, int64_t dim) const {
    const int64_t s = query ? s1 : s2;
    if (tnd) return {query ? tq : tkv, heads, dim};
    if (layout == "BNSD") return {b, heads, s, dim};
    if (layout == "BSND") return {b, s, heads, dim};
    if (layout == "BSH") return {b, s, satMul(heads, dim)};
    return {s, b, satMul(heads, dim)};  // SBH
  }
  std::vector<int64_t> stats() const {
    return tnd ? std::vector<int64_t>{tq, n1, 8} : std::vector<int64_t>{b, n1, s1, 8};
  }
};

void decodeSizes(fuzz::Input& in, Decoded& c) {
  static const char* const kLayouts[] = {"BNSD", "BSND", "BSH", "SBH", "TND"};
  c.tnd = tndOnly(c.entry) || ((c.entry == kScoreV4 || c.entry == kGradV4) && in.oneIn(3));
  if (!c.tnd) c.layout = kLayouts[in.u8() % 4];
  if (c.tnd) c.layout = "TND";
  static constexpr int kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  c.dtype = kDtypes[in.u8() % 3];
  if (c.entry == kGradV4 && in.oneIn(16)) c.dtype = in.oneIn(2) ? ACL_FLOAT8_E5M2 : ACL_FLOAT8_E4M3FN;
  c.n2 = smallSize(in, 2, 1);
  const int64_t group = smallSize(in, 3, 1);
  c.n1 = c.n2 > 0 && group > 0 && c.n2 < 64 && group < 64 ? c.n2 * group : smallSize(in, 4, 0);
  c.d = headDim(in);
  c.dv = in.oneIn(6) ? headDim(in) : c.d;
  if (c.tnd) {
    const int64_t batches = in.u8() % 4 + (in.oneIn(16) ? 0 : 1);
    for (int64_t i = 0; i < batches; ++i) {
      c.seqQ.push_back(in.u8() % 12);
      c.seqKv.push_back(in.oneIn(3) ? c.seqQ.back() : in.u8() % 12);
      c.tq += c.seqQ.back();
      c.tkv += c.seqKv.back();
    }
    c.b = batches;
    c.s1 = c.s2 = 0;
    for (int64_t i = 0; i < batches; ++i) {
      c.s1 = std::max(c.s1, c.seqQ[static_cast<size_t>(i)]);
      c.s2 = std::max(c.s2, c.seqKv[static_cast<size_t>(i)]);
    }
  } else {
    c.b = smallSize(in, 3, 1);
    c.s1 = smallSize(in, 12, 1);
    c.s2 = in.oneIn(3) ? c.s1 : smallSize(in, 12, 1);
  }
}

std::vector<int64_t> cumulative(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> ends;
  int64_t sum = 0;
  for (int64_t n : lengths) ends.push_back(sum += n);
  return ends;
}

/** A small positive-ish value array (prefix, start indices). */
std::vector<int64_t> smallValues(fuzz::Input& in, int64_t count, int64_t bound) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < count && i < 8; ++i)
    v.push_back(bound > 0 ? in.u8() % (std::min<int64_t>(bound, 255) + 1) : 0);
  return v;
}

/**
 * keepProb near 0 (issue 27): below FLT_MIN as a float it is invalid (the kernels scale by 1 / float(keepProb)); the
 * doubles just under FLT_MIN that round to it as a float are valid.
 */
double tinyKeepProb(uint8_t m) {
  const double fltMin = FLT_MIN;
  static const double kTiny[] = {1e-300,
                                 1e-46,
                                 1e-40,
                                 fltMin,
                                 std::nextafter(FLT_MIN, 0.0f),  // the float neighbours
                                 std::nextafter(FLT_MIN, 1.0f),
                                 fltMin - std::ldexp(1.0, -151),   // rounds to FLT_MIN
                                 fltMin - std::ldexp(1.0, -150),   // a tie: rounds to FLT_MIN (even)
                                 fltMin - std::ldexp(0.75, -149),  // rounds to the denormal below
                                 std::numeric_limits<float>::denorm_min(),
                                 std::numeric_limits<double>::denorm_min(),
                                 1e-38,
                                 1.2e-38,
                                 DBL_MIN,
                                 -fltMin,
                                 std::ldexp(1.0, -140)};
  return kTiny[m % (sizeof kTiny / sizeof kTiny[0])];
}

/** A start index: small mostly; the int64 extremes and the edges of gradkit's [-2^61, 2^61] sometimes. */
int64_t startIndex(fuzz::Input& in) {
  const uint8_t m = in.u8();
  if (m < 200) return m % 8 - 2;
  constexpr int64_t kEdge = int64_t{1} << 61;
  static constexpr int64_t kHostile[] = {kI64Max,   kI64Min,    kEdge,     -kEdge,
                                         kEdge + 1, -kEdge - 1, kEdge * 2, kI64Max - 1};
  return kHostile[m % 8];
}

/** An array gradkit must refuse: an entry outside [-2^61, 2^61] (their differences would overflow int64). */
bool startOutOfRange(const aclIntArray* array, const std::vector<int64_t>& values) {
  constexpr int64_t kEdge = int64_t{1} << 61;
  if (array == nullptr) return false;
  return std::any_of(values.begin(), values.end(), [](int64_t v) { return v < -kEdge || v > kEdge; });
}

/** Tensors made here rather than by fuzz_common.h (the templates, stride-0 views), destroyed with the input. */
struct Owned {
  std::vector<aclTensor*> tensors;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    for (aclTensor* t : tensors) aclDestroyTensor(t);
  }
  aclTensor* keep(aclTensor* t) {
    if (t != nullptr) tensors.push_back(t);
    return t;
  }
};

/**
 * A view of `dims` whose strides are all 0, over one element of a fresh buffer: any number of elements (keys of 2^62
 * rows, a dropMask claiming 2^62 bytes) for one element of memory. Nothing of the harness walks it.
 */
aclTensor* strideZero(fuzz::Input& in, fuzz::World& world, Owned& owned, int dtype, const std::vector<int64_t>& dims,
                      fuzz::View* view) {
  const size_t elem = fuzz::elementSize(dtype);
  const int b = world.newBuffer(in, elem, false);
  if (b < 0) return nullptr;
  view->buffer = b;
  view->byteOffset = 0;
  view->offset = 0;
  view->dims = dims;
  view->strides.assign(dims.size(), 0);
  view->elemSize = elem;
  view->numel = 1;
  for (int64_t d : dims) view->numel = d < 0 ? -1 : satMul(view->numel, d);
  const int64_t storage = 1;
  aclDataType dt;
  std::memcpy(&dt, &dtype, sizeof dt);
  return owned.keep(aclCreateTensor(dims.data(), dims.size(), dt, view->strides.data(), 0, ACL_FORMAT_ND, &storage, 1,
                                    world.buffers[b].data));
}

/**
 * Fills an FP8 de-quant scale (FLOAT) with 1.0, or with a hostile value (NaN, +/-Inf, 1e20, ...) in every element
 * (m / 16 even) or in the first only. Issue 27: such scales must reach the outputs as NaN / Inf, not fail the stream.
 */
void fillScale(fuzz::World& world, const aclTensor* t, const fuzz::View& v, uint8_t m) {
  if (t == nullptr || v.buffer < 0 || v.elemSize != sizeof(float) || v.numel <= 0 ||
      v.numel > fuzz::World::kMaxRunNumel) {
    return;
  }
  static const float kValues[] = {1.0f,
                                  std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  1e20f,
                                  -1e20f,
                                  0.0f,
                                  -0.0f,
                                  FLT_MAX,
                                  1e-30f,
                                  std::numeric_limits<float>::denorm_min(),
                                  0.5f,
                                  -std::numeric_limits<float>::quiet_NaN(),
                                  1e38f,
                                  2.0f,
                                  65504.0f};
  const float hostile = kValues[m % 16];
  const bool firstOnly = (m / 16) % 2 == 1;
  fuzz::Buffer& buffer = world.buffers[v.buffer];
  std::vector<int64_t> idx(v.dims.size(), 0);
  for (int64_t n = 0; n < v.numel; ++n) {
    int64_t e = v.offset;
    for (size_t d = 0; d < v.dims.size(); ++d) e += idx[d] * v.strides[d];
    const size_t at = v.byteOffset + static_cast<size_t>(e) * sizeof(float);
    const float value = n == 0 || !firstOnly ? hostile : 1.0f;
    if (at + sizeof value <= buffer.size) std::memcpy(buffer.data + at, &value, sizeof value);
    for (size_t d = v.dims.size(); d-- > 0;) {
      if (++idx[d] < v.dims[d]) break;
      idx[d] = 0;
    }
  }
}

bool empty(const aclTensor* t, const fuzz::View& v) { return t == nullptr || v.numel == 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  // GRADKIT_FUZZ_TRACE=1: where the decoding of the tensors and of the dropMask choice starts (for make_seeds.py).
  static const bool trace = std::getenv("GRADKIT_FUZZ_TRACE") != nullptr;
  const auto at = [&](const char* what) {
    if (trace) std::fprintf(stderr, "fuzz: %s from byte %zu\n", what, size - in.remaining());
  };
  fuzz::World world;
  Decoded c;
  c.entry = in.u8() % kEntries;
  const uint8_t socByte = in.u8();
  const Soc soc = socByte < 230 ? Soc::Ascend950 : (socByte % 2 ? Soc::Ascend910B : Soc::Ascend910_93);
  gradkit::rt::setSocOverride(soc);
  decodeSizes(in, c);
  const bool backward = isBackward(c.entry);

  // Attributes.
  static const char* const kLayoutNames[] = {"BNSD", "BSND", "BSH", "SBH", "TND", "bnsd", "", "BSNDX", "NSD", "B"};
  const uint8_t layoutByte = in.u8();
  std::string layoutText = layoutByte < 220 ? c.layout : kLayoutNames[layoutByte % 10];
  const bool layoutNull = layoutByte == 0xFF;
  const uint8_t headByte = in.u8();
  const int64_t headNum = headByte < 220 ? c.n1 : (headByte < 240 ? c.n1 / 2 + 1 : in.anyInt64());
  const double scale = in.oneIn(8) ? in.prob() : 1.0 / std::sqrt(static_cast<double>(c.d > 0 ? c.d : 1));
  const uint8_t keepByte = in.u8();
  double keepProb = keepByte < 140 ? 1.0 : (keepByte < 200 ? 0.9 : 0.5);
  if (keepByte >= 220) keepProb = keepByte < 240 ? in.prob() : tinyKeepProb(keepByte);
  const bool philox = c.entry == kGradV4 || c.entry == kScoreV4;
  const int64_t seed = in.oneIn(4) ? in.anyInt64() : 2, offset = in.oneIn(4) ? in.anyInt64() : 0;
  const uint8_t sparseByte = in.u8();
  const int64_t sparseMode = sparseByte < 240 ? sparseByte % 9 : in.anyInt64();
  const int64_t preTokens = tokens(in), nextTokens = tokens(in);
  const uint8_t innerByte = in.u8();
  const int64_t innerPrecise = innerByte < 200 ? 0 : (innerByte < 240 ? innerByte % 3 : in.anyInt64());
  const uint8_t pseTypeByte = in.u8();
  const int64_t pseType = pseTypeByte < 240 ? pseTypeByte % 4 : in.anyInt64();
  const int64_t outDtype = in.oneIn(8) ? in.anyInt64() : in.u8() % 2;
  static const char* const kStatsLayouts[] = {"", "same_as_input", "bogus", "SAME_AS_INPUT"};
  const uint8_t statsByte = in.u8();
  std::string statsText = kStatsLayouts[statsByte % 4];
  const bool statsNull = statsByte >= 250;
  // What the optional tensors will be (decoded before any tensor, so that seeds set them in the first bytes).
  const uint8_t maskByte = in.u8();
  const int maskDtype = in.oneIn(2) ? ACL_BOOL : ACL_UINT8;
  const uint8_t shapeByte = in.u8();  // the template's shape: 200 one row short, 230 rank 3
  const uint8_t pseByte = in.u8();
  // FP8 (GradV4 only): attentionIn, the outputs and a pse table take outDtype's type (0 FLOAT16, 1 BF16), dy the fp8
  // one; how each de-quant scale (q, k, v, dy) is filled, and whether dScaleO is given.
  const bool fp8 = isFp8(c.dtype);
  const int outType = fp8 ? (outDtype == 1 ? ACL_BF16 : ACL_FLOAT16) : c.dtype;
  uint8_t scaleFill[4] = {0, 0, 0, 0};
  bool scaleOGiven = false;
  if (fp8) {
    for (uint8_t& f : scaleFill) f = in.u8();
    scaleOGiven = in.oneIn(2);
  }

  // Int arrays.
  aclIntArray* seqQ = nullptr;
  aclIntArray* seqKv = nullptr;
  if (c.tnd || in.oneIn(16)) {
    seqQ = world.intArray(in, cumulative(c.seqQ));
    seqKv = world.intArray(in, cumulative(c.seqKv));
  }
  aclIntArray* prefix = nullptr;
  if (sparseMode == 6 || sparseMode == 5 || in.oneIn(16)) prefix = world.intArray(in, smallValues(in, c.b, c.s2));
  aclIntArray* qStart = nullptr;
  aclIntArray* kvStart = nullptr;
  std::vector<int64_t> qStartValues, kvStartValues;  // what the arrays hold (intArray may mutate them)
  if (in.oneIn(6)) {
    qStart = world.intArray(in, {startIndex(in)}, &qStartValues);
    kvStart = world.intArray(in, {startIndex(in)}, &kvStartValues);
  }

  // Tensors: inputs first (an output may alias an input's buffer: fuzz_common.h), then the outputs.
  fuzz::View vq, vk, vv, vdy, vmask, vpse, vdrop, vmax, vsum, vin, vo, vdq, vdk, vdv, vdpse;
  Owned owned;
  at("q");
  aclTensor* q = world.tensor(in, c.dtype, c.side(true, c.n1, c.d), &vq);
  // A hostile S2 (4097 .. INT64_MAX rows): stride-0 keys and values, so that B * N1 * S1 * S2 can pass 2^62 (dropout
  // over that many scores must fail). Such a call is planned, never run.
  const bool hugeKeys = !c.tnd && c.s2 > 4096;
  aclTensor* k = hugeKeys ? strideZero(in, world, owned, c.dtype, c.side(false, c.n2, c.d), &vk)
                          : world.tensor(in, c.dtype, c.side(false, c.n2, c.d), &vk);
  aclTensor* v = hugeKeys ? strideZero(in, world, owned, c.dtype, c.side(false, c.n2, c.dv), &vv)
                          : world.tensor(in, c.dtype, c.side(false, c.n2, c.dv), &vv);
  if (hugeKeys) world.tooBigToRun = true;
  aclTensor* dy = backward ? world.tensor(in, c.dtype, c.side(true, c.n1, c.dv), &vdy) : nullptr;
  // FP8 de-quant scales: FLOAT [B, N1, ceil(S1/128), 1] for q, dy (and o), [B, N2, ceil(S2/128), 1] for k, v.
  fuzz::View vsq, vsk, vsv, vsdy, vso;
  aclTensor *scaleQ = nullptr, *scaleK = nullptr, *scaleV = nullptr, *scaleDy = nullptr, *scaleO = nullptr;
  if (fp8) {
    const auto blocks = [](int64_t s) { return s > 0 ? s / 128 + (s % 128 != 0 ? 1 : 0) : s; };
    const std::vector<int64_t> qScales = {c.b, c.n1, blocks(c.s1), 1}, kScales = {c.b, c.n2, blocks(c.s2), 1};
    scaleQ = world.tensor(in, ACL_FLOAT, qScales, &vsq);
    scaleK = world.tensor(in, ACL_FLOAT, kScales, &vsk);
    scaleV = world.tensor(in, ACL_FLOAT, kScales, &vsv);
    scaleDy = world.tensor(in, ACL_FLOAT, qScales, &vsdy);
    if (scaleOGiven) scaleO = world.tensor(in, ACL_FLOAT, qScales, &vso);
    fillScale(world, scaleQ, vsq, scaleFill[0]);
    fillScale(world, scaleK, vsk, scaleFill[1]);
    fillScale(world, scaleV, vsv, scaleFill[2]);
    fillScale(world, scaleDy, vsdy, scaleFill[3]);
  }

  aclTensor* mask = nullptr;
  switch (maskByte % 8) {
    case 1:
      mask = world.tensor(in, maskDtype, {c.s1, c.s2}, &vmask);
      break;
    case 2:
      mask = world.tensor(in, maskDtype, {1, 1, c.s1, c.s2}, &vmask);
      break;
    case 3:
      mask = world.tensor(in, maskDtype, {c.b, 1, c.s1, c.s2}, &vmask);
      break;
    case 4:
      mask = world.tensor(in, maskDtype, {c.b, c.n1, c.s1, c.s2}, &vmask);
      break;
    case 5:
    case 6: {  // the templates over their own exact memory (too large for fuzz_common.h's 4 MiB)
      const int64_t rows = maskByte % 8 == 6 ? kTemplateRows : 2048;
      std::vector<int64_t> dims = {rows, kTemplateCols};
      if (shapeByte >= 200) dims = {rows - 1, kTemplateCols};
      if (shapeByte >= 230) dims = {1, rows, kTemplateCols};
      const int64_t storage[1] = {kTemplateRows * kTemplateCols};
      aclDataType dt;
      std::memcpy(&dt, &maskDtype, sizeof dt);
      mask = owned.keep(
          aclCreateTensor(dims.data(), dims.size(), dt, nullptr, 0, ACL_FORMAT_ND, storage, 1, templateBytes()));
      break;
    }
    case 7:
      mask = world.tensor(in, maskDtype, {c.s1, c.s2}, &vmask);
      break;
    default:
      break;
  }

  aclTensor* pse = nullptr;
  const int pseDtype = outType;
  std::vector<int64_t> pseShape;
  switch (pseByte % 10) {
    case 1:
      pseShape = {c.b, c.n1, c.s1, c.s2};
      break;
    case 2:
      pseShape = {c.b, c.n1, 1, c.s2};
      break;
    case 3:
      pseShape = {1, c.n1, c.s1, c.s2};
      break;
    case 4:
      pseShape = {c.b, c.n1, 1024, c.s2};
      break;
    case 5:
      pseShape = {1, c.n1, 1024, c.s2};
      break;
    case 6:
      pseShape = {c.n1};
      break;
    case 7:
      pseShape = {c.b, c.n1};
      break;
    default:
      break;
  }
  if (!pseShape.empty()) pse = world.tensor(in, pseShape.size() <= 2 ? ACL_FLOAT : pseDtype, pseShape, &vpse);

  aclTensor* drop = nullptr;
  bool strideZeroDrop = false;  // a stride-0 dropMask claiming far more bytes than the kernels read
  if (static_cast<float>(keepProb) < 1.0f && !(philox && !in.oneIn(4))) {
    int64_t bits = satMul(satMul(c.b, c.n1), satMul(c.s1, c.s2));
    if (c.tnd) {
      bits = 0;
      for (size_t i = 0; i < c.seqQ.size(); ++i) {
        if (__builtin_add_overflow(bits, satMul(c.n1, c.seqQ[i] * c.seqKv[i]), &bits)) bits = kI64Max;
      }
    }
    at("dropMask choice");
    const uint8_t dm = in.u8();  // 7 (mod 8): one byte short; 0xF8 .. 0xFE: stride 0
    if (dm >= 0xF8 && dm != 0xFF) {
      static constexpr int64_t kClaims[] = {int64_t{1} << 40, int64_t{1} << 62, kI64Max,         int64_t{1} << 31,
                                            int64_t{1} << 33, int64_t{1} << 20, int64_t{1} << 50};
      drop = strideZero(in, world, owned, ACL_UINT8, {kClaims[dm - 0xF8]}, &vdrop);
      strideZeroDrop = drop != nullptr;
    } else {
      const int64_t bytes = bits > 0 && bits < (int64_t{1} << 30) ? (bits + 7) / 8 - (dm % 8 == 7 ? 1 : 0) : 1;
      drop = world.tensor(in, ACL_UINT8, {bytes}, &vdrop);
    }
  }

  aclTensor* max = nullptr;
  aclTensor* sum = nullptr;
  aclTensor* attentionIn = nullptr;
  if (backward) {
    max = world.tensor(in, ACL_FLOAT, c.stats(), &vmax);
    sum = world.tensor(in, ACL_FLOAT, c.stats(), &vsum);
    attentionIn = world.tensor(in, pseDtype, c.side(true, c.n1, c.dv), &vin);
  }

  // Outputs.
  std::vector<fuzz::View> outputs;
  aclTensor* out = nullptr;
  aclTensor *dq = nullptr, *dk = nullptr, *dv = nullptr, *dpse = nullptr;
  if (!backward) {
    max = world.tensor(in, ACL_FLOAT, c.stats(), &vmax);
    sum = world.tensor(in, ACL_FLOAT, c.stats(), &vsum);
    out = world.tensor(in, c.dtype, c.side(true, c.n1, c.dv), &vo);
    if (max) outputs.push_back(vmax);
    if (sum) outputs.push_back(vsum);
    if (out) outputs.push_back(vo);
  } else {
    dq = world.tensor(in, outType, c.side(true, c.n1, c.d), &vdq);
    dk = world.tensor(in, outType, c.side(false, c.n2, c.d), &vdk);
    dv = world.tensor(in, outType, c.side(false, c.n2, c.dv), &vdv);
    if (!pseShape.empty() && in.oneIn(4)) dpse = world.tensor(in, pseDtype, pseShape, &vdpse);
    if (dq) outputs.push_back(vdq);
    if (dk) outputs.push_back(vdk);
    if (dv) outputs.push_back(vdv);
    if (dpse) outputs.push_back(vdpse);
  }

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  uint64_t* sizeArg = nulls == 0xF1 ? nullptr : &workspaceSize;
  aclOpExecutor** executorArg = nulls == 0xF2 ? nullptr : &executor;
  char* layoutArg = layoutNull ? nullptr : &layoutText[0];
  char* statsArg = statsNull ? nullptr : &statsText[0];

  // The rules this target knows by itself.
  bool mustFail = sizeArg == nullptr || executorArg == nullptr || !q || !k || !v;
  if (isV4(c.entry) && soc != Soc::Ascend950) mustFail = true;
  // keepProb in (0, 1] and, as a float, at least FLT_MIN (the kernels scale by 1 / float(keepProb)).
  const bool keepValid = keepProb > 0.0 && keepProb <= 1.0 && static_cast<float>(keepProb) >= FLT_MIN;
  // Modes 2..8 mask through attenMask: without one the call is refused (161001), never computed as full attention.
  const bool modeWithoutMask = mask == nullptr && sparseMode >= 2 && sparseMode <= 8;
  const bool badStart =
      takesStartIdx(c.entry) && (startOutOfRange(qStart, qStartValues) || startOutOfRange(kvStart, kvStartValues));
  // Dropout over more than 2^62 scores (one keep bit each), judged where gradkit's sizes are the decoded ones: q as
  // decoded, the layout and headNum as the shapes say, the stride-0 keys of a hostile S2.
  bool hugeDropout = false;
  if (hugeKeys && q != nullptr && vq.dims == c.side(true, c.n1, c.d) && !layoutNull && layoutText == c.layout &&
      headNum == c.n1 && static_cast<float>(keepProb) < 1.0f && c.b >= 0 && c.n1 >= 0 && c.s1 >= 0) {
    const auto mul = [](uint64_t a, uint64_t b) {  // saturating, as gradkit counts
      uint64_t r;
      return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
    };
    const uint64_t scores = mul(mul(mul(c.b, c.n1), c.s1), c.s2);
    hugeDropout = scores > (uint64_t{1} << 62);
  }
  const bool ruleBroken = !keepValid || modeWithoutMask || badStart || hugeDropout;
  if (!backward) {
    mustFail = mustFail || !max || !sum || !out || layoutNull || ruleBroken;
  } else {
    mustFail = mustFail || !dy || !attentionIn || !dq || !dk || !dv;
    const bool nothingToCompute = empty(dq, vdq) && empty(dk, vdk) && empty(dv, vdv) && empty(dpse, vdpse);
    if (!nothingToCompute) mustFail = mustFail || ruleBroken || !max || !sum;
  }

  if (trace) std::fprintf(stderr, "fuzz: model: %s\n", mustFail ? "must fail" : "may succeed");
  world.snapshot();
  fuzz::RunFn run = nullptr;
  const int64_t pre = preTokens, next = nextTokens;
  // The first phase, with the dropMask given (a stride-0 one is planned twice: below).
  const auto plan = [&](const aclTensor* dropArg, uint64_t* sizeOut, aclOpExecutor** executorOut) {
    aclnnStatus status = ACLNN_SUCCESS;
    switch (c.entry) {
      case kScore:
        status = aclnnFlashAttentionScoreGetWorkspaceSize(q, k, v, pse, dropArg, nullptr, mask, prefix, scale, keepProb,
                                                          pre, next, headNum, layoutArg, innerPrecise, sparseMode, max,
                                                          sum, nullptr, out, sizeOut, executorOut);
        run = aclnnFlashAttentionScore;
        break;
      case kScoreV2:
        status = aclnnFlashAttentionScoreV2GetWorkspaceSize(
            q, k, v, pse, dropArg, nullptr, mask, prefix, qStart, kvStart, scale, keepProb, pre, next, headNum,
            layoutArg, innerPrecise, sparseMode, pseType, max, sum, nullptr, out, sizeOut, executorOut);
        run = aclnnFlashAttentionScoreV2;
        break;
      case kScoreV4:
        status = aclnnFlashAttentionScoreV4GetWorkspaceSize(
            q, k, v, pse, dropArg, nullptr, mask, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, prefix, seqQ,
            seqKv, qStart, kvStart, scale, keepProb, pre, next, headNum, layoutArg, innerPrecise, sparseMode, outDtype,
            pseType, statsArg, seed, offset, max, sum, nullptr, out, sizeOut, executorOut);
        run = aclnnFlashAttentionScoreV4;
        break;
      case kVarLen:
        status = aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
            q, k, v, pse, dropArg, nullptr, mask, prefix, seqQ, seqKv, scale, keepProb, pre, next, headNum, layoutArg,
            innerPrecise, sparseMode, max, sum, nullptr, out, sizeOut, executorOut);
        run = aclnnFlashAttentionVarLenScore;
        break;
      case kVarLenV2:
        status = aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
            q, k, v, pse, dropArg, nullptr, mask, prefix, seqQ, seqKv, qStart, kvStart, scale, keepProb, pre, next,
            headNum, layoutArg, innerPrecise, sparseMode, pseType, max, sum, nullptr, out, sizeOut, executorOut);
        run = aclnnFlashAttentionVarLenScoreV2;
        break;
      case kVarLenV4:
        status = aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
            q, k, v, pse, dropArg, nullptr, mask, prefix, seqQ, seqKv, scale, keepProb, pre, next, headNum, layoutArg,
            innerPrecise, sparseMode, statsArg, max, sum, nullptr, out, sizeOut, executorOut);
        run = aclnnFlashAttentionVarLenScoreV4;
        break;
      case kGrad:
        status = aclnnFlashAttentionScoreGradGetWorkspaceSize(
            q, k, v, dy, pse, dropArg, nullptr, mask, max, sum, nullptr, attentionIn, prefix, scale, keepProb, pre,
            next, headNum, layoutArg, innerPrecise, sparseMode, dq, dk, dv, dpse, sizeOut, executorOut);
        run = aclnnFlashAttentionScoreGrad;
        break;
      case kGradV2:
        status = aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
            q, k, v, dy, pse, dropArg, nullptr, mask, max, sum, nullptr, attentionIn, prefix, qStart, kvStart, scale,
            keepProb, pre, next, headNum, layoutArg, innerPrecise, sparseMode, pseType, dq, dk, dv, dpse, sizeOut,
            executorOut);
        run = aclnnFlashAttentionScoreGradV2;
        break;
      case kGradV4:
        status = aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
            q, k, v, dy, pse, dropArg, nullptr, mask, max, sum, nullptr, attentionIn, nullptr, nullptr, nullptr, scaleQ,
            scaleK, scaleV, scaleDy, scaleO, prefix, seqQ, seqKv, qStart, kvStart, scale, keepProb, pre, next, headNum,
            layoutArg, statsArg, innerPrecise, sparseMode, pseType, seed, offset, outDtype, dq, dk, dv, nullptr,
            nullptr, dpse, nullptr, sizeOut, executorOut);
        run = aclnnFlashAttentionScoreGradV4;
        break;
      case kUnpad:
        status = aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
            q, k, v, dy, pse, dropArg, nullptr, mask, max, sum, nullptr, attentionIn, prefix, seqQ, seqKv, scale,
            keepProb, pre, next, headNum, layoutArg, innerPrecise, sparseMode, dq, dk, dv, dpse, sizeOut, executorOut);
        run = aclnnFlashAttentionUnpaddingScoreGrad;
        break;
      case kUnpadV2:
        status = aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
            q, k, v, dy, pse, dropArg, nullptr, mask, max, sum, nullptr, attentionIn, prefix, seqQ, seqKv, qStart,
            kvStart, scale, keepProb, pre, next, headNum, layoutArg, innerPrecise, sparseMode, pseType, dq, dk, dv,
            dpse, sizeOut, executorOut);
        run = aclnnFlashAttentionUnpaddingScoreGradV2;
        break;
      default:  // kUnpadV4
        status = aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
            q, k, v, dy, pse, dropArg, nullptr, mask, max, sum, nullptr, attentionIn, prefix, seqQ, seqKv, scale,
            keepProb, pre, next, headNum, layoutArg, innerPrecise, sparseMode, dq, dk, dv, dpse, statsArg, sizeOut,
            executorOut);
        run = aclnnFlashAttentionUnpaddingScoreGradV4;
        break;
    }
    return status;
  };
  const aclnnStatus status = plan(drop, sizeArg, executorArg);
  // A stride-0 dropMask is staged for the ceil(scores / 8) bytes the kernels read, not for the bytes it claims: the
  // same call with a mask claiming another (still sufficient) size must plan the same workspace.
  if (status == ACLNN_SUCCESS && strideZeroDrop) {
    const int64_t claim = vdrop.dims[0];
    const int64_t twinDims[1] = {claim < (int64_t{1} << 62) ? claim * 2 : claim / 2};
    const int64_t zero[1] = {0}, storage[1] = {1};
    aclTensor* twin = owned.keep(
        aclCreateTensor(twinDims, 1, ACL_UINT8, zero, 0, ACL_FORMAT_ND, storage, 1, world.buffers[vdrop.buffer].data));
    uint64_t twinSize = 0;
    aclOpExecutor* twinExecutor = nullptr;
    const aclnnStatus twinStatus = plan(twin, &twinSize, &twinExecutor);
    if (twinStatus == ACLNN_SUCCESS) aclDestroyAclOpExecutor(twinExecutor);
    if (twinStatus != ACLNN_SUCCESS || twinSize != workspaceSize) {
      fuzz::finding("the workspace depends on the size a stride-0 dropMask claims");
    }
  }
  fuzz::finish(world, status, workspaceSize, executor, run, outputs, mustFail);
  return 0;
}
