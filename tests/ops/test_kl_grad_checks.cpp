// aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize: the rule book of src/ops/lightning_indexer/kl_grad_check.cpp
// and kl_grad_check_values.cpp in its order (nulls 161001; the op definition's dtypes; attributes; ranks and output
// shapes; TND cu_seqlens; dims; per-batch tensors; formats; memory rules; values: all 161002), code and message, under
// the Ascend950 rule set and the A2/A3 one. Every accepted call is run; a rejected one must hand out no executor.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "opapi/tensor.h"
#include "ops/block_residuals_check_util.h"

namespace gradkit::test::block_residuals {
namespace {

/** Writes int32 `values` into a 1-D tensor's view. */
void setInts(const aclTensor* t, const std::vector<int64_t>& values) {
  auto* first = static_cast<int32_t*>(t->firstElement());
  for (size_t i = 0; i < values.size(); ++i)
    first[static_cast<int64_t>(i) * t->strides[0]] = static_cast<int32_t>(values[i]);
}

/** A valid call (TND: B 2, q rows {0,3,6}, keys {0,2,4}, N1 8, K 16, causal cr 1; or BSND B 2, S1 3, S2 2). */
struct Kl {
  static constexpr const char* kApi = "aclnnSparseLightningIndexerKLLossGrad";

  explicit Kl(const Config& config) : dtype(config.dtype), strided(config.strided) { build(true, 8, 16); }

  /** Rebuilds every tensor for a layout, N1 and K (optionals: cu_seqlens for TND, metadata). */
  void build(bool tnd, int64_t heads, int64_t topk) {
    std::strcpy(layoutQ, tnd ? "TND" : "BSND");
    std::strcpy(layoutK, layoutQ);
    const std::vector<int64_t> lead = tnd ? std::vector<int64_t>{6} : std::vector<int64_t>{2, 3};
    const std::vector<int64_t> klead = tnd ? std::vector<int64_t>{4} : std::vector<int64_t>{2, 2};
    const auto with = [](std::vector<int64_t> v, std::initializer_list<int64_t> tail) {
      v.insert(v.end(), tail);
      return v;
    };
    q = make(dtype, with(lead, {heads, 128}));
    k = make(dtype, with(klead, {1, 128}));
    w = make(ACL_FLOAT, with(lead, {heads}));
    sparseIndices = make(ACL_INT32, with(lead, {1, topk}));
    attn = make(ACL_FLOAT, with(lead, {1, topk}));
    dq = make(dtype, with(lead, {heads, 128}));
    dk = make(dtype, with(klead, {1, 128}));
    dw = make(ACL_FLOAT, with(lead, {heads}));
    softmaxOut = make(ACL_FLOAT, with(lead, {1, topk}));
    cuQ = cuK = seqUsedQ = seqUsedK = residual = nullptr;
    if (tnd) {
      cuQ = ints({0, 3, 6});
      cuK = ints({0, 2, 4});
    }
    metadata = make(ACL_INT32, {64});
  }

  aclTensor* make(aclDataType type, const std::vector<int64_t>& shape) {
    return strided ? pool.makeStrided(type, shape) : pool.make(type, shape);
  }
  aclTensor* ints(const std::vector<int64_t>& values) {
    aclTensor* t = make(ACL_INT32, {static_cast<int64_t>(values.size())});
    setInts(t, values);
    return t;
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
        q, k, w, sparseIndices, attn, cuQ, cuK, seqUsedQ, seqUsedK, residual, metadata, nullLayoutQ ? nullptr : layoutQ,
        nullLayoutK ? nullptr : layoutK, maskMode, cmpRatio, dq, dk, dw, softmaxOut, nullSize ? nullptr : &size,
        nullExecutor ? nullptr : &executor);
    return settle(status, size, executor, aclnnSparseLightningIndexerKLLossGrad);
  }

