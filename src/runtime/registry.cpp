#include "runtime/registry.h"

#include <cstdio>

namespace gradkit::rt {

std::string pointerString(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(pointer)));
  return pointer == nullptr ? std::string("nullptr") : std::string(text);
}

uint64_t Registry::defaultContext(int32_t device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto found = defaultContexts_.find(device); found != defaultContexts_.end()) return found->second;
  const uint64_t id = nextId_++;
  contexts_[id] = Context{device, true, 0, {}};
  defaultContexts_[device] = id;
  return id;
}

uint64_t Registry::createContext(int32_t device) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = nextId_++;
  contexts_[id] = Context{device, false, 0, {}};
  return id;
}

std::optional<int32_t> Registry::contextDevice(uint64_t context) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = contexts_.find(context);
  if (found == contexts_.end()) return std::nullopt;
  return found->second.device;
}

bool Registry::isDefaultContext(uint64_t context) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = contexts_.find(context);
  return found != contexts_.end() && found->second.isDefault;
}

uint64_t Registry::newStreamLocked(uint64_t context, Context& owner, bool isDefault) {
  auto stream = std::make_shared<Stream>();  // may throw: nothing is recorded before this succeeds
  const uint64_t id = nextId_++;
  streams_[id] = StreamEntry{std::move(stream), context, isDefault};
  owner.streams.push_back(id);
  if (isDefault) owner.defaultStream = id;
  return id;
}

uint64_t Registry::createStream(uint64_t context) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = contexts_.find(context);
  if (found == contexts_.end()) return 0;
  return newStreamLocked(context, found->second, false);
}

std::shared_ptr<Stream> Registry::defaultStream(uint64_t context) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = contexts_.find(context);
  if (found == contexts_.end()) return nullptr;
  uint64_t id = found->second.defaultStream;
  if (id == 0) id = newStreamLocked(context, found->second, true);
  return streams_.at(id).stream;
}

std::shared_ptr<Stream> Registry::findStream(uint64_t stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = streams_.find(stream);
  return found == streams_.end() ? nullptr : found->second.stream;
}

bool Registry::isDefaultStream(uint64_t stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = streams_.find(stream);
  return found != streams_.end() && found->second.isDefault;
}

std::shared_ptr<Stream> Registry::removeStream(uint64_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = streams_.find(stream);
  if (found == streams_.end() || found->second.isDefault) return nullptr;
  std::shared_ptr<Stream> removed = std::move(found->second.stream);
  if (auto owner = contexts_.find(found->second.context); owner != contexts_.end()) {
    std::erase(owner->second.streams, stream);
  }
  streams_.erase(found);
  return removed;
}

std::vector<std::shared_ptr<Stream>> Registry::deviceStreams(int32_t device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> result;
  for (const auto& [id, context] : contexts_) {
    if (context.device != device) continue;
    for (uint64_t stream : context.streams) result.push_back(streams_.at(stream).stream);
  }
  return result;
}

void Registry::removeContextLocked(uint64_t context, std::vector<std::shared_ptr<Stream>>& out) {
  auto found = contexts_.find(context);
  if (found == contexts_.end()) return;
  for (uint64_t stream : found->second.streams) {
    auto entry = streams_.find(stream);
    out.push_back(std::move(entry->second.stream));
    streams_.erase(entry);
  }
  if (found->second.isDefault) defaultContexts_.erase(found->second.device);
  contexts_.erase(found);
}

std::vector<std::shared_ptr<Stream>> Registry::removeContext(uint64_t context) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> removed;
  removeContextLocked(context, removed);
  return removed;
}

std::vector<std::shared_ptr<Stream>> Registry::removeDevice(int32_t device) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint64_t> doomed;
  for (const auto& [id, context] : contexts_) {
    if (context.device == device) doomed.push_back(id);
  }
  std::vector<std::shared_ptr<Stream>> removed;
  for (uint64_t id : doomed) removeContextLocked(id, removed);
  return removed;
}

std::vector<std::shared_ptr<Stream>> Registry::removeAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> removed;
  while (!contexts_.empty()) removeContextLocked(contexts_.begin()->first, removed);
  return removed;
}

Registry& registry() {
  static Registry* const instance = new Registry();  // never deleted: see the declaration
  return *instance;
}

void closeStreams(const std::vector<std::shared_ptr<Stream>>& streams) {
  for (const auto& stream : streams) stream->close();
}

namespace {
thread_local uint64_t boundContextId = 0;
}

std::optional<uint64_t> boundContext() {
  if (boundContextId == 0 || !registry().contextDevice(boundContextId)) return std::nullopt;
  return boundContextId;
}

void bindContext(uint64_t context) { boundContextId = context; }

uint64_t effectiveContext() {
  if (auto bound = boundContext()) return *bound;
  return registry().defaultContext(0);
}

}  // namespace gradkit::rt
