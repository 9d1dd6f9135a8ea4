// libFuzzer target: the two KV-compressor entry points (tests/fuzz/README.md). The first byte picks
// aclnnCompressor (forward, with its in/out state cache and block table) or aclnnCompressorGrad; the next ones the
// emulated SoC, the layout (BSH / TH), the sizes (B, S or T, H, D = wkv.dim0 / coff, coff, cmpRatio, cacheMode,
// block_size, block_num, stateCacheStrideDim0, gradEnabled; valid, edge and hostile values, and batch counts up to
// 2^63 carried by stride-0 int32 tensors), the values of the int32 tensors (cu_seqlens, seqused, start_pos, the block
// table: valid ones, then hostile mutations), which optional tensors are given; then every tensor is decoded with
// hostile descriptors (fuzz_common.h), and an output may be an earlier tensor itself. Last (issue 27) the forward
// picks stateCacheStrideDim0 against the storage the cache declares (just inside it, just past it, INT32_MAX, ...),
// and sometimes swaps the paged block table for a stride-0 one of 2^20 .. 2^40 columns over 4 bytes.
//
// Besides fuzz_common.h's oracle, the target holds its own model of the rules gradkit decided
// (src/ops/compressor/compressor_check.cpp, compressor_fwd_check_values.cpp, compressor_fwd_state_cache.h,
// compressor_grad_check.cpp, compressor_grad_check_values.cpp; spec compressor.md 3.1, 5.2-5.4), computed from the
// descriptors aclCreateTensor accepted and the int32 values as they lie in memory at call time: a call the model
// finds invalid must fail (a cache whose strided blocks leave its declared storage, a table wider than
// ceil(2^31 / block_size) columns included), and a call it finds valid must succeed unless the model is unsure (an
// output whose hull meets another tensor's without a shared byte, an output that is not dense-or-gapped, a view too
// big to run, more batches than the model reads).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_compressor.h"
#include "aclnnop/aclnn_compressor_grad.h"
#include "fuzz_common.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace {

using gradkit::rt::Soc;

constexpr int64_t kI32Max = INT32_MAX;
constexpr int64_t kI32Min = INT32_MIN;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
// Views up to this many elements are run (fuzz_common.h's own cap, 2^18, would never run a D = 512 weight).
constexpr int64_t kRunNumel = int64_t{1} << 20;
// The model reads the per-batch values up to this B; beyond, it only judges the rules that need no value.
constexpr int64_t kModelBatches = int64_t{1} << 16;
// Per-batch int32 tensors with more values than this are stride-0 views of a single value.
constexpr int64_t kBroadcastAbove = 4096;
// Findings 7-9 (README.md), stepped around while they stand: a call whose batch count (TH: cuSeqlens.dim0 - 1,
// carried by a stride-0 view; BSH: x.dim0 of an empty x) exceeds this, or a BSH x whose S is within 256 of INT64_MAX,
// is not made.
constexpr int64_t kMaxBatch = int64_t{1} << 24;  // gradkit's batch limit (kCompressorMaxBatch)
// Cache blocks the decoder asks for at most (bytes), so that the weights still fit fuzz_common.h's 4 MiB.
constexpr int64_t kCacheBytes = int64_t{1} << 20;

int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kI64Max : r;
}
int64_t clampI64(__int128 v) {
  if (v > kI64Max) return kI64Max;
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}
int64_t ceilDiv(int64_t a, int64_t b) { return clampI64((static_cast<__int128>(a) + b - 1) / b); }

bool privateFormat(int f) { return f == 3 || f == 4 || f == 12 || f == 29 || f == 32 || f == 33; }
bool ioDtype(int d) { return d == ACL_BF16 || d == ACL_FLOAT16; }
bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The current input's length (for the trace's byte positions).
size_t gInputSize = 0;

// ---- Arguments ------------------------------------------------------------------------------------------------

// One tensor argument, as created, with what the model needs to judge it.
struct Arg {
  const char* name = "";
  aclTensor* t = nullptr;
  fuzz::View v;
  bool output = false;
  int dtype = -1;
  int format = -1;
  std::vector<int64_t> shape;  // what the decoding asked for (before fuzz_common.h's mutations)
  int intendedDtype = -1;
  bool cheap = false;  // a stride-0 view nothing walks element by element (a wide table): it does not stop the run

  int64_t rank() const { return static_cast<int64_t>(v.dims.size()); }
  bool empty() const { return v.numel == 0; }
};

// The element byte positions of a view inside its buffer.
template <typename F>
void forEachElement(const fuzz::View& v, F f) {
  const size_t rank = v.dims.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < v.numel; ++k) {
    int64_t e = v.offset;
    for (size_t d = 0; d < rank; ++d) e += idx[d] * v.strides[d];
    f(v.byteOffset + static_cast<size_t>(e) * v.elemSize);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < v.dims[d]) break;
      idx[d] = 0;
    }
  }
}

// [first, last] bytes of a view's hull in its buffer (what gradkit's overlap rules compare); the view has elements.
std::pair<__int128, __int128> hull(const fuzz::View& v) {
  __int128 span = 0;
  for (size_t d = 0; d < v.dims.size(); ++d) span += static_cast<__int128>(v.dims[d] - 1) * v.strides[d];
  const __int128 first = static_cast<__int128>(v.byteOffset) + static_cast<__int128>(v.offset) * v.elemSize;
  return {first, first + span * v.elemSize + v.elemSize - 1};
}

// gradkit's conservative rule for outputs (dense-or-gapped layouts), used only to decide "must succeed".
bool denseOrGapped(const fuzz::View& v) {
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (size_t d = 0; d < v.dims.size(); ++d) {
    if (v.dims[d] > 1) dims.emplace_back(v.strides[d], v.dims[d]);
  }
  std::sort(dims.begin(), dims.end());
  __int128 spanned = 0;
  for (const auto& [stride, size] : dims) {
    if (stride <= spanned) return false;
    spanned += static_cast<__int128>(stride) * (size - 1);
  }
  return true;
}

// The call's verdict from the model.
struct Verdict {
  bool invalid = false;  // a rule is broken: the call must fail
  bool unsure = false;   // valid by the rules, but gradkit may refuse (see the file comment)
};

// An input or output for the memory rules: the view as gradkit addresses it (the cache with its effective dim-0
// stride).
struct Mem {
  const fuzz::View* v;
  bool pastBuffer = false;  // the view reaches past our buffer (a cache strided past its storage): never walked
};

// gradkit's memory rules, judged element by element: an output that writes a byte twice, or shares a byte with an
// input or another output, is invalid (the Compressor entry points have no in-place pair). Empty views are ignored.
void judgeMemory(const fuzz::World& world, const std::vector<Mem>& inputs, const std::vector<Mem>& outputs,
                 Verdict* verdict) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    const fuzz::View& out = *outputs[o].v;
    if (out.numel <= 0 || out.buffer < 0) continue;
    // A dense-or-gapped output writes no byte twice, and only tensors whose hull meets its hull can share a byte
    // with it: the element walks below are needed only then (they dominate the harness's time otherwise).
    const bool dense = denseOrGapped(out);
    std::vector<Mem> meeting;
    std::vector<Mem> others(inputs.begin(), inputs.end());
    others.insert(others.end(), outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(o));
    for (const Mem& m : others) {
      const fuzz::View& other = *m.v;
      if (other.numel <= 0 || other.buffer != out.buffer) continue;
      const auto [a0, a1] = hull(out);
      const auto [b0, b1] = hull(other);
      if (a1 < b0 || b1 < a0) continue;
      verdict->unsure = true;  // the hulls meet: gradkit refuses even without a shared byte
      meeting.push_back(m);
    }
    if (!dense) verdict->unsure = true;  // gradkit's rule is conservative: it may refuse a layout without a clash
    if (dense && meeting.empty()) continue;
    if (out.numel > kRunNumel || outputs[o].pastBuffer) {
      verdict->unsure = true;
      continue;
    }
    std::vector<uint8_t> mark(world.buffers[out.buffer].size, 0);
    forEachElement(out, [&](size_t at) {
      for (size_t k = 0; k < out.elemSize; ++k) {
        if (mark[at + k]) verdict->invalid = true;  // an address written twice
        mark[at + k] = 1;
      }
    });
    for (const Mem& m : meeting) {
      const fuzz::View& other = *m.v;
      if (other.numel > kRunNumel || m.pastBuffer) continue;
      forEachElement(other, [&](size_t at) {
        for (size_t k = 0; k < other.elemSize; ++k) {
          if (at + k < mark.size() && mark[at + k]) verdict->invalid = true;
        }
      });
    }
  }
}

