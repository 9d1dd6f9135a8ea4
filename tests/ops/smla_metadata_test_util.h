// Helpers of the sparse attention metadata tests: one call of each operator as a struct of its arguments (int32
// tensors made from values), run through both phases, with the metadata words it left.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm_metadata.h"
#include "opapi/tensor_copy.h"
#include "ops/mhc_test_util.h"
#include "ops/smla_test_util.h"

namespace gradkit::test::smla {

using mhc::Outcome;
using mhc::TensorPool;

/** Words written before a call, so that the words a call must not touch can be told apart. */
inline constexpr int32_t kSentinel = 0x5A5A5A5A;

/** The words of an INT32 1-D view. */
inline std::vector<int32_t> wordsOf(const aclTensor* t) {
  std::vector<int32_t> words;
  for (int64_t i = 0; i < t->viewDims[0]; ++i) {
    words.push_back(static_cast<const int32_t*>(t->data)[t->offset + i * t->strides[0]]);
  }
  return words;
}

/** A metadata tensor of `words` INT32 elements, every one kSentinel. */
inline aclTensor* metadataTensor(TensorPool& pool, int64_t words, bool strided = false) {
  return int32Tensor(pool, {words}, std::vector<int32_t>(static_cast<size_t>(words), kSentinel), strided);
}

/** What a call gave: the status and message, and the metadata words after the run (empty when rejected). */
struct MetadataResult {
  Outcome outcome;
  std::vector<int32_t> words;
};

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

/** A failed call must hand out no executor; a successful one is run and synchronized. */
inline MetadataResult finish(aclnnStatus status, uint64_t size, aclOpExecutor* executor, RunFn run,
                             const aclTensor* metadata) {
  MetadataResult r{{status, recentError()}, {}};
  if (status != ACLNN_SUCCESS) {
    EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
    return r;
  }
  EXPECT_EQ(size, 0u) << "the metadata operators need no workspace";
  EXPECT_EQ(r.outcome.message, "") << "a successful call records no message";
  EXPECT_EQ(run(nullptr, size, executor, nullptr), ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  r.words = wordsOf(metadata);
  return r;
}

/** The arguments of aclnnSparseFlashMla[Grad]Metadata; a test sets what it needs, then call(). */
struct MetaCall {
  bool grad = false;
  TensorPool pool;
  const aclTensor *cuSeqlensQ = nullptr, *cuSeqlensOriKv = nullptr, *cuSeqlensCmpKv = nullptr;
  const aclTensor *sequsedQ = nullptr, *sequsedOriKv = nullptr, *sequsedCmpKv = nullptr;
  const aclTensor *cmpResidualKv = nullptr, *oriTopkLength = nullptr, *cmpTopkLength = nullptr;
  int64_t numHeadsQ = 64, numHeadsKv = 1, headDim = 512, batchSize = 0, maxSeqlenQ = 0, maxSeqlenOriKv = 0;
  int64_t maxSeqlenCmpKv = 0, oriTopk = 0, cmpTopk = 0, cmpRatio = 1, oriMaskMode = 4, cmpMaskMode = 3;
  int64_t oriWinLeft = 127, oriWinRight = 0;
  const char *layoutQ = "BSND", *layoutKv = "BSND";
  bool hasOriKv = true, hasCmpKv = false, nullSize = false, nullExecutor = false;
  const aclTensor* metadata = nullptr;

  aclTensor* ints(const std::vector<int64_t>& shape, const std::vector<int32_t>& values) {
    return int32Tensor(pool, shape, values);
  }

  /** The doc program's HCA call: BSND, B 4, S 1024 everywhere, N1 64, cmpRatio 128, band (127, 0), causal cmp. */
  void docHca() {
    batchSize = 4;
    maxSeqlenQ = maxSeqlenOriKv = maxSeqlenCmpKv = 1024;
    cmpRatio = 128;
    hasCmpKv = true;
    cmpResidualKv = ints({4}, {0, 0, 0, 0});
  }

  MetadataResult call() {
    if (metadata == nullptr) metadata = metadataTensor(pool, 1024);
    uint64_t size = 7;
    aclOpExecutor* executor = nullptr;
    auto first = grad ? aclnnSparseFlashMlaGradMetadataGetWorkspaceSize : aclnnSparseFlashMlaMetadataGetWorkspaceSize;
    const aclnnStatus status =
        first(cuSeqlensQ, cuSeqlensOriKv, cuSeqlensCmpKv, sequsedQ, sequsedOriKv, sequsedCmpKv, cmpResidualKv,
              oriTopkLength, cmpTopkLength, numHeadsQ, numHeadsKv, headDim, batchSize, maxSeqlenQ, maxSeqlenOriKv,
              maxSeqlenCmpKv, oriTopk, cmpTopk, cmpRatio, oriMaskMode, cmpMaskMode, oriWinLeft, oriWinRight, layoutQ,
              layoutKv, hasOriKv, hasCmpKv, metadata, nullSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    return finish(status, size, executor, grad ? aclnnSparseFlashMlaGradMetadata : aclnnSparseFlashMlaMetadata,
                  metadata);
  }
};

/** The arguments of aclnnSparseFlashMlaSoftmaxL1NormMetadata; a test sets what it needs, then call(). */
struct L1Call {
  TensorPool pool;
  const aclTensor *cuSeqLensQ = nullptr, *cuSeqLensK = nullptr, *seqUsedQ = nullptr, *seqUsedK = nullptr;
  const aclTensor *cmpResidualK = nullptr, *topkLength = nullptr;
  int64_t batchSize = 2, maxSeqLenQ = 16, maxSeqLenK = 64, numHeadsQ = 8, numHeadsK = 1, headDim = 512, topk = 0;
  int64_t cmpRatio = 1, maskMode = 0;
  std::string layoutQ = "BSND", layoutK = "BSND";
  bool nullLayoutQ = false, nullLayoutK = false, nullSize = false, nullExecutor = false;
  const aclTensor* metadata = nullptr;

  aclTensor* ints(const std::vector<int64_t>& shape, const std::vector<int32_t>& values) {
    return int32Tensor(pool, shape, values);
  }

  MetadataResult call() {
    if (metadata == nullptr) metadata = metadataTensor(pool, 64);
    uint64_t size = 7;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize(
        cuSeqLensQ, cuSeqLensK, seqUsedQ, seqUsedK, cmpResidualK, topkLength, batchSize, maxSeqLenQ, maxSeqLenK,
        numHeadsQ, numHeadsK, headDim, topk, cmpRatio, maskMode, nullLayoutQ ? nullptr : layoutQ.data(),
        nullLayoutK ? nullptr : layoutK.data(), metadata, nullSize ? nullptr : &size,
        nullExecutor ? nullptr : &executor);
    return finish(status, size, executor, aclnnSparseFlashMlaSoftmaxL1NormMetadata, metadata);
  }
};

}  // namespace gradkit::test::smla
