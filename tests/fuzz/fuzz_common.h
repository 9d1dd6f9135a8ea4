// Shared machinery of the libFuzzer targets (tests/fuzz/README.md): decode the fuzz input into hostile descriptor
// arguments, back every accepted tensor with real memory of exactly the size its storage needs, and check that an
// operator call never writes a byte outside its outputs' views.
//
// Oracle, besides ASan/UBSan (which abort by themselves):
//   - aclCreateTensor may not accept what is plainly invalid (rank > 16, a negative dim, stride or offset, an
//     unknown dtype or format, a view that leaves its storage, a storage larger than the tracked block behind it);
//   - a GetWorkspaceSize that fails may change no byte; one that succeeds must be followed by a run that succeeds,
//     a clean aclrtSynchronizeStream, and no changed byte outside the outputs' views;
//   - each target traps on success for the invalid conditions it can recognise on its own (null required tensor,
//     NaN probability, rank > 8, ...).
#ifndef GRADKIT_TESTS_FUZZ_FUZZ_COMMON_H_
#define GRADKIT_TESTS_FUZZ_FUZZ_COMMON_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"

namespace fuzz {

// A finding: print why (libFuzzer then saves the input as crash-*), then trap.
[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\nlast gradkit message: %s\n", what, aclGetRecentErrMsg());
  std::fflush(stderr);
  __builtin_trap();
}

#define FUZZ_REQUIRE(cond, what)        \
  do {                                  \
    if (!(cond)) ::fuzz::finding(what); \
  } while (0)

// Reads the fuzz input; past its end every read gives 0.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return static_cast<uint64_t>(u32()) | (static_cast<uint64_t>(u32()) << 32); }
  // True about once in n; false on a zero byte, so that a short input means "the plain, valid call".
  bool oneIn(unsigned n) { return u8() % n == n - 1; }
  // The byte that makes an argument null.
  bool null() { return u8() == 0xA5; }
  void bytes(void* out, size_t n) {
    auto* p = static_cast<uint8_t*>(out);
    for (size_t i = 0; i < n; ++i) p[i] = u8();
  }

  // Mostly small, sometimes 0 or huge or negative.
  int64_t dim() {
    const uint8_t m = u8();
    if (m < 200) return m % 5;
    if (m < 236) return m % 70;
    static constexpr int64_t kSpecial[] = {0,
                                           1,
                                           int64_t{1} << 62,
                                           std::numeric_limits<int64_t>::max(),
                                           -1,
                                           std::numeric_limits<int64_t>::min(),
                                           int64_t{1} << 31,
                                           int64_t{1} << 32,
                                           int64_t{1} << 40,
                                           (int64_t{1} << 31) - 1,
                                           4097,
                                           65536,
                                           129,
                                           127,
                                           -5,
                                           3000000000LL,
                                           1 << 20,
                                           128,
                                           16,
                                           1000};
    return kSpecial[m % (sizeof kSpecial / sizeof kSpecial[0])];
  }

  // Probability-like doubles: in range, edges, out of range, NaN, infinities, raw bits.
  double prob() {
    const uint8_t m = u8();
    switch (m % 16) {
      case 0:
        return 0.0;
      case 1:
        return 1.0;
      case 2:
        return std::nan("");
      case 3:
        return std::numeric_limits<double>::infinity();
      case 4:
        return -std::numeric_limits<double>::infinity();
      case 5:
        return -0.25;
      case 6:
        return 1.5;
      case 7:
        return std::numeric_limits<double>::denorm_min();
      case 8:
        return 1.0 - std::numeric_limits<double>::epsilon() / 2;
      case 9: {
        double d;
        const uint64_t bits = u64();
        std::memcpy(&d, &bits, sizeof d);
        return d;
      }
      case 10:
        return -0.0;
      default:
        return u8() / 255.0;
    }
  }

  int64_t anyInt64() {
    const uint8_t m = u8();
    switch (m % 6) {
      case 1:
        return std::numeric_limits<int64_t>::max();
      case 2:
        return std::numeric_limits<int64_t>::min();
      case 3:
        return -1;
      case 4:
        return static_cast<int64_t>(u64());
      default:
        return 4 * static_cast<int64_t>(u8());
    }
  }