class Call {
 public:
  Call(fuzz::Input& in, fuzz::World& world) : in_(in), world_(world) {}
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  ~Call() {
    for (aclTensor* t : own_) aclDestroyTensor(t);
  }

  // An input or output tensor with intended dtype and shape; an output is sometimes an earlier tensor itself.
  Arg& add(const char* name, int dtype, const std::vector<int64_t>& shape, bool output) {
    static const bool trace = std::getenv("GRADKIT_FUZZ_TRACE") != nullptr;
    // Where the tensor's bytes start (in an input padded long enough): for writing seeds (make_seeds.py).
    if (trace) std::fprintf(stderr, "fuzz: %s from byte %zu\n", name, gInputSize - in_.remaining());
    Arg& a = push(name, dtype, shape, output);
    if (output && in_.oneIn(8) && args_.size() > 1) {
      // Mostly an earlier tensor of the same intended shape and dtype (so the call gets as far as the memory rules).
      std::vector<const Arg*> alike;
      for (size_t i = 0; i + 1 < args_.size(); ++i) {
        if (args_[i].shape == shape && args_[i].intendedDtype == dtype) alike.push_back(&args_[i]);
      }
      const Arg& earlier =
          !alike.empty() && !in_.oneIn(4) ? *alike[in_.u8() % alike.size()] : args_[in_.u8() % (args_.size() - 1)];
      a.t = earlier.t;
      a.v = earlier.v;
    } else {
      a.t = world_.tensor(in_, dtype, shape, &a.v);
    }
    readBack(a);
    return a;
  }

  // An INT32 tensor of `shape` whose strides are all 0: one value, any number of elements (a batch count far beyond
  // what memory could hold).
  Arg& addBroadcast(const char* name, const std::vector<int64_t>& shape, int32_t value) {
    Arg& a = push(name, ACL_INT32, shape, false);
    makeBroadcast(a, shape, value);
    return a;
  }

  // Makes `a` such a stride-0 INT32 tensor (in place of what it was).
  void makeBroadcast(Arg& a, const std::vector<int64_t>& shape, int32_t value) {
    a.t = nullptr;
    a.v = fuzz::View{};
    const int b = world_.newBuffer(in_, sizeof value, false);
    if (b < 0) return;
    std::memcpy(world_.buffers[b].data, &value, sizeof value);
    a.v.buffer = b;
    a.v.byteOffset = 0;
    a.v.offset = 0;
    a.v.dims = shape;
    a.v.strides.assign(shape.size(), 0);
    a.v.elemSize = sizeof value;
    a.v.numel = 1;
    for (int64_t d : shape) a.v.numel = satMul(a.v.numel, d);
    const int64_t storage = 1;
    a.t = aclCreateTensor(shape.data(), shape.size(), ACL_INT32, a.v.strides.data(), 0, ACL_FORMAT_ND, &storage, 1,
                          world_.buffers[b].data);
    if (a.t == nullptr) return;
    own_.push_back(a.t);
    readBack(a);
  }

  std::deque<Arg>& args() { return args_; }

  // True when a view is too big to run (fuzz_common.h's flag is recomputed with kRunNumel).
  bool tooBig() const {
    for (const Arg& a : args_) {
      if (a.t != nullptr && !a.cheap && (a.v.numel > kRunNumel || a.v.numel < 0)) return true;
    }
    return false;
  }

 private:
  Arg& push(const char* name, int dtype, const std::vector<int64_t>& shape, bool output) {
    args_.emplace_back();
    Arg& a = args_.back();
    a.name = name;
    a.output = output;
    a.shape = shape;
    a.intendedDtype = dtype;
    return a;
  }

  static void readBack(Arg& a) {
    if (a.t == nullptr) return;
    aclDataType dt;
    aclFormat fmt;
    if (aclGetDataType(a.t, &dt) != ACLNN_SUCCESS || aclGetFormat(a.t, &fmt) != ACLNN_SUCCESS) {
      fuzz::finding("a getter failed on a created tensor");
    }
    a.dtype = static_cast<int>(dt);
    a.format = static_cast<int>(fmt);
  }

  fuzz::Input& in_;
  fuzz::World& world_;
  std::deque<Arg> args_;
  std::vector<aclTensor*> own_;
};

// Nulls one argument about once in 16 inputs.
void maybeNullOne(fuzz::Input& in, std::deque<Arg>& args) {
  if (in.oneIn(16)) args[in.u8() % args.size()].t = nullptr;
}

bool anyNull(std::initializer_list<const Arg*> args) {
  for (const Arg* a : args) {
    if (a->t == nullptr) return true;
  }
  return false;
}

// ---- int32 values in memory -------------------------------------------------------------------------------------

// Writes `values` (row-major, repeated when the view has more elements) into an INT32 view we back.
void writeInt32(fuzz::World& world, const Arg& a, const std::vector<int64_t>& values) {
  if (a.t == nullptr || values.empty() || a.v.buffer < 0 || a.dtype != ACL_INT32 || a.v.numel <= 0 ||
      a.v.numel > kRunNumel) {
    return;
  }
  uint8_t* base = world.buffers[a.v.buffer].data;
  size_t k = 0;
  forEachElement(a.v, [&](size_t at) {
    const auto value = static_cast<int32_t>(values[k++ % values.size()]);
    std::memcpy(base + at, &value, sizeof value);
  });
}

// Element `index` of an INT32 view, as it lies in memory (the view has elements, index is inside it).
int64_t readInt32(const fuzz::World& world, const fuzz::View& v, std::initializer_list<int64_t> index) {
  int64_t e = v.offset;
  size_t d = 0;
  for (int64_t i : index) e += i * v.strides[d++];
  int32_t value;
  std::memcpy(&value, world.buffers[v.buffer].data + v.byteOffset + static_cast<size_t>(e) * sizeof value,
              sizeof value);
  return value;
}

// ---- Decoding ---------------------------------------------------------------------------------------------------

Soc pickSoc(fuzz::Input& in) {
  const uint8_t m = in.u8();
  if (m < 200) return Soc::Ascend950;
  return m % 2 ? Soc::Ascend910B : Soc::Ascend910_93;
}

int64_t pickCmpRatio(fuzz::Input& in) {
  const uint8_t m = in.u8();
  static constexpr int64_t kGood[] = {4, 2, 3, 8, 5, 4, 16, 7};
  static constexpr int64_t kOdd[] = {128, 127, 1, 0, 129, -1, 64, 6, 9, std::numeric_limits<int64_t>::min(), kI64Max};
  if (m < 200) return kGood[m % 8];
  if (m < 250) return kOdd[m % 11];
  return in.dim();
}

int64_t pickCoff(fuzz::Input& in) {
  const uint8_t m = in.u8();
  static constexpr int64_t kOdd[] = {0, 3, -1, 4, std::numeric_limits<int64_t>::min()};
  if (m < 120) return 1;
  if (m < 235) return 2;
  return kOdd[m % 5];
}

