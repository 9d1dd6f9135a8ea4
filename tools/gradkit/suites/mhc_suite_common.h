// What the MhcPre and MhcPreBackward suites share: the case keys, the tensors' default shapes and values, and the
// PyTorch peer; below them, the same for the MhcPreSinkhorn pair (MhcPreSinkhornCase: its keys on top of these).
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
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/mhc_pre_sinkhorn.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

/** The token dims of an mHC case: "layout" "TND" (default) with "tokens", or "BSND" with "batch" and "seq". */
struct MhcTokens {
  bool bsnd = false;
  int64_t batch = 1, seq = 1, tokens = 1;  // tokens = batch * seq for BSND
  /** The per-token leading dims: {batch, seq} or {tokens}, followed by `tail`. */
  std::vector<int64_t> shape(std::vector<int64_t> tail) const;
};

/** Parses "layout", "tokens" / "batch", "seq" (each at least `minimum`); throws HarnessError naming a bad key. */
MhcTokens parseMhcTokens(const nlohmann::json& testCase, int64_t minimum);

/** The sizes and options of one mHC case. */
struct MhcCase : MhcTokens {
  int64_t streams = 4, hidden = 64;  // N, D
  int64_t residual = 16;             // N*N, N!, or 0
  bool gamma = true, caches = true, gradXPost = true;
  bool v2 = false;
  int64_t opImplMode = 0;
  double normEps = 1e-6, hcEps = 1e-6;
  int64_t width() const { return streams * hidden; }
  int64_t fusion() const { return 2 * streams + residual; }
  int alphaLength() const { return residual == 0 ? 2 : 3; }
};

/** Parses the case keys above; throws HarnessError naming a bad key. */
MhcCase parseMhcCase(const nlohmann::json& testCase);

/** Default view and values of the mHC tensor named `key` (the API's argument names: "x", "phi", "gradHIn", ...). */
std::function<TensorDefaults(const CaseInfo&)> mhcDefaults(const std::string& key);

/** Bytes of the named tensors, each once: what the mHC benches count a call to move. */
double bytesOf(OpCase& c, const std::vector<std::string>& keys);

/** The FLOPs the MhcPre benches count: the matmul, 2 T F K forward; the backward's two, 4 T F K. */
double mhcPreFlops(const MhcCase& mhc, bool backward);

/** The FLOPs the MhcPost benches count: 2 T N D (N + 1) forward, 4 T N D (N + 1) backward. */
double mhcPostFlops(const MhcCase& mhc, bool backward);

/** The FLOPs the MhcSinkhorn benches count: per token and each of 2 iters + 1 steps about n^2 divisions, sums and
 *  (backward) products, 2 FLOPs an element forward, 4 backward. */
double mhcSinkhornFlops(int64_t tokens, int64_t n, int64_t iters, bool backward);

/** The PyTorch autograd reference (forward + backward, fp32) as the speed peer, current torch where installed. */
OpCall::Peer mhcTorchPeer(const MhcCase& mhc, const std::string& dtypeText);

// The MhcPreSinkhorn pair (suites/mhc_pre_sinkhorn.cpp, mhc_pre_sinkhorn_backward.cpp).

/**
 * A case of the MhcPreSinkhorn pair: parseMhcCase's "layout", "tokens" / "batch", "seq", "N" (n, default 4), "D"
 * (c), "normEps", "hcEps" and "caches" (false: the forward's saved tensors are nullptr; only without needBackward),
 * with residual n*n always; plus "needBackward" (forward, default true), "hcMult" (forward, default 4) and
 * "numIters" (default 20: the forward's attribute, and the steps 2 numIters of sumOut and normOut).
 */
struct MhcPreSinkhornCase : MhcCase {
  bool needBackward = true;
  int64_t hcMult = 4, iters = 20;
};

/** Parses the keys above; throws HarnessError naming a bad key. */
MhcPreSinkhornCase parseMhcPreSinkhornCase(const nlohmann::json& testCase);

/** Default view and values of the tensor `key` of the pair (the API's argument names: "x", "hin", "gradHRes", ...). */
std::function<TensorDefaults(const CaseInfo&)> mhcPreSinkhornDefaults(const std::string& key);

/** golden::mhcPreSinkhorn of the case's x, phi, alpha, bias (their values before the run), HF32 operands. */
template <class Real>
golden::MhcPreSinkhornOutputs<Real> mhcPreSinkhornGolden(OpCase& c, const MhcPreSinkhornCase& s);

/** tools/peers/mhc_pre_sinkhorn.py on x, phi, alpha, bias (and the gradients with `backward`). */
OpCall::Peer mhcPreSinkhornPeer(const MhcPreSinkhornCase& s, const std::string& dtypeText, bool backward);

}  // namespace gradkit::cli
