// Machine limits measured on the spot, for `gradkit info` and the roofline ratio of `gradkit bench`.
#pragma once

#include <string>

namespace gradkit {

/** The Highway target the dispatcher picked for this CPU, e.g. "AVX3_ZEN4". */
std::string isaName();

/** STREAM-like copy bandwidth in GB/s (bytes read + bytes written per second), best of several runs of
 *  a copy with ordinary stores and one with non-temporal stores. */
double measureCopyBandwidthGBps();

/** Best GEMM GFLOP/s the GEMM wrapper reaches on large square products, fp32 or bf16 inputs. Throws
 *  std::runtime_error when the wrapper cannot run that input type on this machine. */
double measureGemmPeakGflops(bool bf16);

}  // namespace gradkit