// wkv's rows: coff*D with D 128 (or 512: the forward only; the backward's four [coff*D, H] weights of D = 512 do not
// fit fuzz_common.h's 4 MiB), or a row count that is no coff*D of a supported D.
int64_t pickRows(fuzz::Input& in, int64_t coff, bool forward) {
  const int64_t c = coff == 2 ? 2 : 1;
  const uint8_t m = in.u8();
  if (m < 210) return c * 128;
  if (m < 238) return forward ? 512 : c * 128;  // D = 512 with coff 1 (coff 2: D = 256)
  static constexpr int64_t kOdd[] = {256, 64, 0, 129, 257, 1024, 384, 1};
  return kOdd[m % 8];
}

int64_t pickHidden(fuzz::Input& in) {
  const uint8_t m = in.u8();
  if (m < 200) return 1024;
  if (m < 225) return m % 2 ? 1536 : 2048;
  static constexpr int64_t kOdd[] = {512, 1000, 1025, 1023, 10240, 10752, 0, 1280};
  return kOdd[m % 8];
}

// B: a few batches; sometimes 0, or a huge count (carried by stride-0 per-batch tensors, or by an empty x).
int64_t pickBatch(fuzz::Input& in, bool allowHuge) {
  const uint8_t m = in.u8();
  if (m < 240) return 1 + m % 3;
  static constexpr int64_t kOdd[] = {0, 4, 6, 0};
  static constexpr int64_t kHuge[] = {int64_t{1} << 16, int64_t{1} << 18, int64_t{1} << 31,
                                      int64_t{1} << 40, kI64Max - 1,      int64_t{1} << 33};
  if (m < 250 || !allowHuge) return kOdd[m % 4];
  return kHuge[m % 6];
}

// S (BSH) or T (TH): a few tokens; sometimes 0, one more than a block, or hostile.
int64_t pickTokens(fuzz::Input& in, bool allowHuge) {
  const uint8_t m = in.u8();
  if (m < 240) return (m + 5) % 13;
  static constexpr int64_t kOdd[] = {0, 17, 20, 1, 16, 9};
  if (m < 252 || !allowHuge) return kOdd[m % 6];
  static constexpr int64_t kHuge[] = {kI64Max, int64_t{1} << 62, int64_t{1} << 40, kI64Max - 3};
  return kHuge[m % 4];
}

int64_t pickCacheMode(fuzz::Input& in) {
  const uint8_t m = in.u8();
  static constexpr int64_t kOdd[] = {0, 3, -1, kI64Max};
  if (m < 160) return 1;
  if (m < 240) return 2;
  return kOdd[m % 4];
}

int64_t hostileInt(fuzz::Input& in, int64_t near, int64_t tokens) {
  const uint8_t m = in.u8();
  switch (m % 9) {
    case 0:
      return -1;
    case 1:
      return near + 1;
    case 2:
      return near - 1;
    case 3:
      return kI32Max;
    case 4:
      return kI32Min;
    case 5:
      return tokens + 1;
    case 6:
      return kI32Max - near;
    case 7:
      return 0;
    default:
      return static_cast<int32_t>(in.u32());
  }
}

// The per-batch values the decoder intends (the tensors may then be mutated by fuzz_common.h).
struct Ints {
  int64_t batch = 0;
  bool broadcast = false;  // B too large to spell out: every per-batch tensor is a stride-0 view of one value
  std::vector<int64_t> cu, seqused, startPos;
  int64_t cuValue = 0, sequsedValue = 0, startPosValue = 0;  // broadcast values
  bool cuGiven = false, sequsedGiven = false, startPosGiven = false;

  int64_t length(bool th, int64_t b, int64_t seqLen) const {
    if (!th) return seqLen;
    return broadcast ? 0 : cu[b + 1] - cu[b];
  }
  int64_t used(bool th, int64_t b, int64_t seqLen) const {
    if (sequsedGiven) return broadcast ? sequsedValue : seqused[b];
    return length(th, b, seqLen);
  }
  int64_t start(int64_t b) const {
    if (!startPosGiven) return 0;
    return broadcast ? startPosValue : startPos[b];
  }
};

Ints decodeInts(fuzz::Input& in, bool th, int64_t batch, int64_t seqLen, int64_t tokens, int64_t cmpRatio) {
  Ints v;
  v.batch = batch;
  v.broadcast = batch > kBroadcastAbove;
  v.cuGiven = th ? !in.oneIn(24) : in.oneIn(24);
  v.sequsedGiven = in.oneIn(3);
  v.startPosGiven = in.oneIn(2);
  const int64_t cr = cmpRatio >= 1 && cmpRatio <= 128 ? cmpRatio : 4;
  const int64_t smallTokens = tokens >= 0 && tokens <= 64 ? tokens : 0;
  if (v.broadcast) {
    // All batches alike: with cu_seqlens all 0 (TH) every batch is empty; hostile values sometimes.
    v.cuValue = in.oneIn(8) ? hostileInt(in, 0, smallTokens) : 0;
    v.sequsedValue = in.oneIn(8) ? hostileInt(in, 0, smallTokens) : 0;
    v.startPosValue = in.oneIn(4) ? hostileInt(in, 0, smallTokens) : in.u8() % (2 * cr + 1);
    return v;
  }
  // cu_seqlens: prefix sums of a split of T (even by default), sometimes leaving rows no batch owns.
  if (th) {
    v.cu.assign(1, 0);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t remaining = smallTokens - v.cu.back();
      const uint8_t m = in.u8();
      const int64_t take = m < 160 ? remaining / (batch - b) : (m < 220 ? m % (remaining + 1) : 0);
      v.cu.push_back(v.cu.back() + take);
    }
    if (in.oneIn(10)) {
      const size_t at = in.u8() % v.cu.size();
      v.cu[at] = hostileInt(in, v.cu[at], smallTokens);
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = th ? std::max<int64_t>(0, v.cu[b + 1] - v.cu[b]) : seqLen;
    const uint8_t m = in.u8();
    int64_t used = m < 100 ? len : (m < 235 ? m % (std::min<int64_t>(len, 64) + 1) : hostileInt(in, len, len));
    v.seqused.push_back(used);
    const uint8_t s = in.u8();
    static constexpr int64_t kBig[] = {100, 1000, 4096, 70000, 1 << 24};
    int64_t start = s < 200 ? s % (3 * cr + 1) : (s < 230 ? kBig[s % 5] : hostileInt(in, len, len));
    v.startPos.push_back(start);
  }
  return v;
}

// ---- aclnnCompressor --------------------------------------------------------------------------------------------

struct Outcome {
  bool called = false;  // false: not called
  aclnnStatus status = ACLNN_SUCCESS;
  fuzz::RunFn run = nullptr;
  Verdict verdict;
  std::vector<fuzz::View> outputs;
  bool tooBig = false;
};

// The history positions batch b reads and the ones it writes (spec 3.4, 3.7).
struct Range {
  int64_t first = 0, end = 0;
  bool empty() const { return first >= end; }
};
Range historyRange(int64_t sp, int64_t used, int64_t cr, int64_t coff) {
  const int64_t blocks = std::max<int64_t>(0, (sp + used) / cr - sp / cr);
  if (blocks == 0) return {sp, sp};
  return {std::max<int64_t>(0, (sp / cr - (coff - 1)) * cr), sp};
}
Range writeRange(int64_t sp, int64_t used, int64_t cr, int64_t coff, int64_t cacheMode) {
  const int64_t end = sp + used;
  if (cacheMode != 2) return {sp, end};
  return {std::max(sp, end / cr * cr - (coff - 1) * cr), end};
}

// What the forward decodes before the tensors.
struct FwdChoices {
  Soc soc;
  bool th;
  int64_t batch, seqLen, tokens, hidden, cmpRatio, coff, rows, cacheMode, blockSize, blockNum, tableColumns;
  bool gradEnabled, tableGiven;
  int xDtype;
  Ints ints;
  std::vector<int64_t> table;  // [B, columns] or [B]; empty with a broadcast table
  int64_t tableValue = 0;      // broadcast table
};

