// Named workspace booking. A plan books every region its run needs (staging copies, scratch of a sub-component)
// once, in GetWorkspaceSize; the executor reports the total, and the run resolves each region against the
// workspace the caller passed. The workspace is then all the memory a run uses beyond its outputs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradkit {

/** Alignment of every booked region, in bytes. */
inline constexpr uint64_t kWorkspaceAlignment = 64;

/** One booked region: `bytes` at `offset` from the workspace base. An unbooked region has 0 bytes. */
struct WorkspaceRegion {
  uint64_t offset = 0;
  uint64_t bytes = 0;

  bool booked() const { return bytes > 0; }
  /** The region's address in `workspace`. */
  template <class T = unsigned char>
  T* in(void* workspace) const {
    return reinterpret_cast<T*>(static_cast<unsigned char*>(workspace) + offset);
  }
};

/**
 * The layout of one workspace. Regions are appended in booking order, each aligned to kWorkspaceAlignment.
 * A sub-component books into its own WorkspaceBooking and the owner books that whole layout as one region
 * (bookNested), then hands the sub-component `region.in(workspace)` as its base at run time.
 * Sizes are checked: a total that would not fit in uint64 marks the booking overflowed (GetWorkspaceSize
 * then fails with 161002 instead of handing out a wrapped size).
 */
class WorkspaceBooking {
 public:
  /** Books `bytes` under `name` (0 bytes books nothing and returns an unbooked region). */
  WorkspaceRegion book(std::string_view name, uint64_t bytes);
  /** Books `elements * elementSize` bytes, overflow-checked. */
  WorkspaceRegion bookArray(std::string_view name, uint64_t elements, uint64_t elementSize);
  /** Books the whole layout of a sub-component under `name`. */
  WorkspaceRegion bookNested(std::string_view name, const WorkspaceBooking& inner);

  /** Bytes the run needs: the end of the last region (0 when nothing was booked). */
  uint64_t totalBytes() const { return total_; }
  /** True when a size did not fit in uint64; totalBytes() is then meaningless. */
  bool overflowed() const { return overflowed_; }
  /** "name: bytes @ offset" per region, one per line, nested regions indented (for messages and tests). */
  std::string describe() const;

 private:
  struct Entry {
    std::string name;
    WorkspaceRegion region;
    std::string nested;  // the inner layout's describe(), for bookNested
  };
  std::vector<Entry> entries_;
  uint64_t total_ = 0;
  bool overflowed_ = false;
};

}  // namespace gradkit