  size_t remaining() const { return pos_ < size_ ? size_ - pos_ : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Whole-byte element sizes of the dtypes CANN defines; 0 for anything else (sub-byte types, STRING, unknown).
inline size_t elementSize(int dtype) {
  switch (dtype) {
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
      return 4;
    case ACL_FLOAT16:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_BF16:
      return 2;
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
      return 1;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64:
      return 8;
    case ACL_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

inline bool knownFormat(int f) {
  switch (f) {
    case -1:
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 12:
    case 16:
    case 27:
    case 29:
    case 30:
    case 32:
    case 33:
    case 35:
    case 47:
      return true;
    default:
      return false;
  }
}

// A dtype: usually the one the operator expects, else a defined one, else any int.
inline int pickDtype(Input& in, int expected) {
  static constexpr int kDefined[] = {ACL_FLOAT,  ACL_FLOAT16, ACL_INT8,  ACL_INT32,     ACL_UINT8,       ACL_INT16,
                                     ACL_UINT16, ACL_UINT32,  ACL_INT64, ACL_UINT64,    ACL_DOUBLE,      ACL_BOOL,
                                     ACL_BF16,   ACL_INT4,    ACL_UINT1, ACL_COMPLEX64, ACL_FLOAT8_E5M2, ACL_STRING};
  const uint8_t m = in.u8();
  if (m < 180) return expected;
  if (m < 245) return kDefined[m % (sizeof kDefined / sizeof kDefined[0])];
  static constexpr int kOdd[] = {999, -7, 64, 77, -1, 5, 14, 28, 42, 2147483647};
  return kOdd[m % (sizeof kOdd / sizeof kOdd[0])];
}

struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  bool tracked = false;           // from aclrtMalloc (gradkit checks storages against it)
  std::vector<uint8_t> before;    // snapshot taken before the operator call
  std::vector<uint8_t> writable;  // 1 where an output view may write
};

// What a created tensor looks at (host-side copy of the descriptor arguments).
struct View {
  int buffer = -1;        // index into World::buffers, -1 when the tensor has no backing we made
  size_t byteOffset = 0;  // data pointer - buffer start
  int64_t offset = 0;
  std::vector<int64_t> dims, strides;
  size_t elemSize = 0;
  int64_t numel = 0;
};

inline bool mulOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
inline bool addOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }

// Owns every descriptor and buffer of one fuzz input.
class World {
 public:
  static constexpr size_t kMaxBytes = size_t{4} << 20;       // memory for one input
  static constexpr int64_t kMaxRunNumel = int64_t{1} << 18;  // larger views are planned but not run
  bool tooBigToRun = false;

  World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World() {
    for (aclTensor* t : tensors_) aclDestroyTensor(t);
    for (aclScalar* s : scalars_) aclDestroyScalar(s);
    for (aclIntArray* a : arrays_) aclDestroyIntArray(a);
    for (Buffer& b : buffers) {
      if (b.tracked) {
        aclrtFree(b.data);
      } else {
        delete[] b.data;
      }
    }
  }

  std::vector<Buffer> buffers;

  // A buffer filled with bytes derived from the input; -1 when it would exceed the memory cap.
  int newBuffer(Input& in, size_t size, bool tracked) {
    if (size > kMaxBytes - used_) return -1;
    Buffer b;
    b.size = size;
    b.tracked = tracked;
    if (tracked) {
      void* p = nullptr;
      if (aclrtMalloc(&p, size == 0 ? 1 : size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return -1;
      b.data = static_cast<uint8_t*>(p);
    } else {
      b.data = new uint8_t[size == 0 ? 1 : size];
    }
    uint64_t x = in.u64() | 1;  // xorshift fill: cheap, deterministic, varied values (NaN, denormals, ...)
    for (size_t i = 0; i < size; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b.data[i] = static_cast<uint8_t>(x >> 24);
    }
    used_ += size;
    buffers.push_back(std::move(b));
    return static_cast<int>(buffers.size() - 1);
  }

  // Decodes one tensor. `expectedDtype` and `shape` are what the operator would accept; the input decides how far
  // to stray from them. Returns nullptr for a null argument or a rejected descriptor (the caller passes it on).
  aclTensor* tensor(Input& in, int expectedDtype, const std::vector<int64_t>& shape, View* viewOut = nullptr,
                    bool allowNull = true) {
    View v;
    if (allowNull && in.null()) return nullptr;
    const int dtype = pickDtype(in, expectedDtype);
    // Shape: the expected one, or a mutation of it, or a fresh one of any rank up to 17.
    const uint8_t shapeMode = in.u8();
    if (shapeMode < 170) {
      v.dims = shape;
    } else if (shapeMode < 215) {
      v.dims = shape;
      if (!v.dims.empty()) v.dims[in.u8() % v.dims.size()] = in.dim();
      if (in.oneIn(4)) v.dims.insert(v.dims.begin(), 1);
      if (in.oneIn(4) && !v.dims.empty()) v.dims.erase(v.dims.begin());
    } else {
      const uint8_t r = in.u8();
      const size_t rank = r < 220 ? r % 10 : r % 18;
      for (size_t d = 0; d < rank; ++d) v.dims.push_back(in.dim());
    }
    const size_t rank = v.dims.size();
    // Strides: row-major (given or nullptr), or each picked.
    const uint8_t strideMode = in.u8() % 8;
    bool stridesGiven = strideMode != 0;
    v.strides.assign(rank, 0);
    {
      int64_t s = 1;
      for (size_t d = rank; d-- > 0;) {
        v.strides[d] = s;
        int64_t next;
        s = mulOk(s, v.dims[d] > 0 ? v.dims[d] : 1, &next) ? next : 1;
      }
    }
    if (strideMode >= 5) {
      for (size_t d = 0; d < rank; ++d) {
        const uint8_t m = in.u8();
        if (m < 40) continue;  // keep row-major
        if (m < 100) {
          v.strides[d] = 0;
        } else if (m < 200) {
          v.strides[d] = m % 7;
        } else {
          v.strides[d] = in.dim();  // huge, negative
        }
      }
    }
    // Offset.
    const uint8_t om = in.u8();
    v.offset = om < 200 ? 0 : (om < 240 ? om % 9 : in.anyInt64());
    // Format.
    const uint8_t fm = in.u8();
    const int format = fm < 230 ? ACL_FORMAT_ND : (fm < 245 ? static_cast<int>(fm % 48) : static_cast<int>(in.u32()));

    v.elemSize = elementSize(dtype);
    // What aclCreateTensor must reject whatever the storage: plainly bad arguments.
    bool invalid = rank > 16 || v.elemSize == 0 || !knownFormat(format) || v.offset < 0;
    bool overflow = false;
    v.numel = 1;
    for (size_t d = 0; d < rank; ++d) {
      if (v.dims[d] < 0) invalid = true;
      if (stridesGiven && v.strides[d] < 0) invalid = true;
      if (v.dims[d] >= 0 && !mulOk(v.numel, v.dims[d], &v.numel)) overflow = true;
    }
    if (invalid || overflow) v.numel = -1;
    // The last element the view touches (in elements from the storage start).
    int64_t last = v.offset;
    if (v.numel > 0) {
      for (size_t d = 0; d < rank && !overflow; ++d) {
        int64_t step;
        if (!mulOk(v.dims[d] - 1, v.strides[d], &step) || !addOk(last, step, &last)) overflow = true;
      }
    }
    // Storage dims: exactly the view's extent, a little more, or anything.
    std::vector<int64_t> storage;
    const uint8_t sm = in.u8();
    if (sm < 200 && v.numel > 0 && !overflow && last < std::numeric_limits<int64_t>::max() - 8) {
      storage.push_back(last + 1 + (sm < 150 ? 0 : sm % 5));
    } else if (sm < 200) {
      storage.push_back(v.numel == 0 ? 0 : 1);
    } else {
      const size_t srank = in.u8() % 4;
      for (size_t d = 0; d < srank; ++d) storage.push_back(in.dim());
    }
    int64_t storageElements = 1;
    bool storageBad = false;
    for (int64_t s : storage) {
      if (s < 0) invalid = true;
      if (s >= 0 && !mulOk(storageElements, s, &storageElements)) storageBad = true;
    }
    int64_t storageBytes = 0;
    if (!storageBad && v.elemSize > 0 && !mulOk(storageElements, static_cast<int64_t>(v.elemSize), &storageBytes)) {
      storageBad = true;
    }
    const bool hasElements = v.numel > 0;
    const bool viewInStorage = !overflow && !storageBad && last < storageElements;
    if (hasElements && !viewInStorage) invalid = true;

    // Memory: a new buffer holding exactly the storage, a part of an earlier buffer (aliasing), a tracked block, or
    // null. When the storage cannot be backed, a 64-byte tracked block: gradkit must then reject a view with
    // elements (the tracked-memory rule), and never touch one without.
    void* data = nullptr;
    const uint8_t mm = in.u8();
    bool backed = false;
    bool tinyTracked = false;
    if (mm >= 248) {
      data = nullptr;
      if (hasElements) invalid = true;
    } else if (!storageBad && storageBytes >= 0 && static_cast<size_t>(storageBytes) <= kMaxBytes) {
      if (mm >= 150 && mm < 200 && !buffers.empty()) {
        const int b = in.u8() % static_cast<int>(buffers.size());
        const size_t at = buffers[b].size == 0 ? 0 : in.u16() % (buffers[b].size + 1);
        if (at + static_cast<size_t>(storageBytes) <= buffers[b].size) {
          v.buffer = b;
          v.byteOffset = at;
        }
      }
      if (v.buffer < 0) {
        v.buffer = newBuffer(in, static_cast<size_t>(storageBytes), mm >= 236);
        v.byteOffset = 0;
      }
      if (v.buffer >= 0) {
        data = buffers[v.buffer].data + v.byteOffset;
        backed = true;
      }
    }
    if (!backed && mm < 248) {
      v.buffer = newBuffer(in, 64, true);
      if (v.buffer < 0) return nullptr;
      data = buffers[v.buffer].data;
      v.byteOffset = 0;
      tinyTracked = true;
      if (hasElements) invalid = true;
    }
    if (tinyTracked && !hasElements) v.buffer = -1;  // nothing may be touched; the block is still checked

    aclDataType dt;
    std::memcpy(&dt, &dtype, sizeof dt);
    aclFormat fmt;
    std::memcpy(&fmt, &format, sizeof fmt);
    // Pass the rank as given; the dims array always has room for it (a null array only for rank 0).
    const int64_t* dimsPtr = v.dims.empty() && in.oneIn(2) ? nullptr : v.dims.data();
    aclTensor* t = aclCreateTensor(dimsPtr, rank, dt, stridesGiven ? v.strides.data() : nullptr, v.offset, fmt,
                                   storage.empty() && in.oneIn(2) ? nullptr : storage.data(), storage.size(), data);
    if (t == nullptr) return nullptr;
    tensors_.push_back(t);
    if (invalid) finding("aclCreateTensor accepted an invalid descriptor");
    if (v.numel > kMaxRunNumel) tooBigToRun = true;
    if (viewOut != nullptr) *viewOut = v;
    return t;
  }

  aclScalar* scalar(Input& in, int expectedDtype) {
    if (in.null()) return nullptr;
    const int dtype = pickDtype(in, expectedDtype);
    alignas(16) uint8_t value[16];
    in.bytes(value, sizeof value);
    if (in.oneIn(4)) {  // a float value from the special list
      const double d = in.prob();
      const float f = static_cast<float>(d);
      if (dtype == ACL_DOUBLE) std::memcpy(value, &d, sizeof d);
      if (dtype == ACL_FLOAT) std::memcpy(value, &f, sizeof f);
    }
    aclDataType dt;
    std::memcpy(&dt, &dtype, sizeof dt);
    aclScalar* s = aclCreateScalar(in.oneIn(32) ? nullptr : value, dt);
    if (s != nullptr) scalars_.push_back(s);
    return s;
  }

  // An int array: the given values, a mutation, or values of any kind; sometimes null.
  aclIntArray* intArray(Input& in, const std::vector<int64_t>& values, std::vector<int64_t>* used = nullptr) {
    if (in.null()) return nullptr;
    std::vector<int64_t> v = values;
    const uint8_t m = in.u8();
    if (m >= 170 && m < 215) {
      if (!v.empty()) v[in.u8() % v.size()] = in.dim();
    } else if (m >= 215) {
      v.clear();
      const size_t n = in.u8() % 12;
      for (size_t i = 0; i < n; ++i) v.push_back(in.dim());
    }
    aclIntArray* a = aclCreateIntArray(v.empty() && in.oneIn(2) ? nullptr : v.data(), v.size());
    if (a != nullptr) arrays_.push_back(a);
    if (used != nullptr) *used = v;
    return a;
  }

  // Marks the bytes an output view may write.
  void markWritable(const View& v) {
    if (v.buffer < 0 || v.numel <= 0) return;
    Buffer& b = buffers[v.buffer];
    b.writable.resize(b.size, 0);
    const size_t rank = v.dims.size();
    std::vector<int64_t> idx(rank, 0);
    for (int64_t n = 0; n < v.numel; ++n) {
      int64_t e = v.offset;
      for (size_t d = 0; d < rank; ++d) e += idx[d] * v.strides[d];
      const size_t at = v.byteOffset + static_cast<size_t>(e) * v.elemSize;
      for (size_t k = 0; k < v.elemSize && at + k < b.size; ++k) b.writable[at + k] = 1;
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < v.dims[d]) break;
        idx[d] = 0;
      }
    }
  }

  // The tensor's data pointer is not a multiple of its element size (aliasing at an odd byte offset).
  bool misaligned(const aclTensor* t, const View& v) const {
    if (t == nullptr || v.buffer < 0 || v.elemSize <= 1) return false;
    return reinterpret_cast<uintptr_t>(buffers[v.buffer].data + v.byteOffset) % v.elemSize != 0;
  }

  void snapshot() {
    for (Buffer& b : buffers) b.before.assign(b.data, b.data + b.size);
  }

  // Every byte outside the writable set is what it was at snapshot().
  void checkUnchanged(const char* what) const {
    for (const Buffer& b : buffers) {
      // The common case without a byte loop (an empty buffer has no bytes: memcmp may not see a null pointer).
      if (b.size == 0 || std::memcmp(b.data, b.before.data(), b.size) == 0) continue;
      for (size_t i = 0; i < b.size; ++i) {
        if (b.data[i] != b.before[i] && (b.writable.empty() || !b.writable[i])) finding(what);
      }
    }
  }

 private:
  size_t used_ = 0;
  std::vector<aclTensor*> tensors_;
  std::vector<aclScalar*> scalars_;
  std::vector<aclIntArray*> arrays_;
};

// The stream every target runs on, made once.
inline aclrtStream stream() {
  static aclrtStream s = [] {
    aclrtStream made = nullptr;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&made) != ACL_SUCCESS) {
      finding("cannot set up the device and stream");
    }
    return made;
  }();
  return s;
}

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

