// The suite wrapper for entries that name a case file (harness/nested_case_files.h).
#include "harness/nested_case_files.h"

#include "harness/suite_loader.h"

namespace gradkit::cli {
namespace {

class WithNestedCaseFiles : public Suite {
 public:
  WithNestedCaseFiles(std::unique_ptr<Suite> suite, std::string key, CaseFileRunner runner)
      : suite_(std::move(suite)), key_(std::move(key)), runner_(std::move(runner)) {}
  std::string name() const override { return suite_->name(); }
  std::vector<VerifyRow> verify(const nlohmann::json& testCase, const VerifyContext& context) const override {
    if (!testCase.contains(key_)) return suite_->verify(testCase, context);
    const std::filesystem::path file = testCase[key_].get<std::string>();
    return runner_(file.is_relative() ? defaultCasesDir() / file : file, context);
  }
  BenchRow bench(const nlohmann::json& benchCase, const BenchContext& context) const override {
    return suite_->bench(benchCase, context);
  }

 private:
  std::unique_ptr<Suite> suite_;
  std::string key_;
  CaseFileRunner runner_;
};

}  // namespace

std::unique_ptr<Suite> withNestedCaseFiles(std::unique_ptr<Suite> suite, std::string key, CaseFileRunner runner) {
  return std::make_unique<WithNestedCaseFiles>(std::move(suite), std::move(key), std::move(runner));
}

}  // namespace gradkit::cli