  TensorPool pool;
  aclDataType dtype;
  bool strided;
  const aclTensor *q, *k, *w, *sparseIndices, *attn, *cuQ, *cuK, *seqUsedQ, *seqUsedK, *residual, *metadata;
  const aclTensor *dq, *dk, *dw, *softmaxOut;
  char layoutQ[8] = "TND", layoutK[8] = "TND";
  int64_t maskMode = 3, cmpRatio = 1;
  bool nullLayoutQ = false, nullLayoutK = false, nullSize = false, nullExecutor = false;
};

using K = Kl;

/** The A2/A3 call: K 512 (their smallest). */
std::function<void(K&)> a2(std::function<void(K&)> then) {
  return [then](K& c) {
    c.build(true, 8, 512);
    then(c);
  };
}

std::function<void(K&)> bsnd(std::function<void(K&)> then = {}) {
  return [then](K& c) {
    c.build(false, 8, 16);
    if (then) then(c);
  };
}

class KlGradChecks : public ::testing::Test {
 protected:
  void SetUp() override { recentError(); }
  mhc::ScopedSoc soc_{"Ascend950"};
};

TEST_F(KlGradChecks, ValidCallsSucceedAndRun) {
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    for (bool strided : {false, true}) {
      K tnd({dtype, 0, 0, 0, strided});
      EXPECT_EQ(tnd.call().status, ACLNN_SUCCESS) << recentError();
      K b({dtype, 0, 0, 0, strided});
      b.build(false, 128, 2048);
      EXPECT_EQ(b.call().status, ACLNN_SUCCESS) << recentError();
    }
  }
  K c({});  // every optional, cr 4 with residuals, seqused with an empty batch, mask 0 then 3
  c.cmpRatio = 4;
  c.residual = c.ints({3, 0});
  c.seqUsedQ = c.ints({0, 2});
  c.seqUsedK = c.ints({2, 1});
  EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError();
  c.maskMode = 0;
  c.residual = nullptr;
  EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError();
  K scalarOptional({});  // a 0-dim optional is absent
  scalarOptional.seqUsedQ = scalarOptional.make(ACL_INT32, {});
  EXPECT_EQ(scalarOptional.call().status, ACLNN_SUCCESS) << recentError();
  K bsndCu({});  // BSND ignores cu_seqlens (upstream reads them only for TND)
  bsndCu.build(false, 8, 16);
  bsndCu.cuQ = bsndCu.ints({0, 5, 1});
  EXPECT_EQ(bsndCu.call().status, ACLNN_SUCCESS) << recentError();
}

TEST_F(KlGradChecks, NullPointersGive161001) {
  const std::string nonNull = "expected a non-null pointer";
  expectEachRejected<K>({
      {"q", null(&K::q), kNull, {"'q'", nonNull, "given nullptr"}},
      {"k", null(&K::k), kNull, {"'k'", nonNull}},
      {"w", null(&K::w), kNull, {"'w'", nonNull}},
      {"sparseIndices", null(&K::sparseIndices), kNull, {"'sparseIndices'", nonNull}},
      {"attnSoftmaxL1Norm", null(&K::attn), kNull, {"'attnSoftmaxL1Norm'", nonNull}},
      {"dq", null(&K::dq), kNull, {"'dq'", nonNull}},
      {"dk", null(&K::dk), kNull, {"'dk'", nonNull}},
      {"dw", null(&K::dw), kNull, {"'dw'", nonNull}},
      {"softmaxOut", null(&K::softmaxOut), kNull, {"'softmaxOut'", nonNull}},
      {"layoutQ", [](K& c) { c.nullLayoutQ = true; }, kNull, {"'layoutQ'", nonNull}},
      {"layoutK", [](K& c) { c.nullLayoutK = true; }, kNull, {"'layoutK'", nonNull}},
      {"metadata", null(&K::metadata), kNull, {"'metadataOptional'", "required on Ascend950", "given nullptr"}},
      {"workspaceSize", [](K& c) { c.nullSize = true; }, kNull, {"'workspaceSize'", nonNull}},
      {"executor", [](K& c) { c.nullExecutor = true; }, kNull, {"'executor'", nonNull}},
      {"tensors first", [](K& c) { c.nullSize = true, c.softmaxOut = nullptr; }, kNull, {"'softmaxOut'"}},
  });
}

