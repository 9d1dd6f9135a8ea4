// The process-wide table of live contexts and streams. Handles given to users are ids that are never
// reused, so an unknown or destroyed handle is always detected (no crash, no ABA confusion).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/stream.h"

namespace gradkit::rt {

/** The one emulated device. */
inline constexpr int32_t kDeviceCount = 1;

/** "0x1f" for messages about handles and pointers. */
std::string pointerString(const void* pointer);

/** Handle <-> id. Ids start at 1, so a null handle is never a live one. */
inline void* handleOf(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }
inline uint64_t idOf(const void* handle) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)); }

/**
 * Contexts and streams. Every method takes the table's lock briefly; none waits for stream work, so the
 * callers drain or close the returned streams after the lock is released (tasks may call back in).
 */
class Registry {
 public:
  /** The device's default context (the one aclrtSetDevice binds), created on first use. */
  uint64_t defaultContext(int32_t device);
  /** A new context on `device`. */
  uint64_t createContext(int32_t device);
  /** The device of a live context; nullopt when `context` is unknown or destroyed. */
  std::optional<int32_t> contextDevice(uint64_t context) const;
  /** True for the default context of its device (released only by aclrtResetDevice). */
  bool isDefaultContext(uint64_t context) const;

  /** Creates a stream in a live context; 0 when the context is gone. May throw (thread creation). */
  uint64_t createStream(uint64_t context);
  /** The stream used for a null handle in `context`, created on demand; nullptr when the context is gone. */
  std::shared_ptr<Stream> defaultStream(uint64_t context);
  /** A live stream, or nullptr. */
  std::shared_ptr<Stream> findStream(uint64_t stream) const;
  /** Removes a stream created by aclrtCreateStream; nullptr when unknown or a default stream. */
  std::shared_ptr<Stream> removeStream(uint64_t stream);
  /** True when `stream` is the default stream of some context (it is not the user's to destroy). */
  bool isDefaultStream(uint64_t stream) const;

  /** Every stream of every context on `device` (for aclrtSynchronizeDevice). */
  std::vector<std::shared_ptr<Stream>> deviceStreams(int32_t device) const;

  /** Removes a context and returns its streams for the caller to close. */
  std::vector<std::shared_ptr<Stream>> removeContext(uint64_t context);
  /** Removes every context of `device` (aclrtResetDevice). */
  std::vector<std::shared_ptr<Stream>> removeDevice(int32_t device);
  /** Removes everything (aclFinalize). */
  std::vector<std::shared_ptr<Stream>> removeAll();

 private:
  struct Context {
    int32_t device = 0;
    bool isDefault = false;
    uint64_t defaultStream = 0;  // 0 until first used
    std::vector<uint64_t> streams;
  };
  struct StreamEntry {
    std::shared_ptr<Stream> stream;
    uint64_t context = 0;
    bool isDefault = false;
  };

  uint64_t newStreamLocked(uint64_t context, Context& owner, bool isDefault);
  void removeContextLocked(uint64_t context, std::vector<std::shared_ptr<Stream>>& out);

  mutable std::mutex mutex_;
  uint64_t nextId_ = 1;  // one counter for contexts and streams: a context id is never a stream id
  std::map<uint64_t, Context> contexts_;
  std::map<uint64_t, StreamEntry> streams_;
  std::map<int32_t, uint64_t> defaultContexts_;
};

/** The process's registry. Deliberately never destroyed: worker threads may outlive static destruction. */
Registry& registry();

/** Closes (drains and joins) each stream. Call without holding any runtime lock. */
void closeStreams(const std::vector<std::shared_ptr<Stream>>& streams);

/** The context bound to this thread (aclrtSetDevice / aclrtSetCurrentContext), if it is still live. */
std::optional<uint64_t> boundContext();
/** Binds `context` to this thread (0 unbinds). */
void bindContext(uint64_t context);
/** The bound context, or device 0's default context for a thread that never chose one (lenient mode). */
uint64_t effectiveContext();

}  // namespace gradkit::rt
