// aclnnCompressor, called the way a CANN program does (seed 003's scenario): C4A (D = 512, coff = 2, cmp_ratio = 4),
// BSH x [B = 1, S = 4, H = 4096] in BF16, start_pos 0, a paged state cache (cacheMode 1, block_size 128, the block
// table pointing at block 1: block 0 is the "do not write" block), gradEnabled true so that softmaxScore and kv (the
// inputs of aclnnCompressorGrad) come out too. It prints a few values and checks every output against a
// double-precision evaluation of the formulas written out below (the four tokens fill one block; the block before
// position 0 is padding: weight 0); it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_compressor.h"

#define CHECK_RET(cond, ...) \
  do {                       \
    if (!(cond)) {           \
      __VA_ARGS__;           \
    }                        \
  } while (0)

#define LOG_PRINT(...)        \
  do {                        \
    std::printf(__VA_ARGS__); \
  } while (0)

static constexpr int64_t kB = 1, kS = 4, kH = 4096, kD = 512, kCoff = 2, kCmpRatio = 4;
static constexpr int64_t kC = kCoff * kD;                           // channels of wkv / wgate / ape rows
static constexpr int64_t kN = kCoff * kCmpRatio;                    // rows pooled into one compressed entry
static constexpr int64_t kRows = (kS + kCmpRatio - 1) / kCmpRatio;  // compressed rows per batch
static constexpr int64_t kBlockSize = 128, kBlockNum = 2;

static int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

// bfloat16 is the top half of a float; rounding to nearest, ties to even (NaN does not occur here).
static uint16_t floatToBf16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

static float bf16ToFloat(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result = 0;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

// A small deterministic generator, so that the program needs no library for its data.
struct Lcg {
  uint64_t state;
  double uniform(double low, double high) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return low + (high - low) * static_cast<double>(state >> 11) / 9007199254740992.0;
  }
};

static int initRuntime(int32_t deviceId, aclrtStream* stream) {
  aclError ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
  return 0;
}

// Copies host data to new device memory and describes it as a contiguous ND tensor.
template <typename T>
static int createTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, void** deviceAddr,
                        aclDataType dataType, aclTensor** tensor) {
  const size_t size = static_cast<size_t>(elementCount(shape)) * sizeof(T);
  aclError ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), *deviceAddr);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
  return 0;
}

