#include "harness/suite_loader.h"

#include <algorithm>

#include "harness/error.h"
#include "harness/op_names.h"

namespace gradkit::cli {

std::filesystem::path defaultCasesDir() { return std::filesystem::path(GRADKIT_SOURCE_DIR) / "cases"; }

std::vector<LoadedSuite> loadSuites(std::string_view query, const std::filesystem::path& casesDir) {
  const std::vector<const Suite*> suites = registeredSuites();
  std::vector<std::string> names;
  for (const Suite* suite : suites) names.push_back(suite->name());
  const OpSelection selection = selectOps(names, query);
  if (!selection.error.empty()) throw HarnessError(selection.error);

  std::vector<LoadedSuite> loaded;
  for (const Suite* suite : suites) {
    if (std::find(selection.names.begin(), selection.names.end(), suite->name()) == selection.names.end()) continue;
    const std::filesystem::path file = casesDir / (suite->name() + ".json");
    LoadedSuite one{suite, loadCaseFile(file)};
    if (one.cases.op != suite->name()) {
      throw HarnessError(file.string() + ": 'op' is '" + one.cases.op + "', expected '" + suite->name() + "'");
    }
    loaded.push_back(std::move(one));
  }
  return loaded;
}

}  // namespace gradkit::cli
