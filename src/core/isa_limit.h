// GRADKIT_ISA: the best instruction set the process's SIMD kernels may use, so that an AVX-512 machine can run (and
// time) the kernels an AVX2-only CPU runs. Values: avx2 (Highway dispatches to AVX2 at best, and the matrix features
// of core/tile_path.h read as absent: no AVX512-BF16 tiles, no AMX), avx3 (AVX-512 at best: AVX3_ZEN4 / SPR targets
// and newer are left out), auto or unset (everything the CPU has). A value the CPU cannot run changes nothing;
// anything else is ignored. Read once; oneDNN has its own limit (ONEDNN_MAX_CPU_ISA). The tests that walk Highway's
// targets (forEachFmaTarget) restore the full set when they finish.
#pragma once

namespace gradkit {

/** Applies GRADKIT_ISA to Highway's dispatch (once per process; later calls do nothing). */
void applyIsaLimit();

/** True when GRADKIT_ISA keeps the process below AVX-512 (the AVX-512 matrix features then read as absent). */
bool isaLimitedBelowAvx512();

/** The GRADKIT_ISA value in effect ("avx2", "avx3"), or "" when there is no limit (for `gradkit info`). */
const char* isaLimitName();

}  // namespace gradkit
