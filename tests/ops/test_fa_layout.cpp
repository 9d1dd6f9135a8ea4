// The flash attention size model (src/ops/flash_attention/fa_layout.h) against shapes written out by hand: reading
// sizes from each layout's dims, writing dims back, the strides of each axis and TND's cumulative ends.
#include <gtest/gtest.h>

#include <vector>

#include "ops/flash_attention/fa_layout.h"

namespace gradkit::ops {
namespace {

using Dims = std::vector<int64_t>;

// B 2, N1 4, N2 2, S1 3, S2 5, D 8, D_V 6 written in every padded layout by hand.
struct LayoutDims {
  FaLayout layout;
  Dims query, key, value;
};
const LayoutDims kPadded[] = {
    {FaLayout::BNSD, {2, 4, 3, 8}, {2, 2, 5, 8}, {2, 2, 5, 6}},
    {FaLayout::BSND, {2, 3, 4, 8}, {2, 5, 2, 8}, {2, 5, 2, 6}},
    {FaLayout::BSH, {2, 3, 32}, {2, 5, 16}, {2, 5, 12}},
    {FaLayout::SBH, {3, 2, 32}, {5, 2, 16}, {5, 2, 12}},
};

TEST(FaLayout, SizesFromEachPaddedLayoutAndBack) {
  for (const LayoutDims& c : kPadded) {
    SCOPED_TRACE(faLayoutName(c.layout));
    const FaSizes s = faSizesOf(c.layout, c.query, c.key, c.value, 4);
    EXPECT_EQ(s.b, 2);
    EXPECT_EQ(s.n1, 4);
    EXPECT_EQ(s.n2, 2);
    EXPECT_EQ(s.s1, 3);
    EXPECT_EQ(s.s2, 5);
    EXPECT_EQ(s.d, 8);
    EXPECT_EQ(s.dv, 6);
    EXPECT_EQ(faLayoutShape(s, true, s.n1, s.d), c.query);
    EXPECT_EQ(faLayoutShape(s, false, s.n2, s.d), c.key);
    EXPECT_EQ(faLayoutShape(s, false, s.n2, s.dv), c.value);
    EXPECT_EQ(faStatisticsShape(s), (Dims{2, 4, 3, 8}));
    EXPECT_EQ(static_cast<int64_t>(c.query.size()), faLayoutRank(c.layout));
    EXPECT_EQ(faLayoutFromName(faLayoutName(c.layout)), c.layout);
  }
}

TEST(FaLayout, PackedHeadsThatDoNotSplitReadAsZero) {
  // H = 30 is not 4 * D: the model gives D = 0 and leaves the message to the check.
  const FaSizes s = faSizesOf(FaLayout::BSH, {2, 3, 30}, {2, 5, 16}, {2, 5, 12}, 4);
  EXPECT_EQ(s.d, 0);
  EXPECT_EQ(s.n2, 0);
  EXPECT_EQ(faRopeDim(faSizesOf(FaLayout::BSH, {2, 3, 32}, {2, 5, 16}, {2, 5, 12}, 4), 10), 0);
  EXPECT_EQ(faRopeDim(faSizesOf(FaLayout::BSH, {2, 3, 32}, {2, 5, 16}, {2, 5, 12}, 4), 16), 4);
  EXPECT_FALSE(faLayoutFromName("BHSD").has_value());
}

TEST(FaLayout, AxisStridesOfDenseTensorsMatchTheirShapes) {
  // Dense row-major strides of each layout's query: the element (b, n, s, e) sits at b*sb + n*sn + s*ss + e*se,
  // written out from the layout's axis order.
  const int64_t s1 = 3, n = 4, d = 8, b = 2;
  const FaAxisStrides bnsd = faAxisStrides(FaLayout::BNSD, {n * s1 * d, s1 * d, d, 1}, d);
  EXPECT_EQ(bnsd.batch, n * s1 * d);
  EXPECT_EQ(bnsd.head, s1 * d);
  EXPECT_EQ(bnsd.row, d);
  const FaAxisStrides bsnd = faAxisStrides(FaLayout::BSND, {s1 * n * d, n * d, d, 1}, d);
  EXPECT_EQ(bsnd.head, d);
  EXPECT_EQ(bsnd.row, n * d);
  const FaAxisStrides sbh = faAxisStrides(FaLayout::SBH, {b * n * d, n * d, 1}, d);
  EXPECT_EQ(sbh.batch, n * d);
  EXPECT_EQ(sbh.row, b * n * d);
  EXPECT_EQ(sbh.head, d);
  EXPECT_EQ(sbh.element, 1);
  const FaAxisStrides tnd = faAxisStrides(FaLayout::TND, {n * d, d, 1}, d);
  EXPECT_EQ(tnd.batch, 0);
  EXPECT_EQ(tnd.row, n * d);
}

TEST(FaLayout, TndBatchesFromCumulativeEnds) {
  FaSizes s = faSizesOf(FaLayout::TND, {9, 4, 8}, {12, 2, 8}, {12, 2, 8}, 4);
  EXPECT_EQ(s.t1, 9);
  EXPECT_EQ(s.t2, 12);
  faSetSequenceEnds({2, 2, 9, 0}, {5, 7, 12, 0}, &s);  // batch 1 has no queries, batch 3 is not computed
  EXPECT_EQ(s.seqQ, (Dims{2, 0, 7, 0}));
  EXPECT_EQ(s.seqKv, (Dims{5, 2, 5, 0}));
  EXPECT_EQ(s.b, 4);
  EXPECT_EQ(s.s1, 7);
  EXPECT_EQ(s.s2, 5);
  EXPECT_EQ(faStatisticsShape(s), (Dims{9, 4, 8}));
  EXPECT_EQ(faDropoutElements(s), uint64_t{4} * (2 * 5 + 0 * 2 + 7 * 5));
  EXPECT_EQ(faDropMaskBytes(s), (uint64_t{4} * 45 + 7) / 8);
}

TEST(FaLayout, DropoutCountSaturates) {
  FaSizes s = faSizesOf(FaLayout::BNSD, {INT64_MAX, 4, INT64_MAX, 8}, {INT64_MAX, 2, 5, 8}, {INT64_MAX, 2, 5, 8}, 4);
  EXPECT_EQ(faDropoutElements(s), UINT64_MAX);
}

TEST(FaLayout, MaskAndPseFormsByName) {
  FaSizes s;
  s.b = 2, s.n1 = 3, s.s1 = 5, s.s2 = 7;
  const std::vector<std::pair<const char*, Dims>> masks = {
      {"SS", {5, 7}}, {"11SS", {1, 1, 5, 7}}, {"B1SS", {2, 1, 5, 7}}, {"BNSS", {2, 3, 5, 7}}};
  for (const auto& [name, dims] : masks) EXPECT_EQ(faMaskShape(s, faMaskFormFromName(name).value()), dims) << name;
  EXPECT_FALSE(faMaskFormFromName("template").has_value());
  for (const int64_t mode : {2, 3, 4, 7, 8}) EXPECT_EQ(faTemplateMaskOf(mode), FaMaskForm::Template) << mode;
  EXPECT_EQ(faTemplateMaskOf(6), FaMaskForm::PrefixTemplate);
  for (const int64_t mode : {0, 1, 5, 9}) EXPECT_FALSE(faTemplateMaskOf(mode).has_value()) << mode;
  EXPECT_EQ(faMaskShape(s, FaMaskForm::Template), (Dims{2048, 2048}));
  EXPECT_EQ(faMaskShape(s, FaMaskForm::PrefixTemplate), (Dims{3072, 2048}));
  const std::vector<std::pair<const char*, Dims>> pses = {{"BNSS", {2, 3, 5, 7}},
                                                          {"BN1S", {2, 3, 1, 7}},
                                                          {"1NSS", {1, 3, 5, 7}},
                                                          {"BNHS", {2, 3, 1024, 7}},
                                                          {"1NHS", {1, 3, 1024, 7}},
                                                          {"BN", {2, 3}},
                                                          {"N", {3}}};
  for (const auto& [name, dims] : pses) EXPECT_EQ(faPseShape(s, faPseFormFromName(name).value()), dims) << name;
  EXPECT_FALSE(faPseFormFromName("none").has_value());
}

}  // namespace
}  // namespace gradkit::ops
