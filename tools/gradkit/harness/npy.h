// A writer for numpy's .npy format (version 1.0), so verify --dump data loads with numpy.load.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "acl/acl_base.h"

namespace gradkit::cli {

/**
 * numpy's descr for `dtype`: "<f4", "<f2", "<f8", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8",
 * "|b1"; bf16 is stored as its raw bits ("<u2") and fp8 as "|u1", since numpy has no such types.
 * Throws HarnessError for other dtypes.
 */
std::string npyDescr(aclDataType dtype);

/** The complete .npy file (header padded to a multiple of 64 bytes, then the dense row-major data). */
std::string npyBytes(aclDataType dtype, const std::vector<int64_t>& shape, const void* data);

/** Writes npyBytes to `path`, creating its directory; throws HarnessError on I/O failure. */
void writeNpy(const std::filesystem::path& path, aclDataType dtype, const std::vector<int64_t>& shape,
              const void* data);

}  // namespace gradkit::cli
