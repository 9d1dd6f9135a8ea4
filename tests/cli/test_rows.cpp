// The verify/bench rows as JSON (the keys issue 2 fixes) and as table cells.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <sstream>

#include "harness/rows.h"

namespace gradkit::cli {
namespace {

std::set<std::string> keys(const nlohmann::json& object) {
  std::set<std::string> result;
  for (const auto& item : object.items()) result.insert(item.key());
  return result;
}

TEST(Rows, VerifyJsonHasTheIssueKeys) {
  VerifyRow row{"threshold_backward", "tail_3_fp16", "fp16", true, true, 0.0, 0.0, "", "00ff00ff00ff00ff"};
  const nlohmann::json json = verifyRowsToJson({row});
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(keys(json[0]), (std::set<std::string>{"op", "case", "dtype", "passed", "skipped", "bitexact", "max_abs_err",
                                                  "max_rel_err", "output_digest"}));
  EXPECT_EQ(json[0]["output_digest"], "00ff00ff00ff00ff");
  EXPECT_EQ(json[0]["case"], "tail_3_fp16");
  EXPECT_EQ(json[0]["passed"], true);
}

// A case that did not run is reported skipped, never passed: its own field, its own word in the table.
TEST(Rows, ACaseThatDidNotRunIsSkippedNotPassed) {
  VerifyRow row;
  row.op = "flash_attention_score_grad", row.caseName = "seed_FP8E5_03_auto_grad", row.dtype = "fp8_e5m2";
  row.skipped = true;
  row.extra = "PENDING, not run: no FP8 forward";
  const nlohmann::json json = verifyRowsToJson({row});
  EXPECT_EQ(json[0]["passed"], false);
  EXPECT_EQ(json[0]["skipped"], true);
  std::ostringstream table;
  printVerifyTable(table, {row});
  EXPECT_NE(table.str().find("SKIP"), std::string::npos) << table.str();
  EXPECT_EQ(table.str().find("PASS"), std::string::npos) << table.str();
  EXPECT_EQ(table.str().find("FAIL"), std::string::npos) << table.str();
}

TEST(Rows, VerifyJsonWritesInfiniteErrorsAsNullAndKeepsTheNote) {
  VerifyRow row{"op", "c", "fp32", false, false, std::numeric_limits<double>::infinity(), 0.5, "why", ""};
  const nlohmann::json json = verifyRowsToJson({row});
  EXPECT_TRUE(json[0]["max_abs_err"].is_null());
  EXPECT_EQ(json[0]["max_rel_err"], 0.5);
  EXPECT_EQ(json[0]["note"], "why");
}

TEST(Rows, BenchJsonHasPeerSecondsOnlyWhenTimed) {
  BenchRow timed;
  timed.op = "op";
  timed.caseName = "c";
  timed.dtype = "bf16";
  timed.seconds = 0.5;
  timed.gbps = 2.0;
  timed.gflops = 0.0;
  timed.ratio = 0.9;
  timed.peerSeconds = 0.25;
  BenchRow untimed = timed;
  untimed.peerSeconds.reset();
  const nlohmann::json json = benchRowsToJson({timed, untimed});
  EXPECT_EQ(keys(json[0]),
            (std::set<std::string>{"op", "case", "dtype", "seconds", "gbps", "gflops", "ratio", "peer_seconds"}));
  EXPECT_EQ(json[0]["peer_seconds"], 0.25);
  EXPECT_EQ(keys(json[1]), (std::set<std::string>{"op", "case", "dtype", "seconds", "gbps", "gflops", "ratio"}));
}

TEST(Rows, FormatNumber) {
  EXPECT_EQ(formatNumber(0.0), "0");
  EXPECT_EQ(formatNumber(1.5e-7), "1.5e-07");
  EXPECT_EQ(formatNumber(23.4567), "23.5");
  EXPECT_EQ(formatNumber(std::numeric_limits<double>::infinity()), "inf");
}

TEST(Rows, VerifyTableListsEveryRowAndExplainsFailures) {
  std::ostringstream out;
  printVerifyTable(out, {{"op", "good", "int8", true, true, 0.0, 0.0, "", ""},
                         {"op", "bad", "fp32", false, false, 2.0, 1.0, "3 of 8 elements differ", ""}});
  const std::string text = out.str();
  EXPECT_NE(text.find("op  good  int8   PASS"), std::string::npos) << text;
  EXPECT_NE(text.find("op  bad   fp32   FAIL  2            1            no"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL op bad: 3 of 8 elements differ"), std::string::npos) << text;
}

TEST(Rows, VerifyExtraMetricsAreAColumnOnlyWhenARowHasThem) {
  std::ostringstream plain;
  printVerifyTable(plain, {{"op", "good", "bf16", true, false, 0.0, 0.0, "", ""}});
  EXPECT_EQ(plain.str().find("extra"), std::string::npos) << plain.str();
  VerifyRow row{"op", "good", "bf16", true, false, 0.0, 0.0, "", "", "6.2 PASS 100%"};
  std::ostringstream out;
  printVerifyTable(out, {row, {"op", "other", "bf16", true, false, 0.0, 0.0, "", ""}});
  EXPECT_NE(out.str().find("bitexact  extra"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("no        6.2 PASS 100%"), std::string::npos) << out.str();
  EXPECT_EQ(verifyRowsToJson({row})[0]["extra"], "6.2 PASS 100%");
}

}  // namespace
}  // namespace gradkit::cli
