// aclnnLightningIndexerV2Metadata and aclnnLightningIndexerV2, called the way a CANN program does: init, device,
// stream, device memory, tensors, the two phases of each, synchronize, copy back.
// Part 1 is upstream's example scenario (B = 2, S1 = 64, N1 = 16, D = 128, fp16 all ones, 130 original keys
// compressed by 4 into S2 = 32 with 2 tokens left over, top 32, right-down causal), with the cmpResidualK tensor the
// metadata call needs (upstream's own program leaves it out there and stops with 161002): every visible key scores
// 16 * 128 = 2048, so row s of a batch holds 0, 1, ..., c_s - 1 then -1, with c_s = min(32, (67 + s) / 4).
// Part 2 (TND, 2 batches of 5 and 3 query rows, N1 = 4, fp16 small integers, no mask) has distinct scores: the program
// computes them in double and checks the order, the values and the index offset. It exits non-zero on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"

namespace {

struct DeviceTensor {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
  size_t bytes = 0;
};

template <class T>
int createTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype, DeviceTensor* out) {
  out->bytes = host.size() * sizeof(T);
  if (aclrtMalloc(&out->address, out->bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
  if (aclrtMemcpy(out->address, out->bytes, host.data(), out->bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS)
    return 1;
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->address);
  return out->tensor == nullptr;
}

template <class T>
void download(std::vector<T>& host, const DeviceTensor& device) {
  aclrtMemcpy(host.data(), host.size() * sizeof(T), device.address, device.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
}

void destroy(DeviceTensor& t) {
  if (t.tensor != nullptr) aclDestroyTensor(t.tensor);
  if (t.address != nullptr) aclrtFree(t.address);
  t = {};
}

int runPlanned(aclnnStatus planned, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
               aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream), const char* name) {
  if (planned != ACL_SUCCESS) {
    std::printf("%sGetWorkspaceSize failed (%d): %s\n", name, planned, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspaceSize > 0) aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
  const aclnnStatus ret = run(workspace, workspaceSize, executor, stream);
  const aclError synced = aclrtSynchronizeStream(stream);
  if (workspace != nullptr) aclrtFree(workspace);
  if (ret != ACL_SUCCESS || synced != ACL_SUCCESS) {
    std::printf("%s failed: %s\n", name, aclGetRecentErrMsg());
    return 1;
  }
  return 0;
}

// The fp16 bits of a small integer (exact).
uint16_t halfOf(int value) {
  if (value == 0) return 0;
  const uint16_t sign = value < 0 ? 0x8000 : 0;
  int magnitude = std::abs(value), exponent = 0;
  while ((1 << (exponent + 1)) <= magnitude) ++exponent;
  const int mantissa = (magnitude << (10 - exponent)) & 0x3FF;  // magnitude < 2048
  return static_cast<uint16_t>(sign | ((exponent + 15) << 10) | mantissa);
}

int upstreamScenario(aclrtStream stream) {
  const int64_t B = 2, S1 = 64, N1 = 16, D = 128, S2 = 32, topk = 32, cmpRatio = 4, residual = 2;
  DeviceTensor q, k, w, res, metadata, indices, values;
  int bad = createTensor(std::vector<uint16_t>(B * S1 * N1 * D, 0x3C00), {B, S1, N1, D}, ACL_FLOAT16, &q);
  bad |= createTensor(std::vector<uint16_t>(B * S2 * D, 0x3C00), {B, S2, 1, D}, ACL_FLOAT16, &k);
  bad |= createTensor(std::vector<float>(B * S1 * N1, 1.0f), {B, S1, N1}, ACL_FLOAT, &w);
  bad |= createTensor(std::vector<int32_t>(B, residual), {B}, ACL_INT32, &res);
  bad |= createTensor(std::vector<int32_t>(1024, 0), {1024}, ACL_INT32, &metadata);
  bad |= createTensor(std::vector<int32_t>(B * S1 * topk, 0), {B, S1, 1, topk}, ACL_INT32, &indices);
  bad |= createTensor(std::vector<float>(B * S1 * topk, 0.0f), {B, S1, 1, topk}, ACL_FLOAT, &values);
  if (bad != 0) return 1;
  char bsnd[] = "BSND";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus planned = aclnnLightningIndexerV2MetadataGetWorkspaceSize(
      nullptr, nullptr, nullptr, nullptr, res.tensor, N1, 1, D, topk, B, S1, S2, bsnd, bsnd, 3, cmpRatio,
      metadata.tensor, &workspaceSize, &executor);
  if (runPlanned(planned, workspaceSize, executor, stream, aclnnLightningIndexerV2Metadata,
                 "aclnnLightningIndexerV2Metadata") != 0) {
    return 1;
  }
  planned = aclnnLightningIndexerV2GetWorkspaceSize(
      q.tensor, k.tensor, w.tensor, nullptr, nullptr, nullptr, nullptr, res.tensor, nullptr, nullptr, metadata.tensor,
      topk, -1, bsnd, bsnd, 3, cmpRatio, 1, indices.tensor, values.tensor, &workspaceSize, &executor);
  if (runPlanned(planned, workspaceSize, executor, stream, aclnnLightningIndexerV2, "aclnnLightningIndexerV2") != 0) {
    return 1;
  }
  std::vector<int32_t> gotIndices(B * S1 * topk);
  std::vector<float> gotValues(B * S1 * topk);
  download(gotIndices, indices);
  download(gotValues, values);
  int64_t wrong = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < S1; ++s) {
      const int64_t visible = std::min<int64_t>(topk, (S2 * cmpRatio + residual - S1 + s + 1) / cmpRatio);
      for (int64_t j = 0; j < topk; ++j) {
        const int64_t n = (b * S1 + s) * topk + j;
        const int32_t index = j < visible ? static_cast<int32_t>(j) : -1;
        const float value = j < visible ? 2048.0f : -INFINITY;
        if (gotIndices[n] != index || gotValues[n] != value) ++wrong;
      }
    }
  }
  std::printf(
      "upstream scenario: row 0 sees %d keys, row 63 sees %d; %lld of %lld slots wrong\n",
      static_cast<int>(std::count_if(gotIndices.begin(), gotIndices.begin() + topk, [](int32_t i) { return i >= 0; })),
      static_cast<int>(std::count_if(gotIndices.begin() + 63 * topk, gotIndices.begin() + 64 * topk,
                                     [](int32_t i) { return i >= 0; })),
      static_cast<long long>(wrong), static_cast<long long>(B * S1 * topk));
  for (DeviceTensor* t : {&q, &k, &w, &res, &metadata, &indices, &values}) destroy(*t);
  return wrong != 0;
}

int distinctScores(aclrtStream stream) {
  const int64_t N1 = 4, D = 128, topk = 4, T1 = 8, T2 = 7;
  const std::vector<int32_t> cuQ = {0, 5, 8}, cuK = {0, 4, 7};
  std::vector<int> qi(T1 * N1 * D), ki(T2 * D);
  for (size_t i = 0; i < qi.size(); ++i) qi[i] = static_cast<int>((i * 7 + 3) % 11) - 5;
  for (size_t i = 0; i < ki.size(); ++i) ki[i] = static_cast<int>((i * 5 + 1) % 9) - 4;
  std::vector<float> wv(T1 * N1);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.25f * static_cast<float>(static_cast<int>(i % 5) - 1);
  std::vector<uint16_t> qh(qi.size()), kh(ki.size());
  std::transform(qi.begin(), qi.end(), qh.begin(), halfOf);
  std::transform(ki.begin(), ki.end(), kh.begin(), halfOf);
  const std::vector<int32_t> offsets = {100, 100, 100, 100, 100, 0, 0, 0};
  DeviceTensor q, k, w, cq, ck, offset, metadata, indices, values;
  int bad = createTensor(qh, {T1, N1, D}, ACL_FLOAT16, &q);
  bad |= createTensor(kh, {T2, 1, D}, ACL_FLOAT16, &k);
  bad |= createTensor(wv, {T1, N1}, ACL_FLOAT, &w);
  bad |= createTensor(cuQ, {3}, ACL_INT32, &cq);
  bad |= createTensor(cuK, {3}, ACL_INT32, &ck);
  bad |= createTensor(offsets, {T1, 1}, ACL_INT32, &offset);
  bad |= createTensor(std::vector<int32_t>(1024, 0), {1024}, ACL_INT32, &metadata);
  bad |= createTensor(std::vector<int32_t>(T1 * topk, 0), {T1, 1, topk}, ACL_INT32, &indices);
  bad |= createTensor(std::vector<float>(T1 * topk, 0.0f), {T1, 1, topk}, ACL_FLOAT, &values);
  if (bad != 0) return 1;
  char tnd[] = "TND";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus planned = aclnnLightningIndexerV2MetadataGetWorkspaceSize(cq.tensor, ck.tensor, nullptr, nullptr, nullptr,
                                                                        N1, 1, D, topk, 2, -1, -1, tnd, tnd, 0, 1,
                                                                        metadata.tensor, &workspaceSize, &executor);
  if (runPlanned(planned, workspaceSize, executor, stream, aclnnLightningIndexerV2Metadata,
                 "aclnnLightningIndexerV2Metadata") != 0) {
    return 1;
  }
  planned = aclnnLightningIndexerV2GetWorkspaceSize(
      q.tensor, k.tensor, w.tensor, cq.tensor, ck.tensor, nullptr, nullptr, nullptr, nullptr, offset.tensor,
      metadata.tensor, topk, -1, tnd, tnd, 0, 1, 1, indices.tensor, values.tensor, &workspaceSize, &executor);
  if (runPlanned(planned, workspaceSize, executor, stream, aclnnLightningIndexerV2, "aclnnLightningIndexerV2") != 0) {
    return 1;
  }
  std::vector<int32_t> gotIndices(T1 * topk);
  std::vector<float> gotValues(T1 * topk);
  download(gotIndices, indices);
  download(gotValues, values);
  int64_t wrong = 0;
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = cuQ[b]; t < cuQ[b + 1]; ++t) {
      // Scores in double (exact here: small integers and quarters), sorted descending, ties to the lower key.
      std::vector<std::pair<double, int64_t>> scores;
      for (int64_t s = 0; s < cuK[b + 1] - cuK[b]; ++s) {
        double score = 0.0;
        for (int64_t h = 0; h < N1; ++h) {
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += qi[(t * N1 + h) * D + d] * ki[(cuK[b] + s) * D + d];
          score += wv[t * N1 + h] * std::max(dot, 0.0);
        }
        scores.push_back({-score, s});
      }
      std::sort(scores.begin(), scores.end());
      for (int64_t j = 0; j < topk; ++j) {
        const bool valid = j < static_cast<int64_t>(scores.size());
        const int32_t index = valid ? static_cast<int32_t>(scores[j].second + offsets[t]) : -1;
        const float value = valid ? static_cast<float>(-scores[j].first) : -INFINITY;
        if (gotIndices[t * topk + j] != index || gotValues[t * topk + j] != value) ++wrong;
      }
    }
  }
  std::printf("distinct scores (TND, offsets): row 0 selects %d %d %d %d; %lld of %lld slots wrong\n", gotIndices[0],
              gotIndices[1], gotIndices[2], gotIndices[3], static_cast<long long>(wrong),
              static_cast<long long>(T1 * topk));
  for (DeviceTensor* t : {&q, &k, &w, &cq, &ck, &offset, &metadata, &indices, &values}) destroy(*t);
  return wrong != 0;
}

}  // namespace

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 1;
  int failed = upstreamScenario(stream);
  failed |= distinctScores(stream);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  std::printf("%s\n", failed != 0 ? "FAILED" : "OK");
  return failed;
}
