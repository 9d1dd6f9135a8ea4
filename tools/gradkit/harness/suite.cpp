#include "harness/suite.h"

#include <algorithm>

namespace gradkit::cli {
namespace {

// Function-local so that registration from other translation units' initialisers is safe.
std::vector<std::unique_ptr<Suite>>& registry() {
  static std::vector<std::unique_ptr<Suite>> suites;
  return suites;
}

}  // namespace

void registerSuite(std::unique_ptr<Suite> suite) { registry().push_back(std::move(suite)); }

std::vector<const Suite*> registeredSuites() {
  std::vector<const Suite*> suites;
  for (const auto& suite : registry()) suites.push_back(suite.get());
  std::sort(suites.begin(), suites.end(), [](const Suite* a, const Suite* b) { return a->name() < b->name(); });
  return suites;
}

}  // namespace gradkit::cli
