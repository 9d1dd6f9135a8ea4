#include "harness/view_checks.h"

#include "harness/gather.h"

namespace gradkit::cli {

int64_t changedBytesOutsideView(const HostTensor& tensor, const std::vector<unsigned char>& before) {
  const std::vector<bool> covered = coveredElements(tensor.geometry(), tensor.storageElements());
  const size_t size = tensor.elementSize();
  int64_t changed = 0;
  for (size_t b = 0; b < before.size(); ++b) {
    const size_t element = b / size;
    const bool inView = element < covered.size() && covered[element];
    if (!inView && tensor.host()[b] != before[b]) ++changed;
  }
  return changed;
}

std::string hexBytes(const unsigned char* bytes, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string text = "0x";
  for (size_t i = size; i-- > 0;) {  // little-endian storage, most significant byte first
    text += digits[bytes[i] >> 4];
    text += digits[bytes[i] & 15];
  }
  return text;
}

void appendNote(VerifyRow& row, const std::string& note) { row.note += (row.note.empty() ? "" : "; ") + note; }

}  // namespace gradkit::cli
