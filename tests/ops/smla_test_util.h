// A valid aclnnSparseFlashMla call to start tests from: CSA (band window + top-k compressed rows), q TND with two
// batches, paged KV, every INT32 tensor filled, returnSoftmaxLse. Tests change a member, then call().
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "gradkit/float_convert.h"
#include "opapi/tensor_copy.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::smla {

using mhc::Outcome;
using mhc::TensorPool;

inline constexpr int64_t kD = 512;

/** 64-byte aligned memory of `bytes` (at least one byte): a workspace for the tests' second phases. */
inline std::unique_ptr<void, decltype(&std::free)> alignedBuffer(uint64_t bytes) {
  return {std::aligned_alloc(64, (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64), &std::free};
}

/** An INT32 tensor of `shape` holding `values` (row-major, 0 past them), with doubled strides when `strided`. */
inline aclTensor* int32Tensor(TensorPool& pool, const std::vector<int64_t>& shape, const std::vector<int32_t>& values,
                              bool strided = false) {
  aclTensor* t = strided ? pool.makeStrided(ACL_INT32, shape) : pool.make(ACL_INT32, shape);
  int64_t i = 0;
  forEachOffset(*t, [&](int64_t offset) {
    static_cast<int32_t*>(t->data)[offset] = i < static_cast<int64_t>(values.size()) ? values[i] : 0;
    ++i;
  });
  return t;
}

/** Fills a 16-bit tensor made by the pool with uniform values in [-1, 1) of its dtype (row-major, dense). */
inline void fillUniform(aclTensor* t, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto* data = static_cast<uint16_t*>(t->firstElement());
  for (int64_t e = 0; e < t->numel(); ++e) data[e] = t->dtype == ACL_BF16 ? floatToBf16(u(rng)) : floatToHalf(u(rng));
}

struct SmlaCall {
  static constexpr const char* kApi = "aclnnSparseFlashMla";
  TensorPool pool;
  aclTensor *q, *oriKv, *cmpKv, *oriIdx = nullptr, *cmpIdx, *oriTable, *cmpTable, *cuQ, *cuOri = nullptr,
                                *cuCmp = nullptr, *usedQ = nullptr, *usedOri, *usedCmp, *residual, *oriLen = nullptr,
                                *cmpLen = nullptr, *sinks, *metadata, *out, *lse;
  double scale = 0.0441941738;
  int64_t ratio = 4, oriMode = 4, cmpMode = 3, winLeft = 127, winRight = 0, topkValueMode = 1;
  std::string layoutQ = "TND", layoutKv = "PA_BBND";
  bool returnLse = true;
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;

  explicit SmlaCall(aclDataType dtype = ACL_BF16, int64_t n1 = 4) {
    std::mt19937 rng(7);
    q = pool.make(dtype, {6, n1, kD});
    fillUniform(q, rng);
    oriKv = pool.make(dtype, {4, 4, 1, kD});
    fillUniform(oriKv, rng);
    cmpKv = pool.make(dtype, {2, 4, 1, kD});
    fillUniform(cmpKv, rng);
    cmpIdx = int32Tensor(pool, {6, 1, 3}, {0, -1, 0, 0, 1, 1, 1, 0, -1, 0, 1, 1, 1, 0, 1, 1, 1, 1});
    oriTable = int32Tensor(pool, {2, 2}, {0, 1, 2, 3});
    cmpTable = int32Tensor(pool, {2, 1}, {0, 1});
    cuQ = int32Tensor(pool, {3}, {0, 2, 6});
    usedOri = int32Tensor(pool, {2}, {5, 8});
    usedCmp = int32Tensor(pool, {2}, {1, 2});
    residual = int32Tensor(pool, {2}, {1, 0});
    sinks = pool.make(ACL_FLOAT, {n1});
    for (int64_t n = 0; n < n1; ++n) static_cast<float*>(sinks->firstElement())[n] = 0.25f * static_cast<float>(n);
    metadata = pool.make(ACL_INT32, {1024});
    out = pool.make(dtype, {6, n1, kD});
    lse = pool.make(ACL_FLOAT, {1, 6, n1});
  }

  Outcome call() {
    Outcome o;
    o.status = aclnnSparseFlashMlaGetWorkspaceSize(
        q, oriKv, cmpKv, oriIdx, cmpIdx, oriTable, cmpTable, cuQ, cuOri, cuCmp, usedQ, usedOri, usedCmp, residual,
        oriLen, cmpLen, sinks, metadata, scale, ratio, oriMode, cmpMode, winLeft, winRight, layoutQ.data(),
        layoutKv.data(), topkValueMode, returnLse, out, lse, &workspaceSize, &executor);
    if (o.status != ACLNN_SUCCESS) o.message = aclGetRecentErrMsg();
    return o;
  }

  /** Both phases on a fresh stream; the status of the run (the first phase must succeed). */
  aclnnStatus run() {
    const Outcome planned = call();
    if (planned.status != ACLNN_SUCCESS) return planned.status;
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    void* ws = nullptr;
    if (workspaceSize > 0) aclrtMalloc(&ws, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    const aclnnStatus status = aclnnSparseFlashMla(ws, workspaceSize, executor, stream);
    aclrtSynchronizeStream(stream);
    if (ws != nullptr) aclrtFree(ws);
    aclrtDestroyStream(stream);
    return status;
  }
};

}  // namespace gradkit::test::smla
