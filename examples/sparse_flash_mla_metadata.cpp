// aclnnSparseFlashMlaMetadata and aclnnSparseFlashMlaGradMetadata, called the way a CANN program does: init, device,
// stream, device memory, tensors, the two phases, synchronize, copy back.
//
// The forward call is the metadata call of upstream's aclnnSparseFlashMla example (CSA, TND q of 4 batches x 128 rows,
// PA_BBND kv with 4096 ori and 1024 cmp tokens per batch, 64 heads, top-k 512, ratio 4, band (127, 0)). Every query
// row then costs the same (one ori block, the 512 selected cmp keys), so the cube cores must split the 512 rows
// evenly. The program checks the image's invariants (enabled cores first, each starting where the previous ended,
// the last ending past the last batch, S2 bounds and flash-decode area 0, words 900.. untouched) and the even split;
// then the gradient's seven words for the one-row call of upstream's grad example program. It exits non-zero on a
// mismatch.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"

static constexpr int32_t kUntouched = 0x5A5A5A5A;

// One device buffer of INT32 values and the contiguous ND tensor over it.
struct DeviceInts {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
  std::vector<int32_t> host;
};

static int createInts(const std::vector<int32_t>& values, const std::vector<int64_t>& shape, DeviceInts* out) {
  out->host = values;
  const size_t bytes = values.size() * sizeof(int32_t);
  if (bytes > 0) {
    if (aclrtMalloc(&out->address, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
    if (aclrtMemcpy(out->address, bytes, values.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return 1;
  }
  out->tensor = aclCreateTensor(shape.data(), shape.size(), ACL_INT32, nullptr, 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->address);
  return out->tensor == nullptr;
}

static void download(DeviceInts* t) {
  aclrtMemcpy(t->host.data(), t->host.size() * sizeof(int32_t), t->address, t->host.size() * sizeof(int32_t),
              ACL_MEMCPY_DEVICE_TO_HOST);
}

static void destroy(DeviceInts* t) {
  aclDestroyTensor(t->tensor);
  if (t->address != nullptr) aclrtFree(t->address);
}

// Runs a planned executor (the metadata operators need no workspace).
static int runPlanned(aclnnStatus planned, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
                      aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream), const char* name) {
  if (planned != ACL_SUCCESS) {
    std::printf("%sGetWorkspaceSize failed: %s\n", name, aclGetRecentErrMsg());
    return 1;
  }
  if (workspaceSize != 0) std::printf("%s asked for a %llu-byte workspace\n", name, (unsigned long long)workspaceSize);
  const aclnnStatus ret = run(nullptr, 0, executor, stream);
  aclrtSynchronizeStream(stream);
  if (ret != ACL_SUCCESS) std::printf("%s failed: %s\n", name, aclGetRecentErrMsg());
  return ret != ACL_SUCCESS || workspaceSize != 0;
}

static int fails = 0;
static void expect(bool ok, const char* what, long long got, long long want) {
  if (ok) return;
  std::printf("MISMATCH %s: %lld, expected %lld\n", what, got, want);
  ++fails;
}

// The forward image: cube-core entries of 9 words (enable, bn2/m/s2 start, bn2/m/s2 end, workspace, max blocks).
static void checkForward(const std::vector<int32_t>& w, int64_t batches, int64_t rowsPerBatch) {
  int64_t cores = 0;
  while (cores < 36 && w[cores * 9] == 1) ++cores;
  for (int64_t c = cores; c < 36; ++c) expect(w[c * 9] == 0, "a core after the enabled ones", w[c * 9], 0);
  expect(cores > 0, "enabled cores", cores, 1);
  int64_t minRows = 1 << 30, maxRows = 0, prevB = 0, prevM = 0;
  for (int64_t c = 0; c < cores; ++c) {
    const int32_t* e = &w[c * 9];
    expect(e[1] == prevB && e[2] == prevM, "core start = previous end (bn2)", e[1], prevB);
    expect(e[3] == 0 && e[6] == 0 && e[7] == 0, "S2 bounds and workspace index", e[3] + e[6] + e[7], 0);
    const int64_t rows = (e[4] * rowsPerBatch + e[5]) - (e[1] * rowsPerBatch + e[2]);
    minRows = rows < minRows ? rows : minRows;
    maxRows = rows > maxRows ? rows : maxRows;
    prevB = e[4];
    prevM = e[5];
  }
  expect(prevB == batches && prevM == 0, "the last core ends past the last batch", prevB, batches);
  expect(maxRows - minRows <= 1, "rows per core differ by at most one", maxRows - minRows, 1);
  for (int64_t i = 324; i < 900; ++i) expect(w[i] == 0, "flash-decode area", w[i], 0);
  for (int64_t i = 900; i < 1024; ++i) expect(w[i] == kUntouched, "words 900.. untouched", w[i], kUntouched);
  std::printf("sparse flash mla metadata: %lld cube cores, %lld..%lld query rows each\n", (long long)cores,
              (long long)minRows, (long long)maxRows);
}

// The gradient's metadata for one TND query row: 2048 ori tokens (band (127, 0): 128 keys), 16 cmp tokens of ratio 128
// (all 16 visible). Words: total 1, former 1, remain 0, remain cores = cores - 1, used 1, 128, 16.
static int checkGrad(aclrtStream stream) {
  DeviceInts gradCuQ, cuOri, cuCmp, residual1, gradMetadata;
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  int bad = createInts({0, 1}, {2}, &gradCuQ) | createInts({0, 2048}, {2}, &cuOri) | createInts({0, 16}, {2}, &cuCmp);
  bad |= createInts({0}, {1}, &residual1) | createInts(std::vector<int32_t>(1024, kUntouched), {1024}, &gradMetadata);
  if (bad) return 1;
  const aclnnStatus ret = aclnnSparseFlashMlaGradMetadataGetWorkspaceSize(
      gradCuQ.tensor, cuOri.tensor, cuCmp.tensor, nullptr, nullptr, nullptr, residual1.tensor, nullptr, nullptr, 16, 1,
      512, 0, 0, 0, 0, 0, 0, 128, 4, 3, 127, 0, "TND", "TND", true, true, gradMetadata.tensor, &workspaceSize,
      &executor);
  if (runPlanned(ret, workspaceSize, executor, stream, aclnnSparseFlashMlaGradMetadata,
                 "aclnnSparseFlashMlaGradMetadata")) {
    return 1;
  }
  download(&gradMetadata);
  const std::vector<int32_t>& g = gradMetadata.host;
  const int32_t want[] = {1, 1, 0, -1, 1, 128, 16};
  for (int i = 0; i < 7; ++i) {
    if (i != 3) expect(g[i] == want[i], "grad metadata word", g[i], want[i]);
  }
  expect(g[3] == 23 || g[3] == 31, "grad remain cores (cube cores - 1)", g[3], 31);
  for (int i = 7; i < 1024; ++i) expect(g[i] == kUntouched, "grad words 7.. untouched", g[i], kUntouched);
  std::printf("sparse flash mla grad metadata: %d %d %d %d %d %d %d\n", g[0], g[1], g[2], g[3], g[4], g[5], g[6]);

  for (DeviceInts* t : {&gradCuQ, &cuOri, &cuCmp, &residual1, &gradMetadata}) destroy(t);
  return 0;
}

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 1;

  constexpr int64_t kBatch = 4, kRows = 128;
  DeviceInts cuQ, empty, seqOri, seqCmp, residual, metadata;
  int bad = createInts({0, 128, 256, 384, 512}, {kBatch + 1}, &cuQ);
  bad |= createInts({}, {0}, &empty);  // the example's empty cu_seqlens_ori/cmp and seqused_q: absent
  bad |= createInts({4096, 4096, 4096, 4096}, {kBatch}, &seqOri);
  bad |= createInts({1024, 1024, 1024, 1024}, {kBatch}, &seqCmp);
  bad |= createInts({0, 0, 0, 0}, {kBatch}, &residual);
  bad |= createInts(std::vector<int32_t>(1024, kUntouched), {1024}, &metadata);
  if (bad) return 1;

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  char tnd[] = "TND", paged[] = "PA_BBND";
  aclnnStatus ret = aclnnSparseFlashMlaMetadataGetWorkspaceSize(
      cuQ.tensor, empty.tensor, empty.tensor, empty.tensor, seqOri.tensor, seqCmp.tensor, residual.tensor, nullptr,
      nullptr, 64, 1, 512, kBatch, kRows, 8192, 1024, 0, 512, 4, 4, 3, 127, 0, tnd, paged, true, true, metadata.tensor,
      &workspaceSize, &executor);
  if (runPlanned(ret, workspaceSize, executor, stream, aclnnSparseFlashMlaMetadata, "aclnnSparseFlashMlaMetadata")) {
    return 1;
  }
  download(&metadata);
  checkForward(metadata.host, kBatch, kRows);

  const char* soc = aclrtGetSocName();
  if (soc != nullptr && std::strcmp(soc, "Ascend950") == 0) {
    if (checkGrad(stream) != 0) return 1;
  } else {  // the gradient's metadata exists on Ascend950 only
    std::printf("sparse flash mla grad metadata: skipped on %s\n", soc == nullptr ? "an unknown SoC" : soc);
  }

  for (DeviceInts* t : {&cuQ, &empty, &seqOri, &seqCmp, &residual, &metadata}) destroy(t);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  if (fails != 0) std::printf("%d mismatches\n", fails);
  return fails == 0 ? 0 : 1;
}
