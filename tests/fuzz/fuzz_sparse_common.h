// Shared decoding of the sparse attention family's fuzz targets (fuzz_sparse_flash_mla.cpp,
// fuzz_lightning_indexer.cpp; tests/fuzz/README.md): tensors that remember their decoded descriptor and dtype,
// INT32 contents (prefix sums, used lengths, residuals, block tables, index lists) written into the views as
// created, float contents (finite, or the fill's raw bytes with NaN / Inf), the documented-status rule and the
// finiteness check of what a successful run wrote.
#ifndef GRADKIT_TESTS_FUZZ_FUZZ_SPARSE_COMMON_H_
#define GRADKIT_TESTS_FUZZ_FUZZ_SPARSE_COMMON_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "fuzz_common.h"
#include "runtime/profile.h"

namespace fuzz::sparse {

/** One decoded tensor argument: null when absent or rejected by aclCreateTensor. */
struct Arg {
  aclTensor* t = nullptr;
  View v;
  int dtype = -1;
};

/** Views with more elements than this get no contents written and are not checked (they are not run either). */
constexpr int64_t kFillNumel = World::kMaxRunNumel;

/** A tensor with fuzz_common.h's hostile descriptor; absent (null, nothing decoded) when !present. */
inline Arg make(World& world, Input& in, int dtype, const std::vector<int64_t>& shape, bool present = true) {
  Arg a;
  if (!present) return a;
  a.t = world.tensor(in, dtype, shape, &a.v);
  if (a.t != nullptr) {
    aclDataType dt;
    aclGetDataType(a.t, &dt);
    a.dtype = static_cast<int>(dt);
  }
  return a;
}

/** Calls f(byte position in the buffer) for every element of the view, row-major. */
template <class F>
void forEachElement(const View& v, F&& f) {
  if (v.numel <= 0 || v.numel > kFillNumel) return;
  const size_t rank = v.dims.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0; n < v.numel; ++n) {
    int64_t e = v.offset;
    for (size_t d = 0; d < rank; ++d) e += idx[d] * v.strides[d];
    f(v.byteOffset + static_cast<size_t>(e) * v.elemSize);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < v.dims[d]) break;
      idx[d] = 0;
    }
  }
}

inline bool writable(const World& world, const Arg& a) {
  return a.t != nullptr && a.v.buffer >= 0 && a.v.numel > 0 && a.v.numel <= kFillNumel &&
         a.v.byteOffset < world.buffers[a.v.buffer].size;
}

/** Writes `values` (row-major, repeated when the view has more elements) into an INT32 view. */
inline void writeInt32(World& world, const Arg& a, const std::vector<int64_t>& values) {
  if (!writable(world, a) || values.empty() || a.dtype != ACL_INT32) return;
  uint8_t* base = world.buffers[a.v.buffer].data;
  size_t k = 0;
  forEachElement(a.v, [&](size_t at) {
    const auto value = static_cast<int32_t>(values[k++ % values.size()]);
    std::memcpy(base + at, &value, sizeof value);
  });
}

inline uint16_t toHalfBits(float f) {  // exact for the fill's values (multiples of 1/64 in [-2, 2])
  if (f == 0.0f) return std::signbit(f) ? 0x8000 : 0;
  const uint16_t sign = f < 0 ? 0x8000 : 0;
  float m = std::fabs(f);
  int e = 0;
  while (m >= 2.0f) m /= 2, ++e;
  while (m < 1.0f) m *= 2, --e;
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | static_cast<uint16_t>((m - 1.0f) * 1024.0f));
}

inline double halfToDouble(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : s * std::numeric_limits<double>::infinity();
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}

/** Element at byte position `at` of a FLOAT / FLOAT16 / BF16 tensor as a double. */
inline double readFloat(const uint8_t* p, int dtype) {
  if (dtype == ACL_FLOAT) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == ACL_FLOAT16) return halfToDouble(h);
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

inline bool floating(int dtype) { return dtype == ACL_FLOAT || dtype == ACL_FLOAT16 || dtype == ACL_BF16; }

