// Operator names: aclnn -> snake_case, and --op selection by name or prefix.
#include <gtest/gtest.h>

#include "harness/op_names.h"

namespace gradkit::cli {
namespace {

TEST(OpNames, AclnnToSnake) {
  EXPECT_EQ(aclnnToSnake("aclnnThresholdBackward"), "threshold_backward");
  EXPECT_EQ(aclnnToSnake("aclnnDropoutV3Grad"), "dropout_v3_grad");
  EXPECT_EQ(aclnnToSnake("aclnnDropoutGenMaskV2"), "dropout_gen_mask_v2");
  EXPECT_EQ(aclnnToSnake("aclnnMhcPreBackward"), "mhc_pre_backward");
  EXPECT_EQ(aclnnToSnake("aclnnFlashAttentionScoreGrad"), "flash_attention_score_grad");
  EXPECT_EQ(aclnnToSnake("CompressorGrad"), "compressor_grad");
}

const std::vector<std::string> kKnown{"dropout_gen_mask_v2", "dropout_v3", "dropout_v3_grad", "threshold_backward"};

TEST(OpNames, EmptyQuerySelectsAll) { EXPECT_EQ(selectOps(kKnown, "").names, kKnown); }

TEST(OpNames, ExactNameSelectsOnlyItselfEvenWhenItIsAPrefix) {
  EXPECT_EQ(selectOps(kKnown, "dropout_v3").names, std::vector<std::string>{"dropout_v3"});
}

TEST(OpNames, PrefixSelectsEveryMatchInOrder) {
  EXPECT_EQ(selectOps(kKnown, "dropout").names,
            (std::vector<std::string>{"dropout_gen_mask_v2", "dropout_v3", "dropout_v3_grad"}));
  EXPECT_EQ(selectOps(kKnown, "thr").names, std::vector<std::string>{"threshold_backward"});
}

TEST(OpNames, AclnnFormIsAccepted) {
  EXPECT_EQ(selectOps(kKnown, "aclnnThresholdBackward").names, std::vector<std::string>{"threshold_backward"});
  EXPECT_EQ(selectOps(kKnown, "aclnnDropoutV3Grad").names, std::vector<std::string>{"dropout_v3_grad"});
}

TEST(OpNames, UnknownNameIsAnErrorListingTheKnownOnes) {
  const OpSelection selection = selectOps(kKnown, "softmax");
  EXPECT_TRUE(selection.names.empty());
  EXPECT_NE(selection.error.find("unknown operator 'softmax'"), std::string::npos) << selection.error;
  for (const std::string& name : kKnown) EXPECT_NE(selection.error.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace gradkit::cli