TEST_F(KlGradChecks, Dtypes) {
  expectEachRejected<K>({
      {"q fp32", replace(&K::q, ACL_FLOAT, {6, 8, 128}), kInvalid, {"'q'", "{FLOAT16, BFLOAT16}", "FLOAT"}},
      {"k fp16", replace(&K::k, ACL_FLOAT16, {4, 1, 128}), kInvalid, {"'k'", "BFLOAT16 (the dtype of q)", "FLOAT16"}},
      {"w bf16", replace(&K::w, ACL_BF16, {6, 8}), kInvalid, {"'w'", "{FLOAT}", "BFLOAT16"}},
      {"sparseIndices int64",
       replace(&K::sparseIndices, ACL_INT64, {6, 1, 16}),
       kInvalid,
       {"'sparseIndices'", "INT32"}},
      {"attn fp16", replace(&K::attn, ACL_FLOAT16, {6, 1, 16}), kInvalid, {"'attnSoftmaxL1Norm'", "{FLOAT}"}},
      {"cuSeqLensQ int64", replace(&K::cuQ, ACL_INT64, {3}), kInvalid, {"'cuSeqLensQOptional'", "{INT32}", "INT64"}},
      {"residual fp32", replace(&K::residual, ACL_FLOAT, {2}), kInvalid, {"'cmpResidualKOptional'", "{INT32}"}},
      {"metadata int64", replace(&K::metadata, ACL_INT64, {64}), kInvalid, {"'metadataOptional'", "{INT32}"}},
      {"dq fp16", replace(&K::dq, ACL_FLOAT16, {6, 8, 128}), kInvalid, {"'dq'", "(the dtype of q)"}},
      {"dk fp32", replace(&K::dk, ACL_FLOAT, {4, 1, 128}), kInvalid, {"'dk'", "(the dtype of q)"}},
      {"dw bf16", replace(&K::dw, ACL_BF16, {6, 8}), kInvalid, {"'dw'", "{FLOAT}"}},
      {"softmaxOut fp16", replace(&K::softmaxOut, ACL_FLOAT16, {6, 1, 16}), kInvalid, {"'softmaxOut'", "{FLOAT}"}},
  });
}

TEST_F(KlGradChecks, Attributes) {
  expectEachRejected<K>({
      {"layoutQ BNSD",
       [](K& c) { std::strcpy(c.layoutQ, "BNSD"); },
       kInvalid,
       {"'layoutQ'", "\"TND\" or \"BSND\"", "given \"BNSD\""}},
      {"layoutK PA_BBND", [](K& c) { std::strcpy(c.layoutK, "PA_BBND"); }, kInvalid, {"'layoutK'", "\"PA_BBND\""}},
      {"layouts differ",
       [](K& c) { std::strcpy(c.layoutK, "BSND"); },
       kInvalid,
       {"'layoutK'", "the layout of layoutQ (\"TND\")", "given \"BSND\""}},
      {"maskMode 1", [](K& c) { c.maskMode = 1; }, kInvalid, {"'maskMode'", "0 (no mask) or 3", "given 1"}},
      {"cmpRatio 0", [](K& c) { c.cmpRatio = 0; }, kInvalid, {"'cmpRatio'", "[1, 128]", "given 0"}},
      {"cmpRatio 129", [](K& c) { c.cmpRatio = 129; }, kInvalid, {"'cmpRatio'", "given 129"}},
      {"residual missing",
       [](K& c) { c.cmpRatio = 4; },
       kInvalid,
       {"'cmpResidualKOptional'", "maskMode is 3 and cmpRatio is not 1", "given nullptr"}},
  });
}