FwdChoices decodeForward(fuzz::Input& in) {
  FwdChoices c{};
  c.soc = pickSoc(in);
  c.th = in.oneIn(2);
  c.cmpRatio = pickCmpRatio(in);
  c.coff = pickCoff(in);
  c.rows = pickRows(in, c.coff, true);
  c.hidden = pickHidden(in);
  c.batch = pickBatch(in, true);
  c.seqLen = c.th ? 0 : (c.batch > kBroadcastAbove ? 0 : pickTokens(in, c.batch == 0));
  c.tokens = c.th ? pickTokens(in, false) : satMul(c.batch, c.seqLen);
  c.xDtype = in.oneIn(2) ? ACL_FLOAT16 : ACL_BF16;
  c.gradEnabled = !in.oneIn(3);
  c.cacheMode = pickCacheMode(in);
  c.tableGiven = !in.oneIn(24);
  c.ints = decodeInts(in, c.th, c.batch, c.seqLen, c.tokens, c.cmpRatio);

  const int64_t cr = c.cmpRatio >= 1 && c.cmpRatio <= 128 ? c.cmpRatio : 4;
  const int64_t coff = c.coff == 2 ? 2 : 1;
  const int64_t width = 2 * std::max<int64_t>(c.rows, 1);
  const bool few = !c.ints.broadcast;
  // The longest sequence a batch has and the last position it reaches (sane values only).
  int64_t longest = 0, reach = 0;
  for (int64_t b = 0; few && b < c.batch; ++b) {
    const int64_t used = std::clamp<int64_t>(c.ints.used(c.th, b, c.seqLen), 0, 64);
    const int64_t len = std::clamp<int64_t>(c.ints.length(c.th, b, c.seqLen), 0, 64);
    longest = std::max(longest, c.th ? used : len);
    reach = std::max(reach, std::clamp<int64_t>(c.ints.start(b), 0, 1 << 24) + len);
  }
  // block_size: small; in the ring mode around coff*cr + S - 1 (the rule's edge), sometimes hostile.
  const uint8_t bm = in.u8();
  static constexpr int64_t kPaged[] = {4, 1, 2, 3, 5, 8, 16, 7};
  static constexpr int64_t kOddSize[] = {0, 1024, 1025, -1, 2048, 1};
  const int64_t ringNeeded = coff * cr + longest - 1;
  if (bm < 220) {
    c.blockSize = c.cacheMode == 2 ? std::max<int64_t>(1, ringNeeded + (bm < 150 ? 0 : (bm % 3) - 1)) : kPaged[bm % 8];
  } else {
    c.blockSize = kOddSize[bm % 6];
  }
  const int64_t bs = std::clamp<int64_t>(c.blockSize, 1, 1024);
  const int64_t blockBytes = bs * width * 4;
  const int64_t maxBlocks = std::max<int64_t>(1, kCacheBytes / blockBytes);
  // The block table: cacheMode 1 [B, ceil(reach / block_size)] of fresh blocks (entry 0 is "do not write");
  // cacheMode 2 [B], one ring per batch. Then its column count, block_num and an entry may turn hostile.
  const uint8_t cm = in.u8();
  int64_t columns = c.cacheMode == 2 ? 1 : std::clamp<int64_t>(ceilDiv(reach, bs), 1, 1024);
  if (c.cacheMode != 2 && cm >= 200) {
    static constexpr int64_t kDelta[] = {-1, 1, -2, 0};
    columns = std::max<int64_t>(0, cm < 245 ? columns + kDelta[cm % 4] : 1);
  }
  c.tableColumns = columns;
  const int64_t wanted = clampI64(c.cacheMode == 2 ? static_cast<__int128>(c.batch) + cm % 2
                                                   : 1 + static_cast<__int128>(satMul(c.batch, columns)));
  c.blockNum = std::clamp<int64_t>(wanted, 1, maxBlocks);
  const uint8_t em = in.u8();
  if (few) {
    const int64_t cells = c.cacheMode == 2 ? c.batch : c.batch * columns;
    for (int64_t i = 0; i < cells; ++i) {
      int64_t entry;
      if (c.cacheMode == 2) {
        entry = (c.batch - 1 - i) % c.blockNum;
      } else if (em < 180) {
        entry = c.blockNum > 1 ? 1 + i % (c.blockNum - 1) : 0;
      } else if (em < 210) {
        entry = 0;
      } else {
        entry = in.u8() % c.blockNum;
      }
      c.table.push_back(entry);
    }
    if (!c.table.empty() && in.oneIn(8)) {
      const size_t at = in.u8() % c.table.size();
      static constexpr int64_t kOddEntry[] = {-1, 0, kI32Max, kI32Min, 1};
      const uint8_t om = in.u8();
      c.table[at] = om % 2 ? c.blockNum + om % 3 : kOddEntry[om % 5];
    }
  } else {
    c.tableValue = in.oneIn(8) ? hostileInt(in, 1, 0) : (c.blockNum > 1 ? 1 : 0);
  }
  // block_num itself: as needed, or 1 (entries past it: writes skipped, reads rejected), 0 or hostile.
  const uint8_t nm = in.u8();
  if (nm >= 235) {
    static constexpr int64_t kOddNum[] = {1, 0, int64_t{1} << 40, int64_t{1} << 33, 2, kI64Max};
    c.blockNum = kOddNum[nm % 6];
  }
  return c;
}

// The elements the storage of a created tensor declares (the product of its storage dims).
int64_t storageElements(const aclTensor* t) {
  int64_t* dims = nullptr;
  uint64_t count = 0;
  if (aclGetStorageShape(t, &dims, &count) != ACLNN_SUCCESS) fuzz::finding("aclGetStorageShape failed");
  int64_t elements = 1;
  for (uint64_t i = 0; i < count; ++i) elements = satMul(elements, dims[i]);
  delete[] dims;
  return elements;
}

// stateCacheStrideDim0 for the cache as created: 0, its own dim-0 stride, the smallest legal value (one block's
// extent), the largest that keeps the block_num blocks inside the storage the cache declares, or hostile: one more
// than that, extent - 1, 1000 extents, INT32_MAX and past it, negative, the INT64 extremes. Every value is passed as
// picked: gradkit must refuse blocks that leave the declared storage (issue 27), and the storage is mostly exactly
// the view with a buffer of exactly that size, so that ASan sees a write past it.
int64_t pickStrideDim0(fuzz::Input& in, const Arg& cache, int64_t storage) {
  const uint8_t m = in.u8();
  if (m < 150 || cache.t == nullptr || cache.v.dims.size() != 3 || cache.v.numel <= 0) return 0;
  const fuzz::View& v = cache.v;
  const int64_t extent = (v.dims[1] - 1) * v.strides[1] + (v.dims[2] - 1) * v.strides[2] + 1;
  // The largest stride that keeps the last block inside the storage (the view lies inside it: aclCreateTensor's rule,
  // so nothing overflows); with one block any stride does.
  const auto fits = [&] {
    if (v.dims[0] > 1) return std::max<int64_t>(extent, (storage - v.offset - extent) / (v.dims[0] - 1));
    return extent + in.u8() % 7;
  };
  if (m < 185) return v.strides[0];
  if (m < 210) return extent;
  if (m < 235) return fits();
  static constexpr int64_t kOdd[] = {kI32Max, kI32Max + 1, -1, 1, std::numeric_limits<int64_t>::min(), kI64Max, 0};
  const uint8_t o = in.u8() % 10;
  if (o == 0) return fits() + 1;  // the last block ends one stride past the storage (dims[0] > 1)
  if (o == 1) return extent - 1;
  if (o == 2) return satMul(extent, 1000);
  return kOdd[o - 3];
}

