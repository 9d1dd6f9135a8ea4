// The seed's six cases inside the flash_attention_score_grad suite: a case entry naming a seed case file,
//   {"name": "seed_cases", "seed_cases": "flash_attention_seed.json"}
// (a path relative to the repository's cases/ directory, or absolute), runs that file's cases through
// suites/flash_attention_seed_run.h, one row per case and mode; every other entry goes to the suite itself. So
// `gradkit verify --op flash_attention_score_grad` runs them, and adding a case is adding an entry to the seed file.
#pragma once

#include <memory>

#include "harness/op_suite.h"
#include "harness/suite.h"

namespace gradkit::cli {

/** `suite` with the "seed_cases" entries handled as above (name, bench and the other cases unchanged). */
std::unique_ptr<Suite> withFlashAttentionSeedCases(std::unique_ptr<Suite> suite);

/** GRADKIT_REGISTER_OP_SUITE(makeDescriptor) with the seed case entries handled (withFlashAttentionSeedCases). */
#define GRADKIT_REGISTER_OP_SUITE_WITH_SEED_CASES(makeDescriptor)                                                  \
  namespace {                                                                                                      \
  [[maybe_unused]] const bool registered_##makeDescriptor = [] {                                                   \
    ::gradkit::cli::registerSuite(                                                                                 \
        ::gradkit::cli::withFlashAttentionSeedCases(std::make_unique<::gradkit::cli::OpSuite>(makeDescriptor()))); \
    return true;                                                                                                   \
  }();                                                                                                             \
  }

}  // namespace gradkit::cli