TEST_F(KlGradChecks, RanksAndOutputShapes) {
  expectEachRejected<K>({
      {"q rank 4 in TND", replace(&K::q, ACL_BF16, {1, 6, 8, 128}), kInvalid, {"'q'", "3 dims", "[T1, N1, D]"}},
      {"k rank 2", replace(&K::k, ACL_BF16, {4, 128}), kInvalid, {"'k'", "3 dims", "[T2, N2, D]"}},
      {"w rank 3", replace(&K::w, ACL_FLOAT, {6, 8, 1}), kInvalid, {"'w'", "2 dims", "[T1, N1]"}},
      {"sparse rank 2", replace(&K::sparseIndices, ACL_INT32, {6, 16}), kInvalid, {"'sparseIndices'", "3 dims"}},
      {"attn rank 4", replace(&K::attn, ACL_FLOAT, {6, 1, 1, 16}), kInvalid, {"'attnSoftmaxL1Norm'", "3 dims"}},
      {"BSND q rank 3",
       bsnd([](K& c) {
         c.q = c.make(ACL_BF16, {6, 8, 128});
       }),
       kInvalid,
       {"'q'", "4 dims", "[B, S1, N1, D]"}},
      {"dq shape", replace(&K::dq, ACL_BF16, {6, 8, 64}), kInvalid, {"'dq'", "[6, 8, 128]", "[6, 8, 64]"}},
      {"dk shape", replace(&K::dk, ACL_BF16, {5, 1, 128}), kInvalid, {"'dk'"}},
      {"softmaxOut shape", replace(&K::softmaxOut, ACL_FLOAT, {6, 1, 8}), kInvalid, {"'softmaxOut'"}},
      {"dw shape", replace(&K::dw, ACL_FLOAT, {6, 4}), kInvalid, {"'dw'", "[6, 8] (the shape of w)"}},
  });
}

TEST_F(KlGradChecks, CuSeqLensAndDims) {
  expectEachRejected<K>({
      {"cuSeqLensQ missing", null(&K::cuQ), kInvalid, {"'cuSeqLensQOptional'", "the layout is TND", "nullptr"}},
      {"cuSeqLensK missing", null(&K::cuK), kInvalid, {"'cuSeqLensKOptional'", "the layout is TND"}},
      {"cuSeqLensQ rank 2", replace(&K::cuQ, ACL_INT32, {3, 1}), kInvalid, {"'cuSeqLensQOptional'", "1 dims"}},
      {"cuSeqLensQ one element",
       [](K& c) { c.cuQ = c.ints({0}), c.cuK = c.ints({0}); },
       kInvalid,
       {"'cuSeqLensQOptional'", "B + 1 >= 2"}},
      {"cu sizes differ",
       [](K& c) {
         c.cuK = c.ints({0, 4});
       },
       kInvalid,
       {"'cuSeqLensKOptional'", "[3]", "[2]"}},
      {"T1 0",
       [](K& c) {
         c.q = c.make(ACL_BF16, {0, 8, 128}), c.dq = c.make(ACL_BF16, {0, 8, 128});
       },
       kInvalid,
       {"'q'", "T1 (dim 0) >= 1", "T1 = 0"}},
      {"T2 0",
       [](K& c) {
         c.k = c.make(ACL_BF16, {0, 1, 128}), c.dk = c.make(ACL_BF16, {0, 1, 128});
       },
       kInvalid,
       {"'k'", "T2 (dim 0) >= 1"}},
      {"BSND S2 0",
       bsnd([](K& c) {
         c.k = c.make(ACL_BF16, {2, 0, 1, 128}), c.dk = c.make(ACL_BF16, {2, 0, 1, 128});
       }),
       kInvalid,
       {"'k'", "S2 (dim 1) >= 1"}},
      {"N1 129",
       [](K& c) { c.build(true, 129, 16); },
       kInvalid,
       {"'q'", "N1 (dim -2) in [1, 128] on Ascend950", "N1 = 129"}},
      {"N2 2",
       [](K& c) {
         c.k = c.make(ACL_BF16, {4, 2, 128}), c.dk = c.make(ACL_BF16, {4, 2, 128});
       },
       kInvalid,
       {"'k'", "N2 (dim -2) = 1", "N2 = 2"}},
      {"D 64",
       [](K& c) {
         c.q = c.make(ACL_BF16, {6, 8, 64}), c.dq = c.make(ACL_BF16, {6, 8, 64});
       },
       kInvalid,
       {"'q'", "D (last dim) = 128", "D = 64"}},
      {"k D 64",
       [](K& c) {
         c.k = c.make(ACL_BF16, {4, 1, 64}), c.dk = c.make(ACL_BF16, {4, 1, 64});
       },
       kInvalid,
       {"'k'", "D = 64"}},
      {"K 2049", [](K& c) { c.build(true, 8, 2049); }, kInvalid, {"'sparseIndices'", "[1, 2048]", "K = 2049"}},
      {"BSND k batch",
       bsnd([](K& c) {
         c.k = c.make(ACL_BF16, {3, 2, 1, 128}), c.dk = c.make(ACL_BF16, {3, 2, 1, 128});
       }),
       kInvalid,
       {"'k'", "[2, 2, 1, 128]", "[3, 2, 1, 128]"}},
      {"w heads",
       [](K& c) {
         c.w = c.make(ACL_FLOAT, {6, 4}), c.dw = c.make(ACL_FLOAT, {6, 4});
       },
       kInvalid,
       {"'w'", "[6, 8]"}},
      {"sparse rows",
       [](K& c) {
         c.sparseIndices = c.make(ACL_INT32, {5, 1, 16});
       },
       kInvalid,
       {"'sparseIndices'", "[6, 1, 16]"}},
      {"sparse N2",
       [](K& c) {
         c.sparseIndices = c.make(ACL_INT32, {6, 2, 16});
       },
       kInvalid,
       {"'sparseIndices'"}},
      {"attn K",
       [](K& c) {
         c.attn = c.make(ACL_FLOAT, {6, 1, 8}), c.softmaxOut = c.make(ACL_FLOAT, {6, 1, 8});
       },
       kInvalid,
       {"'attnSoftmaxL1Norm'", "[6, 1, 16]", "the shape of sparseIndices"}},
  });
}

