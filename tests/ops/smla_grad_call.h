// A valid aclnnSparseFlashMlaGrad call to start the checks tests from: CSA (band window 127 / 0, compressed rows by
// top-k indices with ratio 4 and residuals), q TND with two batches over TND KV, sinks, metadata and every gradient
// output (dq, dOriKv, dCmpKv, dSinks, cmpSoftmaxL1Norm). Valid in every profile once metadata is left out (the A2/A3
// profile forbids it). Tests change a member, then call() (first phase only) or run() (both phases).
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "ops/smla_test_util.h"

namespace gradkit::test::smla {

struct SmlaGradCall {
  static constexpr const char* kApi = "aclnnSparseFlashMlaGrad";
  TensorPool pool;
  aclTensor *query, *dOut, *out, *lse, *oriKv, *cmpKv,
      *oriIdx = nullptr, *cmpIdx, *cuQ, *cuOri, *cuCmp, *usedQ = nullptr, *usedOri = nullptr, *usedCmp = nullptr,
      *residual, *oriLen = nullptr, *cmpLen = nullptr, *sinks, *metadata;
  aclTensor *dQuery, *dOri, *dCmp, *dSinks, *oriL1 = nullptr, *cmpL1;
  double scale = 0.0441941738;
  int64_t ratio = 4, oriMode = 4, cmpMode = 3, winLeft = 127, winRight = 0;
  std::string layoutQ = "TND", layoutKv = "TND";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  bool nullWorkspaceSize = false, nullExecutor = false;

  explicit SmlaGradCall(aclDataType dtype = ACL_BF16, int64_t n1 = 4) {
    std::mt19937 rng(11);
    query = pool.make(dtype, {6, n1, kD});
    dOut = pool.make(dtype, {6, n1, kD});
    out = pool.make(dtype, {6, n1, kD});
    for (aclTensor* t : {query, dOut, out}) fillUniform(t, rng);
    lse = pool.make(ACL_FLOAT, {1, 6, n1});
    for (int64_t e = 0; e < lse->numel(); ++e) static_cast<float*>(lse->firstElement())[e] = 1.5f;
    oriKv = pool.make(dtype, {16, 1, kD});
    fillUniform(oriKv, rng);
    cmpKv = pool.make(dtype, {4, 1, kD});
    fillUniform(cmpKv, rng);
    cmpIdx = int32Tensor(pool, {6, 1, 3}, {0, -1, 0, 0, 1, 1, 1, 0, -1, 0, 1, 1, 1, 0, 1, 1, 1, 1});
    cuQ = int32Tensor(pool, {3}, {0, 2, 6});
    cuOri = int32Tensor(pool, {3}, {0, 8, 16});
    cuCmp = int32Tensor(pool, {3}, {0, 2, 4});
    residual = int32Tensor(pool, {2}, {0, 1});
    sinks = pool.make(ACL_FLOAT, {n1});
    for (int64_t n = 0; n < n1; ++n) static_cast<float*>(sinks->firstElement())[n] = 0.25f * static_cast<float>(n);
    metadata = pool.make(ACL_INT32, {1024});
    dQuery = pool.make(dtype, {6, n1, kD});
    dOri = pool.make(dtype, {16, 1, kD});
    dCmp = pool.make(dtype, {4, 1, kD});
    dSinks = pool.make(ACL_FLOAT, {n1});
    cmpL1 = pool.make(ACL_FLOAT, {6, 1, 3});
  }

  /** The call as BSND (B 2, S1 3; KV S 8 and 2): no prefix sums. */
  void toBsnd() {
    layoutQ = layoutKv = "BSND";
    const int64_t n1 = query->viewDims[1];
    for (aclTensor** t : {&query, &dOut, &out, &dQuery}) *t = pool.make((*t)->dtype, {2, 3, n1, kD});
    lse = pool.make(ACL_FLOAT, {2, 1, 3, n1});
    oriKv = pool.make(query->dtype, {2, 8, 1, kD});
    dOri = pool.make(query->dtype, {2, 8, 1, kD});
    cmpKv = pool.make(query->dtype, {2, 2, 1, kD});
    dCmp = pool.make(query->dtype, {2, 2, 1, kD});
    cmpIdx = int32Tensor(pool, {2, 3, 1, 3}, {0, 0, 0, 0, 1, 1, 1, 0, -1, 0, 1, 1, 1, 0, 1, 1, 1, 1});
    cmpL1 = pool.make(ACL_FLOAT, {2, 3, 1, 3});
    cuQ = cuOri = cuCmp = nullptr;
  }

  /** Ori indices [6, 1, 3] with oriMaskMode 0 (no window) and their top-k lengths. */
  void withOriIndices() {
    oriIdx = int32Tensor(pool, {6, 1, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1});
    oriLen = int32Tensor(pool, {6, 1}, {3, 3, 2, 1, 3, 0});
    oriL1 = pool.make(ACL_FLOAT, {6, 1, 3});
    oriMode = 0;
    winLeft = winRight = -1;
  }

  /** Without cmpKv and everything that goes with it: SWA. */
  void withoutCmp() {
    cmpKv = cmpIdx = cuCmp = residual = dCmp = cmpL1 = nullptr;
    ratio = 1;
    cmpMode = 0;
  }

  Outcome call() {
    Outcome o;
    o.status = aclnnSparseFlashMlaGradGetWorkspaceSize(
        query, dOut, out, lse, oriKv, cmpKv, oriIdx, cmpIdx, cuQ, cuOri, cuCmp, usedQ, usedOri, usedCmp, residual,
        oriLen, cmpLen, sinks, metadata, scale, ratio, oriMode, cmpMode, winLeft, winRight, layoutQ.data(),
        layoutKv.data(), dQuery, dOri, dCmp, dSinks, oriL1, cmpL1, nullWorkspaceSize ? nullptr : &workspaceSize,
        nullExecutor ? nullptr : &executor);
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
    const aclnnStatus status = aclnnSparseFlashMlaGrad(ws, workspaceSize, executor, stream);
    aclrtSynchronizeStream(stream);
    if (ws != nullptr) aclrtFree(ws);
    aclrtDestroyStream(stream);
    return status;
  }
};

}  // namespace gradkit::test::smla
