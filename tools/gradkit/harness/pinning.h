// Thread pinning for `gradkit bench`. OpenMP reads OMP_PROC_BIND / OMP_PLACES when it starts, before main,
// so setting them later has no effect: the process re-executes itself with them set instead.
#pragma once

#include <string>

namespace gradkit::cli {

/**
 * When neither OMP_PROC_BIND nor OMP_PLACES is set, sets OMP_PROC_BIND=close and OMP_PLACES=cores and
 * re-executes /proc/self/exe with `argv` (does not return then). Returns normally when the user chose a
 * binding, when this process is already the re-executed one, or when exec fails.
 */
void ensureThreadPinning(char** argv);

/** "OMP_PROC_BIND=close OMP_PLACES=cores" as set in this process ("unset" for missing ones). */
std::string threadBinding();

}  // namespace gradkit::cli