// The second half of the oracle: given the first phase's status, run the operator when it succeeded and check
// every rule. `outputs` are the views the run may write. `mustFail` is the target's own verdict.
inline void finish(World& world, aclnnStatus status, uint64_t workspaceSize, aclOpExecutor* executor, RunFn run,
                   const std::vector<View>& outputs, bool mustFail) {
  static const bool trace = std::getenv("GRADKIT_FUZZ_TRACE") != nullptr;  // one line per input, for debugging
  if (trace) {
    std::fprintf(stderr, "fuzz: status %d, workspace %llu, %s\n", status,
                 static_cast<unsigned long long>(workspaceSize),
                 status == ACLNN_SUCCESS ? (world.tooBigToRun ? "not run (too big)" : "run") : aclGetRecentErrMsg());
  }
  if (status != ACLNN_SUCCESS) {
    world.checkUnchanged("a failed GetWorkspaceSize changed memory");
    return;
  }
  if (mustFail) finding("GetWorkspaceSize accepted an invalid argument");
  if (executor == nullptr) finding("GetWorkspaceSize succeeded without an executor");
  world.checkUnchanged("GetWorkspaceSize changed memory");
  if (world.tooBigToRun || workspaceSize > World::kMaxBytes) {
    aclDestroyAclOpExecutor(executor);
    return;
  }
  for (const View& v : outputs) world.markWritable(v);
  std::unique_ptr<uint8_t[]> workspace(workspaceSize > 0 ? new uint8_t[workspaceSize] : nullptr);
  const aclnnStatus ran = run(workspace.get(), workspaceSize, executor, stream());
  if (ran != ACLNN_SUCCESS) finding("the run failed after a successful GetWorkspaceSize");
  if (aclrtSynchronizeStream(stream()) != ACL_SUCCESS) finding("aclrtSynchronizeStream failed after a good run");
  world.checkUnchanged("the run wrote outside its outputs' views");
}

}  // namespace fuzz

#endif  // GRADKIT_TESTS_FUZZ_FUZZ_COMMON_H_
