// What the MhcPre and MhcPreBackward suites share: the case keys, the tensors' default shapes and values, the
// profile a case runs under, and moving values between case tensors and the golden.
//
// Case keys (besides name, dtype "bf16" | "fp16"):
//   "layout":      "TND" (default) with "tokens", or "BSND" with "batch" and "seq"
//   "N", "D":      streams and hidden size
//   "residual":    "square" (N*N, default), "factorial" (N!), "none" (alpha of 2, forward only)
//   "gammaOptional":     true (default) | false (gammaOptional = nullptr)
//   "caches":      true (default) | false (forward: invRms/hMix/hPre = nullptr)
//   "gradXPostOptional": true (default) | false (backward: gradXPostOptional = nullptr)
//   "opImplMode":  present: the V2 entry point with this mode; absent: V1
//   "normEps", "hcEps": default 1e-6
//   "soc":         the profile the case runs under (default: the process's, Ascend950 unless GRADKIT_SOC says)
// and a tensor spec per tensor key (e.g. "x": {"layout": "transposed"}) to override its view or values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/elements.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

/** The sizes and options of one mHC case. */
struct MhcCase {
  bool bsnd = false;
  int64_t batch = 1, seq = 1, tokens = 1;  // tokens = batch * seq for BSND
  int64_t streams = 4, hidden = 64;        // N, D
  int64_t residual = 16;                   // N*N, N!, or 0
  bool gamma = true, caches = true, gradXPost = true;
  bool v2 = false;
  int64_t opImplMode = 0;
  double normEps = 1e-6, hcEps = 1e-6;
  int64_t width() const { return streams * hidden; }
  int64_t fusion() const { return 2 * streams + residual; }
  int alphaLength() const { return residual == 0 ? 2 : 3; }
  /** The per-token leading dims: {batch, seq} or {tokens}, followed by `tail`. */
  std::vector<int64_t> shape(std::vector<int64_t> tail) const;
};

/** Parses the case keys above; throws HarnessError naming a bad key. */
MhcCase parseMhcCase(const nlohmann::json& testCase);

/** Default view and values of the mHC tensor named `key` (the API's argument names: "x", "phi", "gradHIn", ...). */
std::function<TensorDefaults(const CaseInfo&)> mhcDefaults(const std::string& key);

/**
 * Applies the case's "soc" for as long as the returned handle lives (nullptr when the case has none); the previous
 * profile comes back when it is destroyed.
 */
std::shared_ptr<void> applyCaseSoc(const nlohmann::json& testCase);

/** The tensor's view elements before the run, widened to double (dense, row-major). */
std::vector<double> denseValues(OpCase& c, const std::string& key);

/** The same values as `Real` (exact: every input dtype is at most fp32). */
template <class Real>
std::vector<Real> as(const std::vector<double>& values) {
  return std::vector<Real>(values.begin(), values.end());
}

/** Writes dense row-major `values` into the tensor's view (rounded to its dtype) and uploads its storage. */
void writeView(OpCase& c, const std::string& key, const std::vector<double>& values);

/** Stores dense `values` (rounded to the output's dtype) as the output's golden. */
template <class Real>
void storeGolden(OpCase& c, const std::string& key, const std::vector<Real>& values) {
  std::vector<unsigned char>& golden = c.golden(key);
  const aclDataType dtype = c.spec(key).dtype;
  for (size_t i = 0; i < values.size(); ++i) storeFromDouble(dtype, golden.data(), static_cast<int64_t>(i), values[i]);
}

/** The PyTorch autograd reference (forward + backward, fp32) as the speed peer, current torch where installed. */
OpCall::Peer mhcTorchPeer(const MhcCase& mhc, const std::string& dtypeText);

}  // namespace gradkit::cli
