// Checks and notes every suite makes on a finished case: writes outside an output's view, readable bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/host_tensor.h"
#include "harness/rows.h"

namespace gradkit::cli {

/**
 * Bytes of `tensor`'s downloaded storage, outside its view, that differ from `before` (the storage as uploaded).
 * An op must leave them alone; a non-zero count fails the case.
 */
int64_t changedBytesOutsideView(const HostTensor& tensor, const std::vector<unsigned char>& before);

/** "0x..." of `size` little-endian bytes, most significant first, for mismatch notes. */
std::string hexBytes(const unsigned char* bytes, size_t size);

/** Appends `note` to the row's note, "; "-separated. */
void appendNote(VerifyRow& row, const std::string& note);

}  // namespace gradkit::cli
