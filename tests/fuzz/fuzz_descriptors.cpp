// libFuzzer target: the descriptor calls of acl_meta.h and the second phase's arguments (tests/fuzz/README.md).
//
// The first byte picks a mode:
//   tensor  aclCreateTensor with hostile dims, strides, offset, dtype, format, storage and data pointer (null,
//           misaligned, freed, a small tracked block, an exact host buffer); an accepted descriptor must be one this
//           target's own model of the rules accepts, and every getter must give back exactly what was passed in;
//           getters with null out-arguments must fail.
//   scalar  aclCreateScalar with any dtype over a buffer of exactly that dtype's size (or null).
//   array   aclCreateIntArray / FloatArray / BoolArray over exact buffers, or null, or absurd sizes.
//   launch  a valid ThresholdBackward first phase, then the second phase with a hostile workspace (null with a size,
//           too small, an interior pointer of a tracked block, a freed block, misaligned, a stale size) and stream
//           (default, own, destroyed, garbage): it must be rejected, or run and give the reference bits.
// A finding is a crash, a sanitizer report, or a broken rule above (FUZZ_REQUIRE traps). No executor may outlive an
// input.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_threshold_backward.h"
#include "fuzz_common.h"
#include "runtime/executor.h"

namespace {

using fuzz::Input;

/** Row-major strides as gradkit defines them (size-0 dims count as 1); false on int64 overflow. */
bool rowMajor(const std::vector<int64_t>& dims, std::vector<int64_t>* strides) {
  strides->assign(dims.size(), 1);
  int64_t running = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    (*strides)[d] = running;
    if (d > 0 && !fuzz::mulOk(running, dims[d] > 0 ? dims[d] : 1, &running)) return false;
  }
  return true;
}

bool product(const std::vector<int64_t>& dims, int64_t* out) {
  *out = 1;
  for (int64_t d : dims) {
    if (d < 0) return false;
  }
  for (int64_t d : dims) {
    if (!fuzz::mulOk(*out, d, out)) return false;
  }
  return true;
}

