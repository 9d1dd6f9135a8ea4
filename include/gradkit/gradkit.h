// gradkit's own calls, beside the CANN API: platform profile and library facts.
#ifndef GRADKIT_GRADKIT_H_
#define GRADKIT_GRADKIT_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Chooses the emulated SoC ("Ascend950", "Ascend910B", "Ascend910_93") before aclInit; overrides GRADKIT_SOC.
 * Returns ACL_ERROR_INVALID_PARAM for another name and ACL_ERROR_REPEAT_INITIALIZE after aclInit.
 */
ACL_FUNC_VISIBILITY aclError gradkitSetSoc(const char* socName);

/**
 * The AI cores of the emulated chip (what CANN reads from the device; the metadata operators plan with them): cube
 * (AIC) cores when `vector` is 0, vector (AIV) cores otherwise. Ascend950 32 / 64 (assumed), Ascend910B and
 * Ascend910_93 24 / 48.
 */
ACL_FUNC_VISIBILITY uint32_t gradkitAiCoreCount(int vector);

/**
 * Sets the threads gradkit's kernels use from the next operator call on (`threads` >= 1), overriding
 * GRADKIT_NUM_THREADS; 0 restores the default (GRADKIT_NUM_THREADS, else the number of cores). The results are the
 * same bits for any count. Returns ACL_ERROR_INVALID_PARAM for a negative count (nothing changes).
 */
ACL_FUNC_VISIBILITY aclError gradkitSetNumThreads(int32_t threads);

/** The threads gradkit's kernels use now (gradkitSetNumThreads, else GRADKIT_NUM_THREADS, else the cores). */
ACL_FUNC_VISIBILITY int32_t gradkitGetNumThreads(void);

/** The library version, "major.minor.patch". */
ACL_FUNC_VISIBILITY const char* gradkitVersion(void);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_GRADKIT_H_