/**
 * Fills a float tensor: mostly small finite values (multiples of 1/64 in [-2, 2], exact in every float dtype);
 * sometimes one NaN / Inf in them, sometimes the fill's raw bytes. `scale` (<= 1) shrinks the values.
 */
inline void fillFloat(World& world, Input& in, const Arg& a) {
  const uint8_t mode = in.u8();
  if (mode >= 240 || !writable(world, a) || !floating(a.dtype)) return;  // keep the raw bytes
  uint32_t x = in.u16() | 1u;
  uint8_t* base = world.buffers[a.v.buffer].data;
  const int64_t special = mode >= 228 ? static_cast<int64_t>(in.u16()) % a.v.numel : -1;
  int64_t n = 0;
  forEachElement(a.v, [&](size_t at) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    float f = static_cast<float>(static_cast<int>(x % 257) - 128) / 64.0f;
    if (n++ == special)
      f = mode % 2 ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity();
    if (a.dtype == ACL_FLOAT) {
      std::memcpy(base + at, &f, 4);
    } else {
      uint16_t h;
      if (a.dtype == ACL_FLOAT16) {
        h = std::isnan(f) ? 0x7E00 : std::isinf(f) ? 0xFC00 : toHalfBits(f);
      } else {
        uint32_t w;
        std::memcpy(&w, &f, 4);
        h = static_cast<uint16_t>(w >> 16);  // exact: the values have at most 8 significant bits
      }
      std::memcpy(base + at, &h, 2);
    }
  });
}

/** True when every element of the float view is finite (a view that cannot be read counts as finite). */
inline bool allFinite(const World& world, const Arg& a, bool allowNegInf = false) {
  if (!writable(world, a) || !floating(a.dtype)) return true;
  const uint8_t* base = world.buffers[a.v.buffer].data;
  bool ok = true;
  forEachElement(a.v, [&](size_t at) {
    const double d = readFloat(base + at, a.dtype);
    if (std::isnan(d) || (std::isinf(d) && !(allowNegInf && d < 0))) ok = false;
  });
  return ok;
}

/** The largest magnitude in a float view (0 when absent or unreadable). */
inline double maxAbs(const World& world, const Arg& a) {
  if (!writable(world, a) || !floating(a.dtype)) return 0;
  const uint8_t* base = world.buffers[a.v.buffer].data;
  double m = 0;
  forEachElement(a.v, [&](size_t at) { m = std::max(m, std::fabs(readFloat(base + at, a.dtype))); });
  return m;
}

/** INT32 values of a view as they lie in memory (empty when unreadable). */
inline std::vector<int64_t> readInt32(const World& world, const Arg& a) {
  std::vector<int64_t> out;
  if (!writable(world, a) || a.dtype != ACL_INT32) return out;
  const uint8_t* base = world.buffers[a.v.buffer].data;
  forEachElement(a.v, [&](size_t at) {
    int32_t v;
    std::memcpy(&v, base + at, 4);
    out.push_back(v);
  });
  return out;
}

