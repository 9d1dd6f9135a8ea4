// Kernel selection knobs shared by every op.
#pragma once

#include <cstdint>

namespace gradkit {

/** True when GRADKIT_FORCE_SCALAR is set to a non-empty value other than "0": ops then run their plain
 *  scalar reference kernels instead of the SIMD ones (for debugging and cross-checks). */
bool scalarKernelsForced();

/**
 * The kernel table a plan runs with, chosen once when it is made: `scalar` (the plain reference kernels) when
 * GRADKIT_FORCE_SCALAR is set, else `simd`. A table is a struct of function pointers, one per kernel of an op.
 */
template <class Table>
const Table& chooseKernels(const Table& simd, const Table& scalar) {
  return scalarKernelsForced() ? scalar : simd;
}

/** Outputs at least this large are written with non-temporal stores: they would only evict the inputs
 *  from the last-level cache. */
inline constexpr uint64_t kStreamingStoreBytes = uint64_t{16} << 20;

/** Rounds `bytes` up to the 64-byte alignment every workspace region gets. */
inline constexpr uint64_t alignWorkspace(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace gradkit
