#include "suites/flash_attention_seed_cases.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/suite_loader.h"
#include "suites/flash_attention_seed_run.h"

namespace gradkit::cli {
namespace {

class WithSeedCases : public Suite {
 public:
  explicit WithSeedCases(std::unique_ptr<Suite> suite) : suite_(std::move(suite)) {}
  std::string name() const override { return suite_->name(); }

  std::vector<VerifyRow> verify(const nlohmann::json& testCase, const VerifyContext& context) const override {
    if (!testCase.contains("seed_cases")) return suite_->verify(testCase, context);
    std::filesystem::path file = testCase["seed_cases"].get<std::string>();
    if (file.is_relative()) file = defaultCasesDir() / file;
    return runSeedCaseFile(file, context);
  }

  BenchRow bench(const nlohmann::json& benchCase, const BenchContext& context) const override {
    return suite_->bench(benchCase, context);
  }

 private:
  std::unique_ptr<Suite> suite_;
};

}  // namespace

std::unique_ptr<Suite> withFlashAttentionSeedCases(std::unique_ptr<Suite> suite) {
  return std::make_unique<WithSeedCases>(std::move(suite));
}

}  // namespace gradkit::cli
