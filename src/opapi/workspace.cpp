#include "opapi/workspace.h"

namespace gradkit {

WorkspaceRegion WorkspaceBooking::book(std::string_view name, uint64_t bytes) {
  if (bytes == 0 || overflowed_) return {};
  uint64_t offset = 0, end = 0;
  const uint64_t mask = kWorkspaceAlignment - 1;
  if (__builtin_add_overflow(total_, mask, &offset) || __builtin_add_overflow(offset & ~mask, bytes, &end)) {
    overflowed_ = true;
    return {};
  }
  const WorkspaceRegion region{offset & ~mask, bytes};
  total_ = end;
  entries_.push_back({std::string(name), region, {}});
  return region;
}

WorkspaceRegion WorkspaceBooking::bookArray(std::string_view name, uint64_t elements, uint64_t elementSize) {
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, elementSize, &bytes)) {
    overflowed_ = true;
    return {};
  }
  return book(name, bytes);
}

WorkspaceRegion WorkspaceBooking::bookNested(std::string_view name, const WorkspaceBooking& inner) {
  if (inner.overflowed_) overflowed_ = true;
  const WorkspaceRegion region = book(name, inner.totalBytes());
  if (region.booked()) entries_.back().nested = inner.describe();
  return region;
}

std::string WorkspaceBooking::describe() const {
  std::string text;
  for (const Entry& entry : entries_) {
    text +=
        entry.name + ": " + std::to_string(entry.region.bytes) + " B @ " + std::to_string(entry.region.offset) + "\n";
    for (size_t start = 0; start < entry.nested.size();) {
      const size_t end = entry.nested.find('\n', start);
      text += "  " + entry.nested.substr(start, end - start + 1);
      start = end + 1;
    }
  }
  return text;
}

}  // namespace gradkit
