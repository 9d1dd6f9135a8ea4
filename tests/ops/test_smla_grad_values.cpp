// aclnnSparseFlashMlaGrad through the C API against the fp64 golden backward fed the same out and lse (the forward's,
// run through the C API), under the double benchmark: dq, dOriKv, dCmpKv, dSinks and the softmax L1 norms, for SWA
// (masks 0 / 3 / 4, bounded and unbounded windows, rows that see nothing), HCA with residuals, CSA with hostile index
// lists (-1 padding, duplicates whose gradients add up, dropped entries), ori sparse lists, cmp mask 0 with top-k
// lengths, BSND and TND, FLOAT16 and BFLOAT16, N1 1 .. 16, padding rows, strided inputs and outputs, optional
// outputs left out, rows of several key tiles.
#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "ops/smla_grad_util.h"

namespace gradkit::test::smla {
namespace {

struct Named {
  std::string name;
  Spec s;
  GradWants wants;
};

void PrintTo(const Named& named, std::ostream* os) { *os << named.name; }

Spec swa(const std::string& layout, aclDataType dtype = ACL_BF16) {
  Spec s;
  s.dtype = dtype;
  s.layoutQ = s.layoutKv = layout;
  s.winLeft = 7, s.winRight = 0;
  if (layout == "BSND") s.qRows = {6, 6}, s.oriRows = {21, 21};
  return s;
}

Spec compressed(const std::string& layout, int64_t k2, aclDataType dtype = ACL_BF16) {
  Spec s = swa(layout, dtype);
  s.oriRows = layout == "BSND" ? std::vector<int64_t>{38, 38} : std::vector<int64_t>{30, 38};
  if (layout == "BSND") s.oriUsed = {30, 38};
  s.cmpRows = layout == "BSND" ? std::vector<int64_t>{9, 9} : std::vector<int64_t>{7, 9};
  if (layout == "BSND") s.cmpUsed = {7, 9};
  s.residual = {2, 2};
  s.ratio = 4, s.cmpMode = 3, s.cmpK = k2;
  return s;
}

std::vector<Named> cases() {
  std::vector<Named> all;
  const auto add = [&all](const std::string& name, const Spec& s, GradWants w = {}) { all.push_back({name, s, w}); };
  add("swa_band_tnd_bf16", swa("TND"));
  add("swa_band_bsnd_fp16", swa("BSND", ACL_FLOAT16));
  {
    Spec s = swa("TND");
    s.oriMode = 0, s.winLeft = -1, s.winRight = -1;
    add("swa_mask0_tnd", s);
    s.oriMode = 3, s.qRows = {14, 3}, s.oriRows = {9, 12};  // batch 0: rows 0..4 see nothing
    add("swa_causal_empty_rows_tnd", s);
    s.oriMode = 4, s.winLeft = -1, s.winRight = 2;
    add("swa_band_left_unbounded_right_2_tnd", s);
  }
  {  // several key tiles per row, 16 heads
    Spec s = swa("TND");
    s.oriMode = 0, s.winLeft = -1, s.winRight = -1, s.qRows = {2, 3}, s.oriRows = {300, 131}, s.n1 = 16;
    add("swa_mask0_three_tiles_n16_bf16", s);
    s.dtype = ACL_FLOAT16;
    add("swa_mask0_three_tiles_n16_fp16", s);
  }
  add("hca_tnd_bf16", compressed("TND", 0));
  add("hca_bsnd_fp16", compressed("BSND", 0, ACL_FLOAT16));
  {
    Spec s = compressed("TND", 12);
    s.cmpKind = IndexKind::Hostile;
    add("csa_hostile_tnd_bf16", s);
    s.dtype = ACL_FLOAT16, s.seed = 2;
    add("csa_hostile_tnd_fp16", s);
    s.cmpKind = IndexKind::Uniform, s.n1 = 16, s.cmpK = 40;
    add("csa_uniform_k40_n16_fp16", s);
    s.n1 = 1, s.seed = 5;
    add("csa_uniform_n1_fp16", s);
  }
  {
    Spec s = compressed("BSND", 8);
    s.cmpKind = IndexKind::Hostile, s.qUsed = {4, 6};
    add("csa_hostile_bsnd_padding_rows", s);
    s.cmpMode = 0, s.residual = {}, s.cmpLengths = true;
    add("csa_cmp_mask0_lengths_bsnd", s);
  }
  for (int64_t mode : {0, 3, 4}) {
    Spec s = compressed("TND", 8);
    s.oriMode = mode, s.winLeft = mode == 4 ? 6 : -1, s.winRight = mode == 4 ? 1 : -1;
    s.oriK = 12, s.oriKind = IndexKind::Hostile, s.oriLengths = mode == 0, s.cmpKind = IndexKind::Hostile;
    add("ori_cmp_sparse_mask" + std::to_string(mode) + "_tnd", s);
  }
  {
    Spec s = compressed("TND", 10);
    s.extraQRows = 3, s.cmpKind = IndexKind::Hostile;
    s.sinks = {0.5f, -std::numeric_limits<float>::infinity(), -0.25f, 1.0f};
    add("csa_extra_rows_inf_sink_tnd", s);
  }
  {
    Spec s = compressed("BSND", 6);
    s.stridedQ = true, s.stridedOut = true, s.stridedKv = true, s.stridedSmall = true;
    GradWants w;
    w.stridedOutputs = true, w.stridedDOut = true;
    add("csa_strided_everything_bsnd", s, w);
    s.kvElementStride = true, s.stridedKv = false, s.seed = 9;
    add("csa_kv_element_stride_bsnd", s, w);
  }
  {
    Spec s = compressed("TND", 8);
    s.scale = 0.0;  // P uniform over the visible keys; only the P^T dO part of the K = V rows remains
    add("csa_scale_zero_tnd", s);
    s.scale = -0.0625;
    add("csa_negative_scale_tnd", s);
  }
  {
    Spec s = compressed("TND", 8);
    GradWants w;
    w.dOri = false, w.dSinks = false;
    add("csa_without_dori_dsinks", s, w);
    w = {};
    w.dCmp = false;
    add("csa_without_dcmp", s, w);
  }
  return all;
}

class SmlaGradValues : public ::testing::TestWithParam<Named> {};

TEST_P(SmlaGradValues, MatchesGolden) {
  const Named& c = GetParam();
  GradData g(c.s);
  const GradResult r = runGradApi(g, c.wants);
  EXPECT_TRUE(gradMatchesGolden(g, r, c.wants, c.s.dtype == ACL_BF16 && nativeBf16Process()));
}

INSTANTIATE_TEST_SUITE_P(Cases, SmlaGradValues, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Named>& param) { return param.param.name; });

TEST(SmlaGradValues, DuplicateKeysAccumulate) {
  // Every row lists compressed row 0 three times: its gradient is three times one listing's (up to rounding), and the
  // golden (which accumulates duplicates) agrees.
  Spec s = compressed("TND", 3);
  s.cmpList.assign(static_cast<size_t>(3 * (3 + 5)), 0);
  GradData g(s);
  const GradResult r = runGradApi(g);
  EXPECT_TRUE(gradMatchesGolden(g, r, {}, nativeBf16Process()));
}

}  // namespace
}  // namespace gradkit::test::smla
