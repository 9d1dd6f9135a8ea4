#include <iostream>

#include "commands/commands.h"
#include "harness/acl_session.h"
#include "harness/dump.h"
#include "harness/error.h"
#include "harness/progress.h"
#include "harness/rows.h"
#include "harness/suite_loader.h"

namespace gradkit::cli {
namespace {

// A failing row for a case whose run threw: the harness never lets one case stop the others.
VerifyRow errorRow(const std::string& op, const nlohmann::json& testCase, const std::string& message) {
  VerifyRow row;
  row.op = op;
  row.caseName = testCase.value("name", std::string("?"));
  row.dtype = testCase.contains("dtype") && testCase["dtype"].is_string() ? testCase["dtype"].get<std::string>() : "-";
  row.passed = false;
  row.note = message;
  return row;
}

}  // namespace

int runVerify(const VerifyOptions& options) {
  try {
    const std::filesystem::path casesDir =
        options.casesDir.empty() ? defaultCasesDir() : std::filesystem::path(options.casesDir);
    const std::vector<LoadedSuite> suites = loadSuites(options.op, casesDir);
    AclSession session;
    VerifyContext context;
    context.stream = session.stream();
    context.digestOnly = options.digestOnly;
    if (!options.dumpDir.empty()) {
      context.dumpDir = options.dumpDir;
      writeDumpReadme(*context.dumpDir);
    }

    int64_t total = 0;
    for (const LoadedSuite& loaded : suites) total += static_cast<int64_t>(loaded.cases.cases.size());
    Progress progress(total);
    std::vector<VerifyRow> rows;
    for (const LoadedSuite& loaded : suites) {
      const std::string op = loaded.suite->name();
      for (const nlohmann::json& testCase : loaded.cases.cases) {
        progress.step(op, testCase.value("name", std::string("?")));
        try {
          for (VerifyRow& row : loaded.suite->verify(testCase, context)) rows.push_back(std::move(row));
        } catch (const std::exception& error) {
          rows.push_back(errorRow(op, testCase, error.what()));
        }
      }
    }
    progress.finish();

    int64_t passed = 0, skipped = 0;
    for (const VerifyRow& row : rows) {
      passed += row.passed && !row.skipped ? 1 : 0;
      skipped += row.skipped ? 1 : 0;
    }
    const int64_t failed = static_cast<int64_t>(rows.size()) - passed - skipped;
    printVerifyTable(std::cout, rows);
    if (!options.jsonPath.empty()) writeJsonFile(options.jsonPath, verifyRowsToJson(rows));
    if (context.dumpDir) std::cout << "dumped to " << context.dumpDir->string() << "\n";
    std::cout << passed << " passed, " << failed << " failed";
    if (skipped > 0) std::cout << ", " << skipped << " skipped";
    std::cout << std::endl;
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "gradkit verify: " << error.what() << "\n";
    return 2;
  }
}

}  // namespace gradkit::cli