// The cache as gradkit addresses it: dim 0 strided by stateCacheStrideDim0 when that is not 0. `pastStorage` when
// its last block ends past the storage the cache declares (the call must fail), `pastBuffer` when past our buffer
// (implied by pastStorage: the harness then neither walks nor runs it).
fuzz::View effectiveCache(const fuzz::World& world, const Arg& cache, int64_t strideDim0, int64_t storage,
                          bool* pastStorage, bool* pastBuffer) {
  fuzz::View v = cache.v;
  *pastStorage = *pastBuffer = false;
  if (strideDim0 == 0 || v.dims.size() != 3 || v.numel <= 0 || v.buffer < 0) return v;
  v.strides[0] = strideDim0;
  __int128 last = v.offset;
  for (size_t d = 0; d < 3; ++d) last += static_cast<__int128>(v.dims[d] - 1) * v.strides[d];
  *pastStorage = last + 1 > storage || last < 0;
  const __int128 endByte = static_cast<__int128>(v.byteOffset) + (last + 1) * static_cast<__int128>(v.elemSize);
  *pastBuffer = endByte > static_cast<__int128>(world.buffers[v.buffer].size) || last < 0;
  return v;
}

Outcome forward(fuzz::Input& in, fuzz::World& world, uint64_t* sizeArg, aclOpExecutor** executorArg) {
  const FwdChoices c = decodeForward(in);
  gradkit::rt::setSocOverride(c.soc);
  const bool full = c.soc == Soc::Ascend950;
  const int64_t cr = c.cmpRatio >= 1 && c.cmpRatio <= 128 ? c.cmpRatio : 4;
  const int64_t coff = c.coff == 2 ? 2 : 1;
  const int64_t d = std::max<int64_t>(c.rows / coff, 1);
  std::vector<int64_t> lead;
  if (c.th) {
    lead = {clampI64(std::min<__int128>(c.tokens, static_cast<__int128>(c.tokens / cr) + c.batch))};
  } else {
    lead = {c.batch, ceilDiv(c.seqLen, cr)};
  }
  auto withTail = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  const std::vector<int64_t> xShape =
      c.th ? std::vector<int64_t>{c.tokens, c.hidden} : std::vector<int64_t>{c.batch, c.seqLen, c.hidden};
  const std::vector<int64_t> tableShape =
      c.cacheMode == 2 ? std::vector<int64_t>{c.batch} : std::vector<int64_t>{c.batch, c.tableColumns};

  Call call(in, world);
  const bool broadcast = c.ints.broadcast;
  Arg& x = call.add("x", c.xDtype, xShape, false);
  Arg& wkv = call.add("wkv", c.xDtype, {c.rows, c.hidden}, false);
  Arg& wgate = call.add("wgate", c.xDtype, {c.rows, c.hidden}, false);
  Arg& cache = call.add("stateCacheRef", ACL_FLOAT, {c.blockNum, c.blockSize, 2 * c.rows}, true);
  Arg& ape = call.add("ape", ACL_FLOAT, {c.cmpRatio, c.rows}, false);
  Arg& table = broadcast ? call.addBroadcast("stateBlockTableOptional", tableShape, static_cast<int32_t>(c.tableValue))
                         : call.add("stateBlockTableOptional", ACL_INT32, tableShape, false);
  Arg& cu = broadcast ? call.addBroadcast("cuSeqlensOptional", {c.batch + 1}, static_cast<int32_t>(c.ints.cuValue))
                      : call.add("cuSeqlensOptional", ACL_INT32, {c.batch + 1}, false);
  Arg& seqused = broadcast ? call.addBroadcast("sequsedOptional", {c.batch}, static_cast<int32_t>(c.ints.sequsedValue))
                           : call.add("sequsedOptional", ACL_INT32, {c.batch}, false);
  Arg& startPos = broadcast
                      ? call.addBroadcast("startPosOptional", {c.batch}, static_cast<int32_t>(c.ints.startPosValue))
                      : call.add("startPosOptional", ACL_INT32, {c.batch}, false);
  Arg& cmpKv = call.add("cmpKvOut", c.xDtype, withTail({d}), true);
  Arg& score = call.add("softmaxScoreOut", ACL_FLOAT, withTail({coff * cr, d}), true);
  Arg& kv = call.add("kvOut", ACL_FLOAT, withTail({coff * cr, d}), true);
  if (!c.tableGiven) table.t = nullptr;
  if (!c.ints.cuGiven) cu.t = nullptr;
  if (!c.ints.sequsedGiven) seqused.t = nullptr;
  if (!c.ints.startPosGiven) startPos.t = nullptr;
  maybeNullOne(in, call.args());
  const int64_t cacheStorage = cache.t != nullptr ? storageElements(cache.t) : 0;
  const int64_t strideDim0 = pickStrideDim0(in, cache, cacheStorage);
  // A wide paged table (issue 27), about once in 16 inputs: [B, columns] of one stride-0 value over 4 bytes, with
  // 2^20 .. 2^40 columns around gradkit's limit ceil(2^31 / block_size) (no int32 position reaches a later column).
  // gradkit must copy only the columns a call reaches (a valid call runs), and refuse a table past the limit.
  const uint8_t wm = in.u8();
  if (wm >= 240 && c.cacheMode == 1 && table.t != nullptr) {
    const int64_t bs = cache.t != nullptr && cache.rank() == 3 ? std::clamp<int64_t>(cache.v.dims[1], 1, 1024) : 4;
    const int64_t limit = ceilDiv(int64_t{1} << 31, bs);
    const int64_t kColumns[] = {
        int64_t{1} << 24,      limit, limit + 1, int64_t{1} << 31, int64_t{1} << 33, int64_t{1} << 40, limit - 1,
        (int64_t{1} << 20) + 1};
    const uint8_t vm = in.u8();
    const int64_t blocks = std::clamp<int64_t>(c.blockNum, 0, kI32Max);
    static constexpr int64_t kOddEntry[] = {0, -1, kI32Max, 1};
    const int64_t value = vm < 200 ? (blocks > 1 ? 1 : 0) : (vm % 5 == 4 ? blocks : kOddEntry[vm % 5]);
    call.makeBroadcast(table, {c.batch, kColumns[wm % 8]}, static_cast<int32_t>(value));
    table.cheap = true;
    static const bool trace = std::getenv("GRADKIT_FUZZ_TRACE") != nullptr;
    if (trace) {
      std::fprintf(stderr, "fuzz: wide table [%lld, %lld] of %lld\n", static_cast<long long>(c.batch),
                   static_cast<long long>(kColumns[wm % 8]), static_cast<long long>(value));
    }
  }
  const bool gradEnabled = c.gradEnabled;
  const int64_t cmpRatio = c.cmpRatio, coffAttr = c.coff, cacheMode = c.cacheMode;

  // The intended int32 values into memory (an earlier tensor's bytes may be overwritten: the model reads back).
  if (!broadcast) {
    writeInt32(world, cu, c.ints.cu);
    writeInt32(world, seqused, c.ints.seqused);
    writeInt32(world, startPos, c.ints.startPos);
    writeInt32(world, table, c.table);
  }

  // The model, in gradkit's order (compressor_check.cpp); the first broken rule makes the call invalid.
  Outcome out{};
  Verdict& verdict = out.verdict;
  bool pastStorage = false, pastBuffer = false;
  const fuzz::View effCache = effectiveCache(world, cache, strideDim0, cacheStorage, &pastStorage, &pastBuffer);
  const auto judge = [&]() -> bool {  // true: invalid
    if (anyNull({&x, &wkv, &wgate, &cache, &ape, &table, &cmpKv, &score, &kv})) return true;
    // Layout.
    const int64_t rank = x.rank();
    if (rank != 2 && rank != 3) return true;
    const bool th = rank == 2;
    if (th != (cu.t != nullptr)) return true;
    // Empty tensors.
    const int64_t hidden = x.v.dims.back();
    if (hidden == 0) return true;
    if (wkv.empty() || wgate.empty() || cache.empty() || ape.empty()) return true;
    if (!x.empty() && table.empty()) return true;
    // Attributes and the profile.
    if (cmpRatio < 2 || cmpRatio > 128 || (!full && !isPowerOfTwo(cmpRatio))) return true;
    if (coffAttr != 1 && coffAttr != 2) return true;
    if (cacheMode != 1 && cacheMode != 2) return true;
    if (!full && (cacheMode != 1 || gradEnabled)) return true;
    // Each input.
    if (!ioDtype(x.dtype) || hidden < 1024 || hidden > 10240 || hidden % 512 != 0) return true;
    if (!ioDtype(wkv.dtype) || wkv.rank() != 2) return true;
    const int64_t rows = wkv.v.dims[0];
    if (rows % coffAttr != 0 || (rows / coffAttr != 128 && rows / coffAttr != 512)) return true;
    if (!ioDtype(wgate.dtype) || wgate.rank() != 2) return true;
    if (ape.dtype != ACL_FLOAT || ape.rank() != 2) return true;
    for (const Arg* a : {&cu, &seqused, &startPos}) {
      if (a->t != nullptr && (a->dtype != ACL_INT32 || a->rank() != 1)) return true;
    }
    if (cu.t != nullptr && cu.v.dims[0] == 0) return true;
    if (table.dtype != ACL_INT32) return true;
    const int64_t batch = th ? cu.v.dims[0] - 1 : x.v.dims[0];
    if (batch > kMaxBatch) return true;  // gradkit's limit
    // The state cache.
    if (cache.dtype != ACL_FLOAT || cache.rank() != 3) return true;
    const int64_t blockSize = cache.v.dims[1];
    if (blockSize < 1 || blockSize > 1024) return true;
    if (cacheMode == 2 && (cache.v.dims[0] < batch || table.rank() != 1)) return true;
    if (cacheMode == 1 && table.rank() != 2) return true;
    // The outputs' kinds.
    if (!ioDtype(cmpKv.dtype) || cmpKv.rank() != rank) return true;
    if (score.dtype != ACL_FLOAT || score.rank() != rank + 1) return true;
    if (kv.dtype != ACL_FLOAT || kv.rank() != rank + 1) return true;
    // Consistency.
    if (table.v.dims[0] != batch) return true;
    if (cacheMode == 1 && table.v.dims[1] > ceilDiv(int64_t{1} << 31, blockSize)) return true;  // int32 positions
    if (seqused.t != nullptr && seqused.v.dims[0] != batch) return true;
    if (startPos.t != nullptr && startPos.v.dims[0] != batch) return true;
    if (wkv.v.dims[1] != hidden) return true;
    if (wgate.v.dims != std::vector<int64_t>{rows, hidden}) return true;
    if (cache.v.dims[2] != 2 * rows) return true;
    if (ape.v.dims != std::vector<int64_t>{cmpRatio, rows}) return true;
    if (wkv.dtype != x.dtype || wgate.dtype != x.dtype || cmpKv.dtype != x.dtype) return true;
    // stateCacheStrideDim0.
    const fuzz::View& cv = cache.v;
    const int64_t extent = (cv.dims[1] - 1) * cv.strides[1] + (cv.dims[2] - 1) * cv.strides[2] + 1;
    if (strideDim0 != 0 && (strideDim0 < extent || strideDim0 > kI32Max)) return true;
    if (pastStorage) return true;  // the strided blocks must stay inside the storage the cache declares
    if (!full) {
      const int64_t effective = strideDim0 != 0 ? strideDim0 : cv.strides[0];
      if (effective != cv.dims[1] * cv.dims[2] || cv.strides[2] != 1 || cv.strides[1] != cv.dims[2]) return true;
    }
    // The outputs' shapes.
    const int64_t headDim = rows / coffAttr, n = coffAttr * cmpRatio;
    std::vector<int64_t> outLead;
    if (th) {
      const int64_t t = x.v.dims[0];
      outLead = {clampI64(std::min<__int128>(t, static_cast<__int128>(t / cmpRatio) + batch))};
    } else {
      outLead = {x.v.dims[0], ceilDiv(x.v.dims[1], cmpRatio)};
    }
    std::vector<int64_t> expect = outLead;
    expect.push_back(headDim);
    if (cmpKv.v.dims != expect) return true;
    expect.back() = n;
    expect.push_back(headDim);
    if (gradEnabled && (score.v.dims != expect || kv.v.dims != expect)) return true;
    // Formats (every tensor given, softmaxScoreOut and kvOut too).
    for (const Arg& a : call.args()) {
      if (a.t != nullptr && privateFormat(a.format)) return true;
    }
    // Memory: no output may write a byte twice or share one (the cache through its effective stride).
    std::vector<Mem> inputs, outputs;
    for (const Arg* a : {&x, &wkv, &wgate, &ape, &table, &cu, &seqused, &startPos}) {
      if (a->t != nullptr) inputs.push_back({&a->v});
    }
    outputs.push_back({&effCache, pastBuffer});
    outputs.push_back({&cmpKv.v});
    if (gradEnabled) {
      outputs.push_back({&score.v});
      outputs.push_back({&kv.v});
    }
    judgeMemory(world, inputs, outputs, &verdict);
    if (verdict.invalid) return true;
    if (verdict.unsure) return false;  // gradkit may stop at the memory rules: the values need not be judged
    // The values (compressor_fwd_check_values.cpp), read from memory as gradkit reads them.
    if (batch > kModelBatches) {
      verdict.unsure = true;
      return false;
    }
    const int64_t tokens = th ? x.v.dims[0] : satMul(x.v.dims[0], x.v.dims[1]);
    std::vector<int64_t> cuValues;
    if (th) {
      for (int64_t i = 0; i <= batch; ++i) cuValues.push_back(readInt32(world, cu.v, {i}));
      if (cuValues[0] != 0) return true;
      for (int64_t b = 0; b < batch; ++b) {
        if (cuValues[b + 1] < cuValues[b]) return true;
      }
      if (cuValues[batch] > tokens) return true;
    }
    const auto length = [&](int64_t b) { return th ? cuValues[b + 1] - cuValues[b] : x.v.dims[1]; };
    const auto used = [&](int64_t b) { return seqused.t != nullptr ? readInt32(world, seqused.v, {b}) : length(b); };
    const auto start = [&](int64_t b) { return startPos.t != nullptr ? readInt32(world, startPos.v, {b}) : 0; };
    for (int64_t b = 0; b < batch; ++b) {
      if (used(b) < 0 || used(b) > length(b)) return true;
    }
    for (int64_t b = 0; b < batch; ++b) {
      if (start(b) < 0 || start(b) + length(b) > kI32Max) return true;
    }
    if (cacheMode == 2) {
      int64_t s = th ? 0 : x.v.dims[1];
      for (int64_t b = 0; th && b < batch; ++b) s = std::max(s, used(b));
      if (blockSize < coffAttr * cmpRatio + s - 1) return true;
    }
    const int64_t blockNum = cache.v.dims[0];
    const int64_t columns = cacheMode == 1 ? table.v.dims[1] : 1;
    const auto entry = [&](int64_t b, int64_t column) {
      return cacheMode == 2 ? readInt32(world, table.v, {b}) : readInt32(world, table.v, {b, column});
    };
    for (int64_t b = 0; b < batch; ++b) {
      const Range reads = historyRange(start(b), used(b), cmpRatio, coffAttr);
      const Range writes = writeRange(start(b), used(b), cmpRatio, coffAttr, cacheMode);
      if (cacheMode == 1) {
        const int64_t end = std::max(reads.empty() ? 0 : reads.end, writes.empty() ? 0 : writes.end);
        if (ceilDiv(end, blockSize) > columns) return true;
      }
      // Reads go through entries in [0, block_num); cacheMode 1 skips writes through any other entry (and 0).
      if (!reads.empty()) {
        const int64_t first = cacheMode == 2 ? 0 : reads.first / blockSize;
        const int64_t last = cacheMode == 2 ? 0 : (reads.end - 1) / blockSize;
        for (int64_t col = first; col <= last; ++col) {
          if (entry(b, col) < 0 || entry(b, col) >= blockNum) return true;
        }
      }
      if (!writes.empty() && cacheMode == 2 && (entry(b, 0) < 0 || entry(b, 0) >= blockNum)) return true;
    }
    return false;
  };
  verdict.invalid = judge();
  out.tooBig = call.tooBig() || pastBuffer;
  if (out.tooBig) verdict.unsure = true;

  // What the run may write: the cache through its effective view, cmpKvOut, and with gradEnabled the two others.
  if (cache.t != nullptr) out.outputs.push_back(effCache);
  if (cmpKv.t != nullptr) out.outputs.push_back(cmpKv.v);
  if (gradEnabled) {
    if (score.t != nullptr) out.outputs.push_back(score.v);
    if (kv.t != nullptr) out.outputs.push_back(kv.v);
  }

  out.called = true;
  world.snapshot();
  out.status = aclnnCompressorGetWorkspaceSize(x.t, wkv.t, wgate.t, cache.t, ape.t, table.t, cu.t, seqused.t,
                                               startPos.t, cmpRatio, coffAttr, cacheMode, strideDim0, gradEnabled,
                                               cmpKv.t, score.t, kv.t, sizeArg, executorArg);
  out.run = aclnnCompressor;
  return out;
}