/** Tracked 64-byte blocks: one live, one freed (its address stays in gradkit's quarantine). */
struct TrackedBlocks {
  void* live = nullptr;
  void* freed = nullptr;
  TrackedBlocks() {
    aclrtMalloc(&live, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&freed, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtFree(freed);
  }
  ~TrackedBlocks() { aclrtFree(live); }
};

std::vector<int64_t> hostileDims(Input& in, size_t count) {
  std::vector<int64_t> dims(count);
  for (int64_t& d : dims) d = in.oneIn(8) ? in.anyInt64() : in.dim();
  return dims;
}

void fuzzTensor(Input& in) {
  const int dtype = fuzz::pickDtype(in, ACL_FLOAT);
  const uint8_t rankByte = in.u8();
  const size_t rank = rankByte < 200 ? rankByte % 5 : rankByte % 20;
  std::vector<int64_t> dims = hostileDims(in, rank);
  const bool nullDims = in.null();
  // Strides: default (null), row-major given, or hostile.
  const uint8_t strideMode = in.u8() % 4;
  std::vector<int64_t> strides;
  const bool nullStrides = strideMode == 0;
  if (strideMode == 1) {
    if (!rowMajor(dims, &strides)) strides = hostileDims(in, rank);
  } else if (!nullStrides) {
    strides.resize(rank);
    for (int64_t& s : strides) s = in.oneIn(3) ? in.anyInt64() : in.u8() % 9;
  }
  const int64_t offset = in.oneIn(4) ? in.anyInt64() : in.u8() % 16;
  static constexpr int kOddFormats[] = {999, -7, 5, 28, 48, 2147483647, -2};
  const uint8_t formatByte = in.u8();
  const int format = formatByte < 200 ? 2 : (formatByte < 230 ? formatByte % 48 : kOddFormats[formatByte % 7]);

  // Storage: exactly what the view needs (when that can be computed) or hostile dims.
  std::vector<int64_t> storage;
  int64_t numel = 0;
  const bool viewNumelOk = product(dims, &numel);
  std::vector<int64_t> effectiveStrides = strides;
  bool stridesOk = true;
  if (nullStrides) stridesOk = rowMajor(dims, &effectiveStrides);
  int64_t last = offset;  // the last element the view touches (when everything is valid)
  bool lastOk = viewNumelOk && stridesOk && offset >= 0;
  for (size_t d = 0; lastOk && d < rank; ++d) {
    int64_t step = 0;
    if (effectiveStrides[d] < 0 || !fuzz::mulOk(dims[d] - 1, effectiveStrides[d], &step) ||
        !fuzz::addOk(last, step, &last)) {
      lastOk = false;
    }
  }
  const uint8_t storageMode = in.u8() % 4;
  if (storageMode < 2 && lastOk && numel > 0 && last < std::numeric_limits<int64_t>::max() - 4) {
    storage = {last + 1 + (storageMode == 1 ? in.u8() % 4 : 0)};
  } else {
    storage = hostileDims(in, in.u8() % 4);
  }
  const bool nullStorage = in.null();

  // Data: exact host buffer, null, misaligned, a small tracked block, or a freed one.
  const size_t elementSize = fuzz::elementSize(dtype);
  int64_t storageNumel = 0;
  const bool storageNumelOk = !nullStorage && product(storage, &storageNumel);
  int64_t storageBytes = 0;
  const bool storageBytesOk =
      storageNumelOk && elementSize > 0 && fuzz::mulOk(storageNumel, static_cast<int64_t>(elementSize), &storageBytes);
  TrackedBlocks tracked;
  std::unique_ptr<uint64_t[]> host;
  void* data = nullptr;
  bool isTracked = false, isFreed = false;
  const uint8_t dataMode = in.u8() % 6;
  if (dataMode == 0 || dataMode == 1) {
    if (storageBytesOk && storageBytes <= (int64_t{1} << 20)) {
      host.reset(new uint64_t[static_cast<size_t>(storageBytes) / 8 + 2]);
      data = reinterpret_cast<unsigned char*>(host.get()) + (dataMode == 1 ? 1 + in.u8() % 7 : 0);
    }
  } else if (dataMode == 2) {
    data = tracked.live;
    isTracked = true;
  } else if (dataMode == 3) {
    data = static_cast<unsigned char*>(tracked.live) + 8 * (in.u8() % 8);
    isTracked = true;
  } else if (dataMode == 4) {
    data = tracked.freed;
    isFreed = true;
  }

  // This target's model of the rules (docs/reliability.md "Descriptors").
  bool valid = elementSize > 0 && fuzz::knownFormat(format) && rank <= 16 && !(nullDims && rank > 0) && viewNumelOk &&
               !nullStorage && storage.size() <= 16 && storageNumelOk && offset >= 0 && stridesOk;
  for (int64_t s : effectiveStrides) valid = valid && s >= 0;
  if (valid && numel > 0) {
    valid = lastOk && last < storageNumel && storageBytesOk && data != nullptr && !isFreed &&
            reinterpret_cast<uintptr_t>(data) % std::min<size_t>(elementSize, 8) == 0;
    if (valid && isTracked) {
      const auto room = static_cast<int64_t>(static_cast<unsigned char*>(tracked.live) + 64 + 32 -
                                             static_cast<unsigned char*>(data));  // 64 bytes usable: 64 + 32
      valid = storageBytes <= room;
    }
  }

  aclDataType dtypeArg;
  std::memcpy(&dtypeArg, &dtype, sizeof dtype);
  aclFormat formatArg;
  std::memcpy(&formatArg, &format, sizeof format);
  aclTensor* tensor =
      aclCreateTensor(nullDims ? nullptr : dims.data(), rank, dtypeArg, nullStrides ? nullptr : strides.data(), offset,
                      formatArg, nullStorage ? nullptr : storage.data(), nullStorage ? 1 : storage.size(), data);
  if (tensor == nullptr) {
    FUZZ_REQUIRE(!valid, "aclCreateTensor rejected a descriptor its rules allow");
    FUZZ_REQUIRE(std::strlen(aclGetRecentErrMsg()) > 0, "aclCreateTensor rejected without a message");
    return;
  }
  FUZZ_REQUIRE(valid, "aclCreateTensor accepted a descriptor its rules forbid");

  // Every getter gives back exactly what was passed in.
  int64_t* values = nullptr;
  uint64_t count = 0;
  FUZZ_REQUIRE(aclGetViewShape(tensor, &values, &count) == ACLNN_SUCCESS, "aclGetViewShape failed");
  FUZZ_REQUIRE(std::vector<int64_t>(values, values + count) == dims, "aclGetViewShape differs from viewDims");
  delete[] values;
  FUZZ_REQUIRE(aclGetViewStrides(tensor, &values, &count) == ACLNN_SUCCESS, "aclGetViewStrides failed");
  FUZZ_REQUIRE(std::vector<int64_t>(values, values + count) == effectiveStrides,
               "aclGetViewStrides differs from the strides given (or the row-major ones)");
  delete[] values;
  FUZZ_REQUIRE(aclGetStorageShape(tensor, &values, &count) == ACLNN_SUCCESS, "aclGetStorageShape failed");
  FUZZ_REQUIRE(std::vector<int64_t>(values, values + count) == storage, "aclGetStorageShape differs");
  delete[] values;
  int64_t gotOffset = -1;
  FUZZ_REQUIRE(aclGetViewOffset(tensor, &gotOffset) == ACLNN_SUCCESS && gotOffset == offset, "aclGetViewOffset");
  aclDataType gotDtype;
  FUZZ_REQUIRE(aclGetDataType(tensor, &gotDtype) == ACLNN_SUCCESS && std::memcmp(&gotDtype, &dtype, 4) == 0,
               "aclGetDataType");
  aclFormat gotFormat;
  FUZZ_REQUIRE(aclGetFormat(tensor, &gotFormat) == ACLNN_SUCCESS && std::memcmp(&gotFormat, &format, 4) == 0,
               "aclGetFormat");
  // Null out-arguments and a null tensor are errors, never a write through null.
  FUZZ_REQUIRE(aclGetViewShape(tensor, nullptr, &count) != ACLNN_SUCCESS, "aclGetViewShape(null)");
  FUZZ_REQUIRE(aclGetViewStrides(tensor, &values, nullptr) != ACLNN_SUCCESS, "aclGetViewStrides(null)");
  FUZZ_REQUIRE(aclGetStorageShape(nullptr, &values, &count) != ACLNN_SUCCESS, "aclGetStorageShape(null)");
  FUZZ_REQUIRE(aclGetViewOffset(tensor, nullptr) != ACLNN_SUCCESS, "aclGetViewOffset(null)");
  FUZZ_REQUIRE(aclGetDataType(nullptr, &gotDtype) != ACLNN_SUCCESS, "aclGetDataType(null)");
  FUZZ_REQUIRE(aclGetFormat(tensor, nullptr) != ACLNN_SUCCESS, "aclGetFormat(null)");
  aclDestroyTensor(tensor);
}

void fuzzScalar(Input& in) {
  const int dtype = fuzz::pickDtype(in, in.oneIn(2) ? ACL_FLOAT : ACL_INT64);
  const size_t size = fuzz::elementSize(dtype);
  const bool null = in.null();
  // Exactly the dtype's size (1 byte for a dtype without one): ASan sees any read past it.
  std::unique_ptr<unsigned char[]> value(new unsigned char[size > 0 ? size : 1]);
  in.bytes(value.get(), size > 0 ? size : 1);
  aclDataType dtypeArg;
  std::memcpy(&dtypeArg, &dtype, sizeof dtype);
  aclScalar* scalar = aclCreateScalar(null ? nullptr : value.get(), dtypeArg);
  if (scalar == nullptr) return;
  FUZZ_REQUIRE(!null && size > 0, "aclCreateScalar accepted a null value or a dtype without a size");
  aclDestroyScalar(scalar);
}

template <class T, class Create, class Destroy>
void fuzzArray(Input& in, Create create, Destroy destroy) {
  const size_t length = in.u8() % 40;
  std::unique_ptr<T[]> values(new T[length > 0 ? length : 1]);
  for (size_t i = 0; i < length; ++i) values[i] = static_cast<T>(in.u8() & (sizeof(T) == 1 ? 1 : 0xFF));
  const bool null = in.null();
  uint64_t size = length;
  const uint8_t sizeMode = in.u8() % 8;
  // Sizes larger than the buffer only where no buffer can have them (the API cannot see a smaller lie).
  static constexpr uint64_t kAbsurd[] = {uint64_t{1} << 62, UINT64_MAX, (uint64_t{1} << 48) + 1, uint64_t{1} << 63};
  if (sizeMode == 7) size = kAbsurd[in.u8() % 4];
  if (sizeMode == 6) size = 0;
  const T* pointer = null ? nullptr : values.get();
  auto* array = create(pointer, size);
  const bool valid = (pointer != nullptr || size == 0) && size <= (uint64_t{1} << 48) / sizeof(T);
  FUZZ_REQUIRE((array != nullptr) == valid, "array creation disagrees with its rules");
  if (array != nullptr) destroy(array);
}

/** ThresholdBackward over 37 strided FLOATs (staged: a workspace), run with a hostile workspace and stream. */
void fuzzLaunch(Input& in) {
  constexpr int64_t kN = 37;
  std::vector<float> grad(2 * kN), self(2 * kN), out(kN), expected(kN);
  for (int64_t i = 0; i < 2 * kN; ++i) {
    grad[i] = static_cast<float>(i) * 0.25f - 3.0f;
    self[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  }
  const int64_t dims[1] = {kN}, strided[1] = {2}, storage[1] = {2 * kN};
  aclTensor* gradT = aclCreateTensor(dims, 1, ACL_FLOAT, strided, 0, ACL_FORMAT_ND, storage, 1, grad.data());
  aclTensor* selfT = aclCreateTensor(dims, 1, ACL_FLOAT, strided, 0, ACL_FORMAT_ND, storage, 1, self.data());
  aclTensor* outT = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, out.data());
  float value = 0.5f;
  aclScalar* threshold = aclCreateScalar(&value, ACL_FLOAT);
  for (int64_t i = 0; i < kN; ++i) expected[i] = self[2 * i] <= value ? 0.0f : grad[2 * i];

  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  FUZZ_REQUIRE(aclnnThresholdBackwardGetWorkspaceSize(gradT, selfT, threshold, outT, &size, &executor) == 0,
               "the valid first phase failed");
  FUZZ_REQUIRE(size > 0, "the strided call needs a workspace");
  const bool repeatable = in.oneIn(3);
  if (repeatable) FUZZ_REQUIRE(aclSetAclOpExecutorRepeatable(executor) == 0, "aclSetAclOpExecutorRepeatable");

  // Workspace memory: a tracked block of `size + extra` bytes, used from `shift` on.
  const uint64_t extra = in.u8() % 128, shift = in.u8() % 160;
  void* block = nullptr;
  FUZZ_REQUIRE(aclrtMalloc(&block, size + extra, ACL_MEM_MALLOC_HUGE_FIRST) == 0, "aclrtMalloc");
  std::vector<uint64_t> hostWorkspace(size / 8 + 4);
  void* workspace = block;
  bool freedWorkspace = false;
  switch (in.u8() % 7) {
    case 0:
      break;
    case 1:
      workspace = nullptr;
      break;
    case 2:
      workspace = static_cast<unsigned char*>(block) + shift;  // an interior pointer, maybe without room
      break;
    case 3: {
      void* freed = nullptr;
      FUZZ_REQUIRE(aclrtMalloc(&freed, size, ACL_MEM_MALLOC_HUGE_FIRST) == 0, "aclrtMalloc");
      aclrtFree(freed);
      workspace = static_cast<unsigned char*>(freed) + (in.oneIn(2) ? shift % size : 0);
      freedWorkspace = true;
      break;
    }
    case 4:
      workspace = hostWorkspace.data();  // untracked host memory of enough size
      break;
    case 5:
      workspace = reinterpret_cast<unsigned char*>(hostWorkspace.data()) + 1 + in.u8() % 7;  // misaligned
      break;
    default:
      workspace = static_cast<unsigned char*>(block) + 1 + in.u8() % 7;  // misaligned, tracked
      break;
  }
  static constexpr uint64_t kSizes[] = {0, 1, UINT64_MAX, uint64_t{1} << 63};
  uint64_t sizeArg = size;
  switch (in.u8() % 6) {
    case 1:
      sizeArg = size - 1;
      break;
    case 2:
      sizeArg = size + extra;
      break;
    case 3:
      sizeArg = kSizes[in.u8() % 4];
      break;
    default:
      break;
  }
  aclrtStream own = nullptr;
  FUZZ_REQUIRE(aclrtCreateStream(&own) == 0, "aclrtCreateStream");
  aclrtStream destroyed = nullptr;
  FUZZ_REQUIRE(aclrtCreateStream(&destroyed) == 0, "aclrtCreateStream");
  aclrtDestroyStream(destroyed);
  int local = 0;
  aclrtStream stream = nullptr;
  switch (in.u8() % 5) {
    case 1:
      stream = own;
      break;
    case 2:
      stream = destroyed;
      break;
    case 3:
      stream = reinterpret_cast<aclrtStream>(&local);
      break;
    case 4:
      stream = reinterpret_cast<aclrtStream>(in.u64());
      break;
    default:
      break;
  }

  std::fill(out.begin(), out.end(), -1234.5f);
  const aclnnStatus status = aclnnThresholdBackward(workspace, sizeArg, executor, stream);
  if (status == ACLNN_SUCCESS) {
    FUZZ_REQUIRE(!freedWorkspace, "the second phase accepted a freed workspace");
    FUZZ_REQUIRE(workspace != nullptr && sizeArg >= size, "the second phase accepted a missing or small workspace");
    FUZZ_REQUIRE(aclrtSynchronizeStream(stream) == 0, "the run after an accepted second phase failed");
    FUZZ_REQUIRE(std::memcmp(out.data(), expected.data(), sizeof(float) * kN) == 0, "wrong result");
  } else {
    FUZZ_REQUIRE(std::strlen(aclGetRecentErrMsg()) > 0, "a rejected second phase without a message");
    for (float v : out) FUZZ_REQUIRE(v == -1234.5f, "a rejected second phase wrote to out");
  }
  // A rejected (or repeatable) executor is still the caller's: destroying it must work.
  if (status != ACLNN_SUCCESS || repeatable) {
    FUZZ_REQUIRE(aclDestroyAclOpExecutor(executor) == ACLNN_SUCCESS, "destroying the executor failed");
  }
  aclrtSynchronizeStream(own);
  aclrtDestroyStream(own);
  aclrtSynchronizeStream(nullptr);
  aclrtFree(block);
  aclDestroyTensor(gradT);
  aclDestroyTensor(selfT);
  aclDestroyTensor(outT);
  aclDestroyScalar(threshold);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const size_t executorsBefore = gradkit::liveExecutorCount();
  switch (in.u8() % 6) {
    case 0:
    case 1:
      fuzzTensor(in);
      break;
    case 2:
      fuzzScalar(in);
      break;
    case 3:
      fuzzArray<int64_t>(in, aclCreateIntArray, aclDestroyIntArray);
      break;
    case 4:
      if (in.oneIn(2)) {
        fuzzArray<float>(in, aclCreateFloatArray, aclDestroyFloatArray);
      } else {
        fuzzArray<bool>(in, aclCreateBoolArray, aclDestroyBoolArray);
      }
      break;
    default:
      fuzzLaunch(in);
      break;
  }
  FUZZ_REQUIRE(gradkit::liveExecutorCount() == executorsBefore, "an executor outlived its input");
  aclGetRecentErrMsg();  // keep the per-thread text short
  return 0;
}
