// Helpers for the LightningIndexerV2 tests: a valid call in each layout (BSND, TND, PA_BBND) whose arguments a test
// may break, and a run of the op on host data against golden/lightning_indexer_v2.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::liv2 {

using mhc::Outcome;
using mhc::TensorPool;

/** The layouts and sizes of a call. */
struct Config {
  std::string layoutQ = "BSND", layoutK = "BSND";
  aclDataType dtype = ACL_BF16;
  int64_t batch = 2, s1 = 6, s2 = 10, heads = 4, topk = 8, maskMode = 3, cmpRatio = 4, returnValue = 1;
  int64_t blockSize = 16, blockNum = 3, tableColumns = 1;  // PA_BBND
  bool offsets = false;
};

/**
 * One aclnnLightningIndexerV2 call with every argument; a valid one after construction: BSND / TND q and k with
 * cu_seqlens [0, 6, 12] / [0, 10, 20], PA_BBND k with seqused_k [10, 7] and a table [B, 1], residual [1, 3].
 */
struct Call {
  explicit Call(const Config& c) : config(c) {
    const bool tnd = c.layoutQ == "TND";
    const int64_t rows = c.batch * c.s1;
    lead = tnd ? std::vector<int64_t>{rows} : std::vector<int64_t>{c.batch, c.s1};
    q = pool.make(c.dtype, tail({c.heads, 128}));
    if (c.layoutK == "TND") {
      k = pool.make(c.dtype, {c.batch * c.s2, 1, 128});
    } else if (c.layoutK == "PA_BBND") {
      k = pool.make(c.dtype, {c.blockNum, c.blockSize, 1, 128});
    } else {
      k = pool.make(c.dtype, {c.batch, c.s2, 1, 128});
    }
    w = pool.make(ACL_FLOAT, tail({c.heads}));
    if (tnd) cuQ = ints({0, static_cast<int32_t>(c.s1), static_cast<int32_t>(2 * c.s1)});
    if (c.layoutK == "TND") cuK = ints({0, static_cast<int32_t>(c.s2), static_cast<int32_t>(2 * c.s2)});
    if (c.layoutK == "PA_BBND") {
      sequsedK = ints({10, 7});
      table = ints({1, 2}, {c.batch, 1});
    }
    if (c.cmpRatio != 1 && c.maskMode != 0) residual = ints({1, 3});
    if (c.offsets) offset = pool.make(ACL_INT32, tail({1}));
    metadata = pool.make(ACL_INT32, {1024});
    indices = pool.make(ACL_INT32, tail({1, c.topk}));
    values = pool.make(ACL_FLOAT, tail({1, c.topk}));
    layoutQ = c.layoutQ;
    layoutK = c.layoutK;
    topk = c.topk;
    maskMode = c.maskMode;
    cmpRatio = c.cmpRatio;
    returnValue = c.returnValue;
  }

  std::vector<int64_t> tail(std::initializer_list<int64_t> t) const {
    std::vector<int64_t> shape = lead;
    shape.insert(shape.end(), t);
    return shape;
  }

  /** An INT32 tensor holding `values` (shape default [size]). */
  aclTensor* ints(const std::vector<int32_t>& v, std::vector<int64_t> shape = {}) {
    if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
    aclTensor* t = pool.make(ACL_INT32, shape);
    std::memcpy(t->data, v.data(), v.size() * sizeof(int32_t));
    return t;
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    char* lq = nullLayoutQ ? nullptr : layoutQ.data();
    char* lk = nullLayoutK ? nullptr : layoutK.data();
    Outcome o;
    o.status = aclnnLightningIndexerV2GetWorkspaceSize(
        q, k, w, cuQ, cuK, sequsedQ, sequsedK, residual, table, offset, metadata, topk, maxSeqlenQ, lq, lk, maskMode,
        cmpRatio, returnValue, indices, values, nullWorkspaceSize ? nullptr : &size,
        nullExecutor ? nullptr : &executor);
    o.message = aclGetRecentErrMsg();
    if (o.status == ACLNN_SUCCESS) aclDestroyAclOpExecutor(executor);
    return o;
  }

  Config config;
  TensorPool pool;
  std::vector<int64_t> lead;
  const aclTensor *q = nullptr, *k = nullptr, *w = nullptr, *cuQ = nullptr, *cuK = nullptr, *sequsedQ = nullptr,
                  *sequsedK = nullptr, *residual = nullptr, *table = nullptr, *offset = nullptr, *metadata = nullptr,
                  *indices = nullptr, *values = nullptr;
  int64_t topk = 8, maxSeqlenQ = -1, maskMode = 3, cmpRatio = 4, returnValue = 1;
  std::string layoutQ, layoutK;
  bool nullLayoutQ = false, nullLayoutK = false, nullWorkspaceSize = false, nullExecutor = false;
};

}  // namespace gradkit::test::liv2