// ---- aclnnCompressorGrad ----------------------------------------------------------------------------------------

Outcome backward(fuzz::Input& in, fuzz::World& world, uint64_t* sizeArg, aclOpExecutor** executorArg) {
  const Soc soc = in.u8() < 235 ? Soc::Ascend950 : (in.oneIn(2) ? Soc::Ascend910B : Soc::Ascend910_93);
  gradkit::rt::setSocOverride(soc);
  const bool th = in.oneIn(2);
  const int64_t cmpRatio = pickCmpRatio(in);
  const int64_t coffAttr = pickCoff(in);
  const int64_t rows = pickRows(in, coffAttr, false);
  const int64_t hidden = pickHidden(in);
  const int64_t batchChoice = pickBatch(in, th);
  const int64_t seqLen = th ? 0 : pickTokens(in, false);
  const int64_t tokens = th ? pickTokens(in, false) : satMul(batchChoice, seqLen);
  const int xDtype = in.oneIn(2) ? ACL_FLOAT16 : ACL_BF16;
  const Ints ints = decodeInts(in, th, batchChoice, seqLen, tokens, cmpRatio);
  const int64_t cr = cmpRatio >= 1 && cmpRatio <= 128 ? cmpRatio : 4;
  const int64_t coff = coffAttr == 2 ? 2 : 1;
  const int64_t d = std::max<int64_t>(rows / coff, 1);
  std::vector<int64_t> lead;
  if (th) {
    lead = {clampI64(std::min<__int128>(tokens, static_cast<__int128>(tokens / cr) + batchChoice))};
  } else {
    lead = {batchChoice, ceilDiv(seqLen, cr)};
  }
  auto withTail = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  const std::vector<int64_t> xShape =
      th ? std::vector<int64_t>{tokens, hidden} : std::vector<int64_t>{batchChoice, seqLen, hidden};

  Call call(in, world);
  const bool broadcast = ints.broadcast;
  Arg& x = call.add("x", xDtype, xShape, false);
  Arg& wkv = call.add("wkv", xDtype, {rows, hidden}, false);
  Arg& wgate = call.add("wgate", xDtype, {rows, hidden}, false);
  Arg& dCmpKv = call.add("dCmpKv", xDtype, withTail({d}), false);
  Arg& score = call.add("softmaxScore", ACL_FLOAT, withTail({coff * cr, d}), false);
  Arg& kv = call.add("kv", ACL_FLOAT, withTail({coff * cr, d}), false);
  Arg& cu = broadcast ? call.addBroadcast("cuSeqlensOptional", {batchChoice + 1}, static_cast<int32_t>(ints.cuValue))
                      : call.add("cuSeqlensOptional", ACL_INT32, {batchChoice + 1}, false);
  Arg& seqused = broadcast
                     ? call.addBroadcast("sequsedOptional", {batchChoice}, static_cast<int32_t>(ints.sequsedValue))
                     : call.add("sequsedOptional", ACL_INT32, {batchChoice}, false);
  Arg& startPos = broadcast
                      ? call.addBroadcast("startPosOptional", {batchChoice}, static_cast<int32_t>(ints.startPosValue))
                      : call.add("startPosOptional", ACL_INT32, {batchChoice}, false);
  Arg& dX = call.add("dXOut", xDtype, xShape, true);
  Arg& dWkv = call.add("dWkvOut", xDtype, {rows, hidden}, true);
  Arg& dWgate = call.add("dWgateOut", xDtype, {rows, hidden}, true);
  Arg& dApe = call.add("dApeOut", ACL_FLOAT, {cmpRatio, rows}, true);
  if (!ints.cuGiven) cu.t = nullptr;
  if (!ints.sequsedGiven) seqused.t = nullptr;
  if (!ints.startPosGiven) startPos.t = nullptr;
  maybeNullOne(in, call.args());
  if (!broadcast) {
    writeInt32(world, cu, ints.cu);
    writeInt32(world, seqused, ints.seqused);
    writeInt32(world, startPos, ints.startPos);
  }

  // The model, in gradkit's order (compressor_grad_check.cpp, compressor_grad_check_values.cpp).
  Outcome out{};
  Verdict& verdict = out.verdict;
  const auto judge = [&]() -> bool {  // true: invalid
    if (soc != Soc::Ascend950) return true;
    if (anyNull({&x, &wkv, &wgate, &dCmpKv, &score, &kv, &dX, &dWkv, &dWgate, &dApe})) return true;
    const bool isTh = x.rank() == 2;
    if (isTh != (cu.t != nullptr)) return true;
    for (const Arg& a : call.args()) {
      if (a.t != nullptr && a.empty()) return true;  // CompressorGrad supports no empty tensor
    }
    // Each argument's dtype and rank, then the attributes.
    // An absent optional tensor passes; `dtype` -1 means BF16 or FLOAT16.
    const auto kind = [](const Arg& a, int dtype, std::initializer_list<int64_t> ranks) {
      if (a.t == nullptr) return true;
      if (dtype < 0 ? !ioDtype(a.dtype) : a.dtype != dtype) return false;
      return std::find(ranks.begin(), ranks.end(), a.rank()) != ranks.end();
    };
    constexpr int kIo = -1;
    if (!kind(x, kIo, {2, 3}) || !kind(wkv, kIo, {2}) || !kind(wgate, kIo, {2}) || !kind(dCmpKv, kIo, {2, 3}) ||
        !kind(score, ACL_FLOAT, {3, 4}) || !kind(kv, ACL_FLOAT, {3, 4}) || !kind(cu, ACL_INT32, {1}) ||
        !kind(seqused, ACL_INT32, {1}) || !kind(startPos, ACL_INT32, {1}) || !kind(dX, kIo, {2, 3}) ||
        !kind(dWkv, kIo, {2}) || !kind(dWgate, kIo, {2}) || !kind(dApe, ACL_FLOAT, {2})) {
      return true;
    }
    if (cmpRatio < 2 || cmpRatio > 128 || (coffAttr != 1 && coffAttr != 2)) return true;
    // B, D, H.
    const int64_t batch = isTh ? cu.v.dims[0] - 1 : x.v.dims[0];
    const int64_t h = x.v.dims.back();
    const int64_t headDim = wkv.v.dims[0] / coffAttr;
    if (isTh && batch < 1) return true;
    if (batch > kMaxBatch) return true;  // gradkit's limit (BSH: x does not fit in memory anyway)
    if (headDim != 128 && headDim != 512) return true;
    if (h < 1024 || h > 10240 || h % 512 != 0) return true;
    // Shapes and dtypes (spec 5.4 steps 7-9 and gradkit's exact shapes).
    const int64_t c = coffAttr * headDim, n = coffAttr * cmpRatio;
    if (seqused.t != nullptr && seqused.v.dims[0] != batch) return true;
    if (startPos.t != nullptr && startPos.v.dims[0] != batch) return true;
    for (const Arg* a : {&wkv, &wgate, &dWkv, &dWgate}) {
      if (a->v.dims != std::vector<int64_t>{c, h}) return true;
    }
    for (const Arg* a : {&wkv, &wgate, &dCmpKv, &dX, &dWkv, &dWgate}) {
      if (a->dtype != x.dtype) return true;
    }
    std::vector<int64_t> block;
    if (isTh) {
      const int64_t t = x.v.dims[0];
      block = {clampI64(std::min<__int128>(t, static_cast<__int128>(t / cmpRatio) + batch))};
    } else {
      block = {batch, ceilDiv(x.v.dims[1], cmpRatio)};
    }
    block.push_back(headDim);
    if (dCmpKv.v.dims != block) return true;
    block.back() = n;
    block.push_back(headDim);
    if (score.v.dims != block || kv.v.dims != block) return true;
    if (dX.v.dims != x.v.dims) return true;
    if (dApe.v.dims != std::vector<int64_t>{cmpRatio, c}) return true;
    for (const Arg& a : call.args()) {
      if (a.t != nullptr && privateFormat(a.format)) return true;
    }
    // Memory.
    std::vector<Mem> inputs, outputs;
    for (const Arg* a : {&x, &wkv, &wgate, &dCmpKv, &score, &kv, &cu, &seqused, &startPos}) {
      if (a->t != nullptr) inputs.push_back({&a->v});
    }
    for (const Arg* a : {&dX, &dWkv, &dWgate, &dApe}) outputs.push_back({&a->v});
    judgeMemory(world, inputs, outputs, &verdict);
    if (verdict.invalid) return true;
    if (verdict.unsure) return false;
    // The values.
    if (batch > kModelBatches) {
      verdict.unsure = true;
      return false;
    }
    const int64_t tokensNow = isTh ? x.v.dims[0] : x.v.dims[0] * x.v.dims[1];
    std::vector<int64_t> cuValues;
    if (isTh) {
      for (int64_t i = 0; i <= batch; ++i) cuValues.push_back(readInt32(world, cu.v, {i}));
      if (cuValues[0] != 0) return true;
      for (int64_t b = 0; b < batch; ++b) {
        if (cuValues[b + 1] < cuValues[b]) return true;
      }
      if (cuValues[batch] > tokensNow) return true;
    }
    const auto length = [&](int64_t b) { return isTh ? cuValues[b + 1] - cuValues[b] : x.v.dims[1]; };
    for (int64_t b = 0; seqused.t != nullptr && b < batch; ++b) {
      const int64_t u = readInt32(world, seqused.v, {b});
      if (u < 0 || u > length(b)) return true;
    }
    for (int64_t b = 0; startPos.t != nullptr && b < batch; ++b) {
      const int64_t sp = readInt32(world, startPos.v, {b});
      if (sp < 0 || sp + length(b) > kI32Max) return true;
    }
    return false;
  };
  verdict.invalid = judge();
  out.tooBig = call.tooBig();
  if (out.tooBig) verdict.unsure = true;
  for (const Arg* a : {&dX, &dWkv, &dWgate, &dApe}) {
    if (a->t != nullptr) out.outputs.push_back(a->v);
  }

  out.called = true;
  world.snapshot();
  out.status =
      aclnnCompressorGradGetWorkspaceSize(x.t, wkv.t, wgate.t, dCmpKv.t, score.t, kv.t, cu.t, seqused.t, startPos.t,
                                          cmpRatio, coffAttr, dX.t, dWkv.t, dWgate.t, dApe.t, sizeArg, executorArg);
  out.run = aclnnCompressorGrad;
  return out;
}

