// One case of the seed's pytest framework (spec fag.md 5.3, 5.12), read from cases/flash_attention_seed.json with the
// seed's own keys:
//   "name"; "B", "N1", "N2", "S1", "S2", "D", "D_V" (TND: S1 / S2 default to the largest lengths);
//   "actual_seq_qlen", "actual_seq_kvlen": TND per-batch lengths (not cumulative, as the seed writes them);
//   "dtype": "fp16" | "bf16" | "fp32" | "fp8_e5m2" | "fp8_e4m3fn"; "out_dtype": "fp16" | "bf16" | "fp32";
//   "seed", "offset": the dropout stream's (spec 3); "sparse_mode"; "pre_tockens_input", "next_tockens_input" (the
//   seed's spelling; both the golden and the operator get them, unlike upstream, spec 5.13);
//   "drop_out_possibility": the KEEP probability (despite the name);
//   "pse_type" 0..3; "pse_shape": NONE | BN1S | 1NSS | BNSS | BNHS | 1NHS (types 0/1) | BN | N (types 2/3);
//   "atten_mask_dtype": NONE | BOOL | uint8; "atten_mask_shape": NONE | SS | 11SS | B1SS | BNSS;
//   "rope": 0 | 1 (Q and K of head dim D split at 128 into query + queryRope, key + keyRope);
//   "input_layout": BNSD | BSND | BSH | SBH | TND.
// gradkit's own keys (all optional):
//   "modes": ["grad_only", "auto_grad"] (default both): grad_only feeds the golden forward's out and statistics to our
//            backward, auto_grad runs our forward first (the seed's pta_mode);
//   "data_seed": the seed of the standard normal inputs (default 0);
//   "pending": a reason: the case is listed, logged and reported as pending instead of run;
//   "pending_modes": {"auto_grad": reason}: the same for one mode;
//   "expect_first_keep_bits": the keep bits ('0'/'1') the dropout stream must give the first row of batch 0,
//            head 0 from its column 0 (a check of the Philox stream against spec 3.6's worked values).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "acl/acl_base.h"
#include "suites/flash_attention_suite_common.h"

namespace gradkit::cli {

/** The seed's sizes, dtypes and semantics of one case. */
struct SeedCase {
  std::string name;
  std::string layout = "BNSD";
  int64_t batch = 1, n1 = 1, n2 = 1, s1 = 1, s2 = 1;
  int64_t d = 16, dv = 16;           // D: the full head dim of Q and K (rope included)
  std::vector<int64_t> seqQ, seqKv;  // per-batch lengths (padded layouts: all S1, S2)
  std::string dtypeText = "fp16", outDtypeText = "fp16";
  aclDataType dtype = ACL_FLOAT16;     // the inputs' dtype
  aclDataType outDtype = ACL_FLOAT16;  // dq, dk, dv (= dtype except for FP8)
  int64_t seed = 0, offset = 0;
  int64_t sparseMode = 0, preTokens = 65536, nextTokens = 65536;
  double keepProb = 1.0;
  int64_t pseType = 1;
  std::string pseShape = "NONE";
  std::string maskDtypeText = "NONE", maskShape = "NONE";
  bool rope = false;
  std::vector<std::string> modes{"grad_only", "auto_grad"};
  uint64_t dataSeed = 0;
  std::string pending;
  std::map<std::string, std::string> pendingModes;
  std::string expectFirstKeepBits;

  bool tnd() const { return layout == "TND"; }
  bool fp8() const { return dtype == ACL_FLOAT8_E5M2 || dtype == ACL_FLOAT8_E4M3FN; }
  bool hasMask() const { return maskShape != "NONE"; }
  bool hasPse() const { return pseShape != "NONE"; }
  bool slopes() const { return pseShape == "BN" || pseShape == "N"; }
  /** Head dim of the query / key tensors the operator gets (128 with rope) and of the rope slices (D - 128). */
  int64_t dQk() const { return rope ? kRopeSplit : d; }
  int64_t dRope() const { return rope ? d - kRopeSplit : 0; }
  /** scaleValue: 1 / sqrt(D) with the full D (spec 2.13). */
  double scale() const;
  /** The layout description the suites' layout helpers take (query/key head dim dQk()). */
  FaCase layoutCase() const;

  static constexpr int64_t kRopeSplit = 128;  // the seed splits Q and K at 128 (spec 5.8)
};

/** Parses one case; throws HarnessError naming the case and the bad key. */
SeedCase parseSeedCase(const nlohmann::json& testCase);

}  // namespace gradkit::cli