TEST_F(KlGradChecks, PerBatchTensorsFormatsAndMemory) {
  expectEachRejected<K>({
      {"seqUsedQ size",
       [](K& c) {
         c.seqUsedQ = c.ints({1, 1, 1});
       },
       kInvalid,
       {"'seqUsedQOptional'", "[B], B = 2"}},
      {"seqUsedK rank 2", replace(&K::seqUsedK, ACL_INT32, {2, 1}), kInvalid, {"'seqUsedKOptional'", "1 dims"}},
      {"residual size", [](K& c) { c.residual = c.ints({0}); }, kInvalid, {"'cmpResidualKOptional'", "[B]"}},
      {"metadata size", replace(&K::metadata, ACL_INT32, {32}), kInvalid, {"'metadataOptional'", "[64]", "[32]"}},
      {"metadata rank 2", replace(&K::metadata, ACL_INT32, {8, 8}), kInvalid, {"'metadataOptional'", "1 dims"}},
      {"q NZ", replace(&K::q, ACL_BF16, {6, 8, 128}, ACL_FORMAT_FRACTAL_NZ), kInvalid, {"'q'"}},
      {"dq on q", [](K& c) { c.dq = c.q; }, kInvalid, {"'dq'", "overlap the input q"}},
      {"dw on softmaxOut",
       [](K& c) {
         c.dw = c.pool.alias(c.softmaxOut, ACL_FLOAT, {6, 8});
       },
       kInvalid,
       {"'softmaxOut'", "overlap the output dw"}},
  });
}

TEST_F(KlGradChecks, Values) {
  expectEachRejected<K>({
      {"cu_q[0] 1",
       [](K& c) {
         setInts(c.cuQ, {1, 3, 6});
       },
       kInvalid,
       {"'cuSeqLensQOptional'", "cu_seqlens[0] = 0", "cu_seqlens_q[0] = 1"}},
      {"cu_q decreasing",
       [](K& c) {
         setInts(c.cuQ, {0, 4, 3});
       },
       kInvalid,
       {"'cuSeqLensQOptional'", "non-decreasing", "cu_seqlens_q[2] = 3 after cu_seqlens_q[1] = 4"}},
      {"cu_q past T1",
       [](K& c) {
         setInts(c.cuQ, {0, 3, 7});
       },
       kInvalid,
       {"'cuSeqLensQOptional'", "cu_seqlens[B] <= T1 (q dim 0) = 6", "cu_seqlens_q[2] = 7"}},
      {"cu_k past T2",
       [](K& c) {
         setInts(c.cuK, {0, 2, 5});
       },
       kInvalid,
       {"'cuSeqLensKOptional'", "T2 (k dim 0) = 4"}},
      {"seqused_q past length",
       [](K& c) {
         c.seqUsedQ = c.ints({4, 1});
       },
       kInvalid,
       {"'seqUsedQOptional'", "allocated length (3 for b = 0)", "seqused_q[0] = 4"}},
      {"seqused_q all zero",
       [](K& c) {
         c.seqUsedQ = c.ints({0, 0});
       },
       kInvalid,
       {"'seqUsedQOptional'", "at least one batch", "every seqused_q[b] = 0"}},
      {"seqused_k negative",
       [](K& c) {
         c.seqUsedK = c.ints({1, -1});
       },
       kInvalid,
       {"'seqUsedKOptional'", "seqused_k[1] = -1"}},
      {"BSND seqused_k past S2",
       bsnd([](K& c) {
         c.seqUsedK = c.ints({3, 1});
       }),
       kInvalid,
       {"'seqUsedKOptional'", "(2 for b = 0)"}},
      {"residual = cmpRatio",
       [](K& c) {
         c.cmpRatio = 4, c.residual = c.ints({1, 4});
       },
       kInvalid,
       {"'cmpResidualKOptional'", "< cmpRatio = 4", "cmp_residual_k[1] = 4"}},
      {"residual with cr 1",
       [](K& c) {
         c.residual = c.ints({1, 0});
       },
       kInvalid,
       {"'cmpResidualKOptional'", "< cmpRatio = 1"}},
  });
}

