// Case-file expansion: dtype lists, sweeps, name placeholders, and the errors for malformed files.
#include <gtest/gtest.h>

#include "harness/case_file.h"
#include "harness/error.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

std::vector<std::string> names(const std::vector<json>& cases) {
  std::vector<std::string> result;
  for (const json& c : cases) result.push_back(c["name"].get<std::string>());
  return result;
}

TEST(CaseFile, PlainCasesPassThrough) {
  const auto cases = expandCases(json::parse(R"([{"name": "a", "dtype": "fp32", "shape": [2]}, {"name": "b"}])"));
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0], json::parse(R"({"name": "a", "dtype": "fp32", "shape": [2]})"));
  EXPECT_EQ(names(cases), (std::vector<std::string>{"a", "b"}));
}

TEST(CaseFile, DtypeListGivesOneCasePerDtype) {
  const auto cases = expandCases(json::parse(R"([{"name": "basic", "dtype": ["fp32", "int8"], "shape": [3]}])"));
  EXPECT_EQ(names(cases), (std::vector<std::string>{"basic_fp32", "basic_int8"}));
  EXPECT_EQ(cases[1]["dtype"], "int8");
  EXPECT_EQ(cases[1]["shape"], json::parse("[3]"));
}

TEST(CaseFile, SweepSubstitutesEveryDollarStringAndNamesEachValue) {
  const auto cases = expandCases(json::parse(
      R"([{"name": "tail_{n}", "shape": ["$n", 2], "self": {"offset": "$n", "note": "$n is kept in text"},
           "sweep": {"var": "n", "from": 1, "to": 3}}])"));
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(names(cases), (std::vector<std::string>{"tail_1", "tail_2", "tail_3"}));
  EXPECT_EQ(cases[2]["shape"], json::parse("[3, 2]"));
  EXPECT_EQ(cases[2]["self"]["offset"], 3);
  EXPECT_EQ(cases[2]["self"]["note"], "$n is kept in text");
  EXPECT_FALSE(cases[0].contains("sweep"));
}

TEST(CaseFile, SweepValuesStepAndDtypeCombine) {
  const auto cases = expandCases(json::parse(
      R"([{"name": "len", "dtype": ["fp16", "bf16"], "shape": ["$k"], "sweep": {"var": "k", "values": [5, 9]}},
          {"name": "step", "shape": ["$m"], "sweep": {"var": "m", "from": 10, "to": 20, "step": 5}}])"));
  EXPECT_EQ(names(cases), (std::vector<std::string>{"len_fp16_5", "len_fp16_9", "len_bf16_5", "len_bf16_9", "step_10",
                                                    "step_15", "step_20"}));
  EXPECT_EQ(cases[3]["shape"], json::parse("[9]"));
  EXPECT_EQ(cases[3]["dtype"], "bf16");
}

TEST(CaseFile, DtypePlaceholderInName) {
  const auto cases = expandCases(json::parse(R"([{"name": "{dtype}_scalar", "dtype": ["int32"], "shape": []}])"));
  EXPECT_EQ(names(cases), (std::vector<std::string>{"int32_scalar"}));
}

TEST(CaseFile, DuplicateNamesAfterExpansionAreRejected) {
  try {
    expandCases(json::parse(R"([{"name": "x", "dtype": ["fp32"]}, {"name": "x_fp32"}])"));
    FAIL() << "expected a duplicate-name error";
  } catch (const HarnessError& error) {
    EXPECT_NE(std::string(error.what()).find("duplicate case name 'x_fp32'"), std::string::npos) << error.what();
  }
}

TEST(CaseFile, MalformedCasesAreRejectedWithTheirName) {
  EXPECT_THROW(expandCases(json::parse(R"([{"shape": [1]}])")), HarnessError);
  EXPECT_THROW(expandCases(json::parse(R"({"name": "not a list"})")), HarnessError);
  try {
    expandCases(json::parse(R"([{"name": "bad", "sweep": {"var": "n", "from": 5, "to": 1}}])"));
    FAIL() << "expected an error";
  } catch (const HarnessError& error) {
    EXPECT_NE(std::string(error.what()).find("case 'bad'"), std::string::npos) << error.what();
  }
  EXPECT_THROW(expandCases(json::parse(R"([{"name": "bad", "sweep": {"var": "n"}}])")), HarnessError);
  EXPECT_THROW(expandCases(json::parse(R"([{"name": "bad", "dtype": []}])")), HarnessError);
}

TEST(CaseFile, ParseCaseFileNeedsOpAndExpandsBothLists) {
  const CaseFile file =
      parseCaseFile(json::parse(R"({"op": "some_op", "cases": [{"name": "c", "dtype": ["fp32", "fp16"]}],
                      "bench": [{"name": "b", "sweep": {"var": "n", "values": [1, 2]}}]})"),
                    "test.json");
  EXPECT_EQ(file.op, "some_op");
  EXPECT_EQ(names(file.cases), (std::vector<std::string>{"c_fp32", "c_fp16"}));
  EXPECT_EQ(names(file.bench), (std::vector<std::string>{"b_1", "b_2"}));
  try {
    parseCaseFile(json::parse(R"({"cases": []})"), "cases/x.json");
    FAIL() << "expected an error";
  } catch (const HarnessError& error) {
    EXPECT_NE(std::string(error.what()).find("cases/x.json"), std::string::npos) << error.what();
  }
}

TEST(CaseFile, MissingFileIsAnError) { EXPECT_THROW(loadCaseFile("/nonexistent/gradkit/cases.json"), HarnessError); }

}  // namespace
}  // namespace gradkit::cli
