#include "runtime/transport/shm/shm_endpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"
#include "runtime/transport/shm/shm_link.h"

namespace ringwork {
namespace {

constexpr char kPrefix[] = "ringwork-";

absl::Status Errno(absl::string_view what, absl::string_view name) {
  return absl::UnavailableError(absl::StrCat(what, " ", name, ": ", std::strerror(errno)));
}

absl::StatusOr<Mapping> Map(int fd, size_t offset, size_t bytes) {
  void* address =
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (address == MAP_FAILED) return Errno("mmap", "");
  return Mapping(address, bytes);
}

}  // namespace

Mapping::~Mapping() {
  if (address_ != nullptr) ::munmap(address_, bytes_);
}
Mapping::Mapping(Mapping&& other) noexcept : address_(other.address_), bytes_(other.bytes_) {
  other.address_ = nullptr;
}
Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (address_ != nullptr) ::munmap(address_, bytes_);
    address_ = other.address_;
    bytes_ = other.bytes_;
    other.address_ = nullptr;
  }
  return *this;
}

void RemoveStaleShmSegments() {
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    absl::string_view name = entry->d_name;
    if (!absl::StartsWith(name, kPrefix)) continue;
    absl::string_view rest = name.substr(sizeof(kPrefix) - 1);
    int pid = 0;
    if (!absl::SimpleAtoi(rest.substr(0, rest.find('-')), &pid) || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (::shm_unlink(absl::StrCat("/", name).c_str()) == 0) {
      RW_LOG(INFO) << "removed /dev/shm/" << name << " left by process " << pid;
    }
  }
  ::closedir(dir);
}

ShmEndpoint::ShmEndpoint(int rank, int world_size, size_t ring_bytes)
    : rank_(rank), world_size_(world_size), ring_bytes_(ring_bytes), peers_(world_size) {}

absl::StatusOr<std::unique_ptr<ShmEndpoint>> ShmEndpoint::Create(int rank, int world_size,
                                                                 size_t ring_bytes,
                                                                 uint64_t incarnation) {
  RemoveStaleShmSegments();
  std::unique_ptr<ShmEndpoint> endpoint(new ShmEndpoint(rank, world_size, ring_bytes));
  endpoint->name_ = absl::StrFormat("/%s%d-%016x", kPrefix, ::getpid(), incarnation);
  const int fd = ::shm_open(endpoint->name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return Errno("shm_open", endpoint->name_);
  const size_t bytes = ShmSegmentBytes(world_size, ring_bytes);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    absl::Status status = Errno("ftruncate", endpoint->name_);
    ::close(fd);
    ::shm_unlink(endpoint->name_.c_str());
    return status;
  }
  absl::StatusOr<Mapping> mapping = Map(fd, 0, bytes);
  ::close(fd);
  if (!mapping.ok()) {
    ::shm_unlink(endpoint->name_.c_str());
    return mapping.status();
  }
  endpoint->own_ = std::move(*mapping);
  // tmpfs pages start zeroed: every ring is empty and open.
  SegmentHeader* header = reinterpret_cast<SegmentHeader*>(endpoint->own_.data());
  header->version = kShmVersion;
  header->world_size = static_cast<uint32_t>(world_size);
  header->owner_rank = static_cast<uint32_t>(rank);
  header->ring_bytes = ring_bytes;
  header->owner_pid = ::getpid();
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kShmMagic;
  return endpoint;
}

ShmEndpoint::~ShmEndpoint() { Unlink(); }

DoorbellWord* ShmEndpoint::bell() const {
  return &reinterpret_cast<SegmentHeader*>(own_.data())->bell;
}

void ShmEndpoint::Unlink() {
  if (unlinked_) return;
  unlinked_ = true;
  ::shm_unlink(name_.c_str());
}

absl::Status ShmEndpoint::MapPeer(int peer, const std::string& segment_name) {
  if (peer < 0 || peer >= world_size_ || peer == rank_) {
    return absl::InvalidArgumentError(absl::StrCat("no peer rank ", peer));
  }
  if (segment_name.size() < 2 || segment_name[0] != '/' ||
      segment_name.find('/', 1) != std::string::npos ||
      !absl::StartsWith(segment_name.substr(1), kPrefix)) {
    return absl::InvalidArgumentError(absl::StrCat("bad segment name \"", segment_name, "\""));
  }
  std::lock_guard<std::mutex> lock(mu_);
  PeerMapping& mapping = peers_[peer];
  if (mapping.name == segment_name && mapping.slot.valid()) return absl::OkStatus();
  if (mapping.linked) {
    return absl::FailedPreconditionError(absl::StrCat(
        "peer rank ", peer, "'s segment is in use by a live link; not replacing it with \"",
        segment_name, "\""));
  }
  const int fd = ::shm_open(segment_name.c_str(), O_RDWR, 0);
  if (fd < 0) return Errno("shm_open", segment_name);  // Another host: expected.
  struct stat info;
  const size_t needed = ShmSegmentBytes(world_size_, ring_bytes_);
  if (::fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) < needed) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("segment ", segment_name,
                     " is smaller than this worker's layout needs; the peer "
                     "uses another --shm_ring_bytes or world size"));
  }
  absl::StatusOr<Mapping> header = Map(fd, 0, kShmPage);
  absl::StatusOr<Mapping> slot =
      header.ok() ? Map(fd, ShmSlotOffset(rank_, ring_bytes_), ShmSlotBytes(ring_bytes_))
                  : header.status();
  ::close(fd);
  if (!header.ok()) return header.status();
  if (!slot.ok()) return slot.status();
  const SegmentHeader* h = reinterpret_cast<const SegmentHeader*>(header->data());
  if (h->magic != kShmMagic || h->version != kShmVersion ||
      h->world_size != static_cast<uint32_t>(world_size_) || h->ring_bytes != ring_bytes_ ||
      h->owner_rank != static_cast<uint32_t>(peer)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "segment ", segment_name, " does not match: magic/version/world/ring/rank ", h->magic, "/",
        h->version, "/", h->world_size, "/", h->ring_bytes, "/", h->owner_rank));
  }
  mapping.name = segment_name;
  mapping.header = std::move(*header);
  mapping.slot = std::move(*slot);
  return absl::OkStatus();
}

bool ShmEndpoint::mapped(int peer) const {
  std::lock_guard<std::mutex> lock(mu_);
  return peer >= 0 && peer < world_size_ && peers_[peer].slot.valid();
}

std::unique_ptr<Link> ShmEndpoint::MakeLink(int peer, std::shared_ptr<PeerLiveness> liveness,
                                            size_t max_payload_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  PeerMapping& mapping = peers_[peer];
  mapping.linked = true;
  uint8_t* in_slot = own_.data() + ShmSlotOffset(peer, ring_bytes_);
  ShmLink::Rings rings;
  rings.out_header = reinterpret_cast<RingHeader*>(mapping.slot.data());
  rings.out_data = mapping.slot.data() + kShmPage;
  rings.in_header = reinterpret_cast<RingHeader*>(in_slot);
  rings.in_data = in_slot + kShmPage;
  rings.ring_bytes = ring_bytes_;
  rings.peer_bell = &reinterpret_cast<SegmentHeader*>(mapping.header.data())->bell;
  return std::make_unique<ShmLink>(rings, rank_, std::move(liveness), max_payload_bytes);
}

}  // namespace ringwork