class KlGradChecksA2 : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    soc_.emplace(GetParam());
    recentError();
  }
  std::optional<mhc::ScopedSoc> soc_;
};

INSTANTIATE_TEST_SUITE_P(KlGrad, KlGradChecksA2, ::testing::Values("Ascend910B", "Ascend910_93"), profileName);

TEST_P(KlGradChecksA2, ProfileRules) {
  K noMetadata({});  // optional without seqused; no residual needed with cr 4
  noMetadata.build(true, 8, 512);
  noMetadata.metadata = nullptr;
  noMetadata.cmpRatio = 4;
  EXPECT_EQ(noMetadata.call().status, ACLNN_SUCCESS) << recentError();
  K wide({});
  wide.build(true, 64, 8192);
  EXPECT_EQ(wide.call().status, ACLNN_SUCCESS) << recentError();
  const std::string soc = GetParam();
  expectEachRejected<K>({
      {"N1 12", [](K& c) { c.build(true, 12, 16); }, kInvalid, {"'q'", "{8, 16, 32, 64} on " + soc, "N1 = 12"}},
      {"N1 128", [](K& c) { c.build(true, 128, 16); }, kInvalid, {"'q'", "N1 = 128"}},
      {"K 100",
       [](K& c) { c.build(true, 8, 100); },
       kInvalid,
       {"'sparseIndices'", "512 or a multiple of 1024", "K = 100"}},
      {"K 1536", [](K& c) { c.build(true, 8, 1536); }, kInvalid, {"'sparseIndices'", "K = 1536"}},
      {"metadata with seqused",
       a2([](K& c) {
         c.metadata = nullptr, c.seqUsedK = c.ints({1, 1});
       }),
       kInvalid,
       {"'metadataOptional'", "when seqUsedQOptional or seqUsedKOptional is given (" + soc + ")", "nullptr"}},
      {"S1 8193",
       bsnd([](K& c) {
         c.q = c.make(ACL_BF16, {1, 8193, 8, 128}), c.dq = c.make(ACL_BF16, {1, 8193, 8, 128});
         c.k = c.make(ACL_BF16, {1, 2, 1, 128}), c.dk = c.make(ACL_BF16, {1, 2, 1, 128});
         c.w = c.make(ACL_FLOAT, {1, 8193, 8}), c.dw = c.make(ACL_FLOAT, {1, 8193, 8});
         c.sparseIndices = c.make(ACL_INT32, {1, 8193, 1, 512}), c.attn = c.make(ACL_FLOAT, {1, 8193, 1, 512});
         c.softmaxOut = c.make(ACL_FLOAT, {1, 8193, 1, 512});
       }),
       kInvalid,
       {"'q'", "S1 <= 8192 per batch on " + soc, "S1 = 8193"}},
      {"B 257",
       a2([](K& c) {
         std::vector<int64_t> cu(258, 0);
         c.cuQ = c.ints(cu), c.cuK = c.ints(cu);
       }),
       kInvalid,
       {"'cuSeqLensQOptional'", "B <= 256", "B = 257"}},
  });
}

}  // namespace
}  // namespace gradkit::test::block_residuals