// fuzz::finish with room for the workspaces of the smallest valid calls: CompressorGrad with coff = 2 asks for
// about 4.2 MB (fuzz::finish runs nothing over 4 MiB), the larger H for more.
constexpr uint64_t kMaxWorkspace = uint64_t{32} << 20;

void finishCall(fuzz::World& world, aclnnStatus status, uint64_t workspaceSize, aclOpExecutor* executor,
                fuzz::RunFn run, const std::vector<fuzz::View>& outputs, bool mustFail) {
  static const bool trace = std::getenv("GRADKIT_FUZZ_TRACE") != nullptr;
  const bool runs = !world.tooBigToRun && workspaceSize <= kMaxWorkspace;
  if (trace) {
    std::fprintf(stderr, "fuzz: status %d, workspace %llu, %s\n", status,
                 static_cast<unsigned long long>(workspaceSize),
                 status == ACLNN_SUCCESS ? (runs ? "run" : "not run (too big)") : aclGetRecentErrMsg());
  }
  if (status != ACLNN_SUCCESS) {
    world.checkUnchanged("a failed GetWorkspaceSize changed memory");
    return;
  }
  if (mustFail) fuzz::finding("GetWorkspaceSize accepted an invalid argument");
  if (executor == nullptr) fuzz::finding("GetWorkspaceSize succeeded without an executor");
  world.checkUnchanged("GetWorkspaceSize changed memory");
  if (!runs) {
    aclDestroyAclOpExecutor(executor);
    return;
  }
  for (const fuzz::View& v : outputs) world.markWritable(v);
  std::unique_ptr<uint8_t[]> workspace(workspaceSize > 0 ? new uint8_t[workspaceSize] : nullptr);
  const aclnnStatus ran = run(workspace.get(), workspaceSize, executor, fuzz::stream());
  if (ran != ACLNN_SUCCESS) fuzz::finding("the run failed after a successful GetWorkspaceSize");
  if (aclrtSynchronizeStream(fuzz::stream()) != ACL_SUCCESS) {
    fuzz::finding("aclrtSynchronizeStream failed after a good run");
  }
  world.checkUnchanged("the run wrote outside its outputs' views");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  gInputSize = size;
  fuzz::World world;
  const uint8_t op = in.u8() % 2;  // 0 aclnnCompressor, 1 aclnnCompressorGrad
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  uint64_t* sizeArg = nulls == 0xF1 ? nullptr : &workspaceSize;
  aclOpExecutor** executorArg = nulls == 0xF2 ? nullptr : &executor;
  Outcome out = op == 0 ? forward(in, world, sizeArg, executorArg) : backward(in, world, sizeArg, executorArg);
  if (!out.called) return 0;
  static const bool trace = std::getenv("GRADKIT_FUZZ_TRACE") != nullptr;
  if (trace) {
    std::fprintf(stderr, "fuzz: %s, model: %s\n", op == 0 ? "aclnnCompressor" : "aclnnCompressorGrad",
                 out.verdict.invalid ? "invalid" : (out.verdict.unsure ? "unsure" : "valid"));
  }
  const bool mustFail = out.verdict.invalid || sizeArg == nullptr || executorArg == nullptr;
  if (!mustFail && !out.verdict.unsure && out.status != ACLNN_SUCCESS) {
    fuzz::finding("GetWorkspaceSize rejected a call the model finds valid");
  }
  // Views up to kRunNumel elements run (fuzz_common.h alone would stop at 2^18).
  world.tooBigToRun = out.tooBig;
  finishCall(world, out.status, workspaceSize, executor, out.run, out.outputs, mustFail);
  return 0;
}