/** A status must be success or a documented 1610xx / 5610xx code with a message, and not a broken invariant. */
inline void checkStatus(aclnnStatus status) {
  if (status == ACLNN_SUCCESS) return;
  FUZZ_REQUIRE((status >= 161000 && status < 162000) || (status >= 561000 && status < 562000),
               "GetWorkspaceSize returned an undocumented status");
  const char* msg = aclGetRecentErrMsg();  // reading it clears it: fuzz::finish's trace shows it empty
  FUZZ_REQUIRE(msg != nullptr && msg[0] != '\0', "a failed GetWorkspaceSize left no aclGetRecentErrMsg()");
  static const bool trace = std::getenv("GRADKIT_FUZZ_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "fuzz: %d: %s\n", status, msg);
  // 561000 "planning failed: ..." is a plan's invariant (std::logic_error) the checks should have made true; an out of
  // memory 561000 is not a finding.
  FUZZ_REQUIRE(std::strstr(msg, "planning failed") == nullptr, "a plan's invariant failed after the checks passed");
}

/** Whether fuzz::finish ran the second phase for this status and size. */
inline bool ran(const World& world, aclnnStatus status, uint64_t workspaceSize) {
  return status == ACLNN_SUCCESS && !world.tooBigToRun && workspaceSize <= World::kMaxBytes;
}

inline gradkit::rt::Soc pickSoc(Input& in) {
  const uint8_t m = in.u8();
  if (m < 210) return gradkit::rt::Soc::Ascend950;
  return m % 2 ? gradkit::rt::Soc::Ascend910B : gradkit::rt::Soc::Ascend910_93;
}

/** The layout text passed: the decoded one mostly; sometimes another, lower case, empty, unknown or null. */
inline char* layoutText(Input& in, const char* decoded, std::vector<std::vector<char>>& keep) {
  const uint8_t m = in.u8();
  static const char* kOthers[] = {"BSND", "TND", "PA_BBND", "bsnd", "", "BNSD", "TND ", "PA_BBND\x01", "BSH"};
  const char* text = decoded;
  if (m >= 230) {
    if (m >= 250) return nullptr;
    text = kOthers[m % (sizeof kOthers / sizeof kOthers[0])];
  }
  keep.emplace_back(text, text + std::strlen(text) + 1);
  return keep.back().data();
}

/** An INT32 value kept mostly as decoded; sometimes hostile. */
inline int64_t hostileInt32(Input& in, int64_t value) {
  const uint8_t m = in.u8();
  if (m < 224) return value;
  const int64_t kOdd[] = {
      -1,      value + 1, value - 1,  std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(),
      1 << 20, -2,        value + 100};
  return kOdd[m % 8];
}

/** An int64 attribute kept mostly as decoded; sometimes hostile. */
inline int64_t hostileAttr(Input& in, int64_t value) {
  const uint8_t m = in.u8();
  if (m < 236) return value;
  static constexpr int64_t kOdd[] = {-1,
                                     0,
                                     std::numeric_limits<int32_t>::max(),
                                     int64_t{1} << 31,
                                     std::numeric_limits<int64_t>::max(),
                                     std::numeric_limits<int64_t>::min(),
                                     -2,
                                     1 << 24,
                                     1 << 20,
                                     129,
                                     65};
  return kOdd[m % (sizeof kOdd / sizeof kOdd[0])];
}

/** Prefix sums of `lengths` (0 first), one entry sometimes hostile (negative, decreasing, past the rows). */
inline std::vector<int64_t> prefixSums(Input& in, const std::vector<int64_t>& lengths) {
  std::vector<int64_t> cu{0};
  for (int64_t l : lengths) cu.push_back(cu.back() + l);
  if (in.oneIn(8)) {
    const size_t at = in.u8() % cu.size();
    const int64_t old = cu[at];
    cu[at] = hostileInt32(in, old);
    if (cu[at] == old) cu[at] = at == 0 ? 1 : old - 1;  // at least a decreasing step
  }
  return cu;
}

/** Used lengths: all, fewer, or hostile per batch. */
inline std::vector<int64_t> usedLengths(Input& in, const std::vector<int64_t>& lengths) {
  std::vector<int64_t> used;
  const bool fewer = in.oneIn(3);
  for (int64_t l : lengths) used.push_back(hostileInt32(in, fewer ? in.u8() % (l + 1) : l));
  return used;
}

/** An index list entry for a batch of `visible` keys: mostly in [0, visible] (duplicates), -1, or hostile. */
inline int64_t indexEntry(Input& in, int64_t visible) {
  const uint8_t m = in.u8();
  if (m < 200) return visible > 0 ? m % (visible + 1) : m % 2;
  if (m < 230) return -1;
  static constexpr int64_t kOdd[] = {
      std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), -2, 1 << 20, 4096, 129};
  return kOdd[m % 6];
}

}  // namespace fuzz::sparse

#endif  // GRADKIT_TESTS_FUZZ_FUZZ_SPARSE_COMMON_H_
