// The LightningIndexerV2Metadata suite: cases/lightning_indexer_v2_metadata.json through
// aclnnLightningIndexerV2Metadata, bit-exact against the image each case lists (worked out by hand from upstream's
// AI-CPU planner, lightning_indexer_v2_metadata_aicpu.cpp, with the profile's core counts: 28 cube / 56 vector cores on
// Ascend950), and the rejections of docs/lightning_indexer_v2.md's "Checks".
//
// Case keys (besides name, seed, expect_status, expect_message, soc):
//   "layout_q", "layout_k" (default "BSND" / layout_q; "null" passes nullptr), "batch_size" (0), "max_seqlen_q",
//   "max_seqlen_k" (-1), "heads" (numHeadsQ, 1), "heads_k" (1), "head_dim" (128), "topk" (1), "mask_mode" (0),
//   "cmp_ratio" (1); "cu_seqlens_q", "cu_seqlens_k", "seqused_q", "seqused_k", "residual": lists, passed when given;
//   "pass_metadata" (true);
//   "expected_aic": rows [enable, start BN2, start M, start S2, end BN2, end M, end S2, first workspace] of cores 0..;
//   "expected_aiv": rows [enable, BN2, M, workspace, workspace count, M start, M count] of vector cores 0..; every
//   other word 0.
// Tensor keys: cuSeqlensQ, cuSeqlensK, sequsedQ, sequsedK, cmpResidualK, metadata.
#include <string>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/op_suite.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

std::vector<int64_t> intList(const json& t, const char* key) {
  std::vector<int64_t> values;
  if (t.contains(key)) {
    for (const json& v : t.at(key)) values.push_back(v.get<int64_t>());
  }
  return values;
}

const char* kLists[][2] = {{"cuSeqlensQ", "cu_seqlens_q"},
                           {"cuSeqlensK", "cu_seqlens_k"},
                           {"sequsedQ", "seqused_q"},
                           {"sequsedK", "seqused_k"},
                           {"cmpResidualK", "residual"}};

std::function<TensorDefaults(const CaseInfo&)> defaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    TensorDefaults t{ACL_INT32, {1024}, info.seed, uniformValues(0.0, 0.0)};
    for (const auto& list : kLists) {
      if (key == list[0]) t.shape = {std::max<int64_t>(static_cast<int64_t>(intList(info.json, list[1]).size()), 1)};
    }
    return t;
  };
}

// The expected image: the listed rows, zeros elsewhere.
std::vector<double> expectedImage(const json& t) {
  std::vector<double> words(1024, 0.0);
  const auto fill = [&words, &t](const char* key, size_t first, size_t fields) {
    if (!t.contains(key)) return;
    size_t row = 0;
    for (const json& r : t.at(key)) {
      if (r.size() != fields)
        throw HarnessError(std::string("'") + key + "' rows have " + std::to_string(fields) + " words");
      for (size_t f = 0; f < fields; ++f) words[first + row * 8 + f] = r.at(f).get<double>();
      ++row;
    }
  };
  fill("expected_aic", 0, 8);
  fill("expected_aiv", 36 * 8, 7);
  return words;
}

OpDescriptor lightningIndexerV2Metadata() {
  OpDescriptor d;
  d.name = "lightning_indexer_v2_metadata";
  d.api = "aclnnLightningIndexerV2Metadata";
  d.needsShape = false;
  d.rowDtype = "int32";
  for (const auto& list : kLists) d.tensors.push_back(inputRule(list[0], defaults(list[0])));
  d.tensors.push_back(outputRule("metadata", defaults("metadata")));
  d.bind = [](OpCase& c) {
    const json& t = c.json();
    bool passed[5];
    for (size_t i = 0; i < 5; ++i) {
      const std::vector<int64_t> values = intList(t, kLists[i][1]);
      passed[i] = t.contains(kLists[i][1]);
      writeInts(c, kLists[i][0], values);
    }
    const std::string layoutQ = t.value("layout_q", std::string("BSND"));
    const std::string layoutK = t.value("layout_k", layoutQ);
    const bool passMetadata = t.value("pass_metadata", true);
    OpCall call;
    call.plan = [&c, &t, passed, layoutQ, layoutK, passMetadata](uint64_t* workspaceSize, aclOpExecutor** executor) {
      std::string q = layoutQ, k = layoutK;
      const auto optional = [&c, &passed](size_t i) { return passed[i] ? c.acl(kLists[i][0]) : nullptr; };
      return aclnnLightningIndexerV2MetadataGetWorkspaceSize(
          optional(0), optional(1), optional(2), optional(3), optional(4), t.value("heads", int64_t{1}),
          t.value("heads_k", int64_t{1}), t.value("head_dim", int64_t{128}), t.value("topk", int64_t{1}),
          t.value("batch_size", int64_t{0}), t.value("max_seqlen_q", int64_t{-1}), t.value("max_seqlen_k", int64_t{-1}),
          q == "null" ? nullptr : q.data(), k == "null" ? nullptr : k.data(), t.value("mask_mode", int64_t{0}),
          t.value("cmp_ratio", int64_t{1}), passMetadata ? c.acl("metadata") : nullptr, workspaceSize, executor);
    };
    call.golden = [&c, &t] { storeGolden(c, "metadata", expectedImage(t)); };
    return call;
  };
  d.run = aclnnLightningIndexerV2Metadata;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(lightningIndexerV2Metadata)
}  // namespace gradkit::cli