template <typename T>
static int copyBack(std::vector<T>& host, const void* device) {
  const size_t size = host.size() * sizeof(T);
  aclError ret = aclrtMemcpy(host.data(), size, device, size, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  return 0;
}

// The compressed entry in double precision: KV = x wkv^T, Z = x wgate^T + ape[p mod 4] per token; the entry pools
// the 8 interleaved rows (row 2r: the previous block, here padding before position 0; row 2r + 1: token r) with a
// softmax per channel over the rows.
struct Reference {
  std::vector<double> kv, z;                // [S, C] projections (z with the APE)
  std::vector<double> cmpKv, score, block;  // [D], [N, D], [N, D]
};

static Reference reference(const std::vector<uint16_t>& x, const std::vector<uint16_t>& wkv,
                           const std::vector<uint16_t>& wgate, const std::vector<float>& ape) {
  Reference r{std::vector<double>(kS * kC), std::vector<double>(kS * kC), std::vector<double>(kD),
              std::vector<double>(kN * kD, 0.0), std::vector<double>(kN * kD, 0.0)};
  for (int64_t t = 0; t < kS; t++) {
    for (int64_t c = 0; c < kC; c++) {
      double kvSum = 0, gateSum = 0;
      for (int64_t h = 0; h < kH; h++) {
        const double xv = bf16ToFloat(x[t * kH + h]);
        kvSum += xv * bf16ToFloat(wkv[c * kH + h]);
        gateSum += xv * bf16ToFloat(wgate[c * kH + h]);
      }
      r.kv[t * kC + c] = kvSum;
      r.z[t * kC + c] = gateSum + ape[(t % kCmpRatio) * kC + c];
    }
  }
  for (int64_t d = 0; d < kD; d++) {
    double top = -INFINITY, sum = 0, pooled = 0;
    for (int64_t t = 0; t < kS; t++) top = std::fmax(top, r.z[t * kC + kD + d]);  // the cur half: channels D..2D
    for (int64_t t = 0; t < kS; t++) sum += std::exp(r.z[t * kC + kD + d] - top);
    for (int64_t t = 0; t < kS; t++) {
      const double weight = std::exp(r.z[t * kC + kD + d] - top) / sum;
      r.score[(2 * t + 1) * kD + d] = weight;
      r.block[(2 * t + 1) * kD + d] = r.kv[t * kC + kD + d];
      pooled += weight * r.kv[t * kC + kD + d];
    }
    r.cmpKv[d] = pooled;
  }
  return r;
}

// Counts values farther from the reference than `tolerance` and prints the first few.
static int countWrong(const char* name, const std::vector<float>& got, const std::vector<double>& expected,
                      double relative, double absolute) {
  int wrong = 0;
  for (size_t i = 0; i < expected.size(); i++) {
    const double tolerance = relative * std::fabs(expected[i]) + absolute;
    if (std::fabs(got[i] - expected[i]) <= tolerance) continue;
    if (wrong++ < 3) LOG_PRINT("  %s[%zu] = %.9g, expected %.9g\n", name, i, got[i], expected[i]);
  }
  return wrong;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  // Inputs: x in [-1, 1], weights scaled by 1/sqrt(H) so that the projections are of order 1, the cache filled with
  // 0.5 (block 1 receives the four tokens, block 0 must stay as it is).
  Lcg random{20260003};
  std::vector<uint16_t> xHost(kB * kS * kH), wkvHost(kC * kH), wgateHost(kC * kH);
  for (auto& value : xHost) value = floatToBf16(static_cast<float>(random.uniform(-1, 1)));
  const double scale = 1.7 / std::sqrt(static_cast<double>(kH));
  for (auto& value : wkvHost) value = floatToBf16(static_cast<float>(scale * random.uniform(-1, 1)));
  for (auto& value : wgateHost) value = floatToBf16(static_cast<float>(scale * random.uniform(-1, 1)));
  std::vector<float> apeHost(kCmpRatio * kC);
  for (auto& value : apeHost) value = static_cast<float>(random.uniform(-0.5, 0.5));
  std::vector<float> cacheHost(kBlockNum * kBlockSize * 2 * kC, 0.5f);
  std::vector<int32_t> tableHost = {1};  // [B, ceil(Smax / block_size)] = [1, 1]
  std::vector<int32_t> startPosHost = {0};
  std::vector<uint16_t> cmpKvHost(kB * kRows * kD, 0);
  std::vector<float> scoreHost(kB * kRows * kN * kD, 0), kvHost(kB * kRows * kN * kD, 0);

  void* xDevice = nullptr;
  void* wkvDevice = nullptr;
  void* wgateDevice = nullptr;
  void* cacheDevice = nullptr;
  void* apeDevice = nullptr;
  void* tableDevice = nullptr;
  void* startPosDevice = nullptr;
  void* cmpKvDevice = nullptr;
  void* scoreDevice = nullptr;
  void* kvDevice = nullptr;
  aclTensor* x = nullptr;
  aclTensor* wkv = nullptr;
  aclTensor* wgate = nullptr;
  aclTensor* cache = nullptr;
  aclTensor* ape = nullptr;
  aclTensor* table = nullptr;
  aclTensor* startPos = nullptr;
  aclTensor* cmpKv = nullptr;
  aclTensor* score = nullptr;
  aclTensor* kv = nullptr;
  ret = createTensor(xHost, {kB, kS, kH}, &xDevice, ACL_BF16, &x);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(wkvHost, {kC, kH}, &wkvDevice, ACL_BF16, &wkv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(wgateHost, {kC, kH}, &wgateDevice, ACL_BF16, &wgate);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(cacheHost, {kBlockNum, kBlockSize, 2 * kC}, &cacheDevice, ACL_FLOAT, &cache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(apeHost, {kCmpRatio, kC}, &apeDevice, ACL_FLOAT, &ape);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(tableHost, {kB, 1}, &tableDevice, ACL_INT32, &table);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(startPosHost, {kB}, &startPosDevice, ACL_INT32, &startPos);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(cmpKvHost, {kB, kRows, kD}, &cmpKvDevice, ACL_BF16, &cmpKv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(scoreHost, {kB, kRows, kN, kD}, &scoreDevice, ACL_FLOAT, &score);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(kvHost, {kB, kRows, kN, kD}, &kvDevice, ACL_FLOAT, &kv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // Phase 1: check and plan. cacheMode 1 (paged), stateCacheStrideDim0 = the cache's dim-0 stride, gradEnabled.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnCompressorGetWorkspaceSize(x, wkv, wgate, cache, ape, table, nullptr, nullptr, startPos, kCmpRatio, kCoff,
                                        1, kBlockSize * 2 * kC, true, cmpKv, score, kv, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnCompressorGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  // Phase 2: enqueue on the stream, then wait.
  ret = aclnnCompressor(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnCompressor failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

  std::vector<float> cacheAfter(cacheHost.size());
  ret = copyBack(cmpKvHost, cmpKvDevice) | copyBack(scoreHost, scoreDevice) | copyBack(kvHost, kvDevice) |
        copyBack(cacheAfter, cacheDevice);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT("workspace: %llu bytes\n", static_cast<unsigned long long>(workspaceSize));
  LOG_PRINT("cmpKv[0][0][0..3]        = %f %f %f %f\n", bf16ToFloat(cmpKvHost[0]), bf16ToFloat(cmpKvHost[1]),
            bf16ToFloat(cmpKvHost[2]), bf16ToFloat(cmpKvHost[3]));
  LOG_PRINT("softmaxScore[..][0..7][0] = %f %f %f %f %f %f %f %f\n", scoreHost[0], scoreHost[kD], scoreHost[2 * kD],
            scoreHost[3 * kD], scoreHost[4 * kD], scoreHost[5 * kD], scoreHost[6 * kD], scoreHost[7 * kD]);
  LOG_PRINT("kv[..][1][0..3]          = %f %f %f %f\n", kvHost[kD], kvHost[kD + 1], kvHost[kD + 2], kvHost[kD + 3]);
  const float* written = &cacheAfter[kBlockSize * 2 * kC];  // block 1, position 0
  LOG_PRINT("state cache block 1, position 0: kv_state[0] = %f, score_state[0] = %f\n", written[0], written[kC]);

  // Self-check: cmpKv within one BF16 rounding, softmaxScore and kv (fp32) within fp32 noise of the double values,
  // the padding rows (even rows: the block before position 0) exactly 0, the cache rows of the four tokens written,
  // block 0 and the rest of block 1 untouched.
  const Reference r = reference(xHost, wkvHost, wgateHost, apeHost);
  std::vector<float> cmpKvValues(kD);
  for (int64_t d = 0; d < kD; d++) cmpKvValues[d] = bf16ToFloat(cmpKvHost[d]);
  int wrong = countWrong("cmpKv", cmpKvValues, r.cmpKv, 1.0 / 256 + 1e-5, 1e-6);
  wrong += countWrong("softmaxScore", scoreHost, r.score, 1e-5, 1e-7);
  wrong += countWrong("kv", kvHost, r.block, 1e-5, 1e-5);
  for (int64_t row = 0; row < kN; row += 2) {
    for (int64_t d = 0; d < kD; d++) wrong += scoreHost[row * kD + d] != 0.0f || kvHost[row * kD + d] != 0.0f;
  }
  std::vector<float> tokenRows(kS * 2 * kC);
  std::vector<double> expectedRows(kS * 2 * kC);
  for (int64_t t = 0; t < kS; t++) {
    for (int64_t c = 0; c < kC; c++) {
      tokenRows[t * 2 * kC + c] = written[t * 2 * kC + c];
      tokenRows[t * 2 * kC + kC + c] = written[t * 2 * kC + kC + c];
      expectedRows[t * 2 * kC + c] = r.kv[t * kC + c];
      expectedRows[t * 2 * kC + kC + c] = r.z[t * kC + c];
    }
  }
  wrong += countWrong("stateCache", tokenRows, expectedRows, 1e-5, 1e-5);
  for (size_t i = 0; i < cacheAfter.size(); i++) {
    const bool token =
        i >= static_cast<size_t>(kBlockSize * 2 * kC) && i < static_cast<size_t>((kBlockSize + kS) * 2 * kC);
    if (!token) wrong += cacheAfter[i] != 0.5f;
  }

  aclDestroyTensor(x);
  aclDestroyTensor(wkv);
  aclDestroyTensor(wgate);
  aclDestroyTensor(cache);
  aclDestroyTensor(ape);
  aclDestroyTensor(table);
  aclDestroyTensor(startPos);
  aclDestroyTensor(cmpKv);
  aclDestroyTensor(score);
  aclDestroyTensor(kv);
  for (void* device : {xDevice, wkvDevice, wgateDevice, cacheDevice, apeDevice, tableDevice, startPosDevice,
                       cmpKvDevice, scoreDevice, kvDevice}) {
    aclrtFree(device);
  }
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "compressor example: all checked results correct" : "compressor example: WRONG");
  return wrong == 0 ? 0 : 1;
}
