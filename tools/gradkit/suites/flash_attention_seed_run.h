// Runs the seed's cases (cases/flash_attention_seed.json) through aclnnFlashAttentionScoreGradV4 under the Ascend950
// profile — the entry point the seed's cases target (rope with fp16 BNSD, Philox dropout from seed / offset, FP8) — in
// the seed's two modes: "grad_only" (the golden forward's out and statistics, rounded as the op takes them, are the
// backward's inputs, so only the backward is measured) and "auto_grad" (our aclnnFlashAttentionScoreV4 forward on the
// same context, the same Philox stream through seed / offset, then the backward). Both compare dq, dk, dv (and dq_rope,
// dk_rope) with the fp64 golden under the seed's rule (flash_attention_seed_compare.h), write one line per output and
// one per case to the run log, and assert the rule.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/rows.h"
#include "harness/suite.h"
#include "suites/flash_attention_seed_context.h"

namespace gradkit::cli {

/** The run log: $GRADKIT_SEED_LOG, else <--dump dir>/run_log.txt, else <temp dir>/gradkit_flash_attention_run_log.txt.
 */
std::filesystem::path seedRunLogPath(const VerifyContext& context);

/** An appending, timestamped log (upstream's common.log: one "[time] text" line per call). */
class SeedRunLog {
 public:
  /** Opens `path` for appending (creating its directory); throws HarnessError when it cannot. */
  explicit SeedRunLog(const std::filesystem::path& path);
  /** Appends "[YYYY-mm-dd HH:MM:SS] text". */
  void line(const std::string& text);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

/** One case in one mode ("grad_only" | "auto_grad"): the row (op flash_attention_score_grad, case
 * "seed_<name>_<mode>"). */
VerifyRow runSeedCase(SeedContext& context, const std::string& mode, aclrtStream stream, SeedRunLog& log);

/**
 * Every case of the seed case file `file` (the case-file format of harness/case_file.h) in each of its modes: the
 * context is made and the golden run once per case; a pending case gives one row per mode saying so (not run).
 */
std::vector<VerifyRow> runSeedCaseFile(const std::filesystem::path& file, const VerifyContext& context);

}  // namespace gradkit::cli
