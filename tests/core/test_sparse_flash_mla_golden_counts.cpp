// How many slots of a top-k list the sparse flash MLA golden reads when a top-k length exceeds the mask's count (mask
// mode 0): docs/sparse_attention.md ("What one query row sees") says min(K, ori_topk_length) (ori) and min(K2,
// cmp_topk_length) (cmp, mode 0 with lengths), which is also what upstream's kernel and aclnnSparseFlashMla
// (smla_keys.h) read; the golden reads min(K, length, S2act) and min(K2, length, C). The two differ only when slots
// past S2act (C) hold entries in range: duplicates. These tests state the documented reading; they fail on the golden
// as it is (reported to the lead).
#include <gtest/gtest.h>

#include <string>

#include "golden/sparse_flash_mla.h"

namespace {

using gradkit::golden::SmlaBatch;
using gradkit::golden::SmlaKey;
using gradkit::golden::SparseFlashMlaProblem;

std::string keysText(const SparseFlashMlaProblem& p, int64_t b, int64_t i) {
  std::string text;
  for (const SmlaKey& key : gradkit::golden::sparseFlashMlaVisibleKeys(p, b, i)) {
    if (!text.empty()) text += ' ';
    text.append(key.cmp ? "c" : "o").append(std::to_string(key.index)).append("#").append(std::to_string(key.slot));
  }
  return text;
}

TEST(SparseFlashMlaGoldenCounts, OriTopkLengthPastS2actIsReadInFull) {
  SparseFlashMlaProblem p;
  p.batches = {SmlaBatch{1, 3, 0, 0}};  // S2act = 3, ori mask 0
  p.oriTopk = 6;
  p.oriIndices = {2, 1, 0, 0, 1, 2};  // every entry in range, the last three duplicates
  p.oriTopkLength = {6};
  EXPECT_EQ(keysText(p, 0, 0), "o2#0 o1#1 o0#2 o0#3 o1#4 o2#5");
}

TEST(SparseFlashMlaGoldenCounts, CmpTopkLengthPastCIsReadInFull) {
  SparseFlashMlaProblem p;
  p.batches = {SmlaBatch{1, 0, 2, 0}};  // C = 2, cmp mask 0
  p.cmpRatio = 4;
  p.cmpTopk = 4;
  p.cmpIndices = {0, 1, 1, 0};
  p.cmpTopkLength = {4};
  EXPECT_EQ(keysText(p, 0, 0), "c0#0 c1#1 c1#2 c0#3");
}

}  // namespace
