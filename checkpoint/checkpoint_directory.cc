#include "checkpoint/checkpoint_directory.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "base/exit_code.h"
#include "base/logging.h"

namespace ringwork {
namespace {

constexpr char kLatest[] = "latest";
constexpr char kLock[] = ".lock";
constexpr char kTempPrefix[] = ".tmp-";
const std::regex& CheckpointNamePattern() {
  static const std::regex pattern("ckpt-([0-9]{12,19})\\.rwckpt");
  return pattern;
}

std::string Join(const std::string& dir, const std::string& name) { return dir + "/" + name; }

absl::Status Errno(const std::string& what) {
  return CheckpointError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::Status MakeDirs(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        return Errno(absl::StrCat("cannot create checkpoint directory ", partial));
      }
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return ConfigError(absl::StrCat("checkpoint directory ", dir, " is not a directory"));
  }
  return absl::OkStatus();
}

// Someone else who can write in the directory could plant links or files where this
// process writes, or replace what it wrote: refused.
absl::Status MustBeOurs(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return Errno(absl::StrCat("cannot stat ", dir));
  if (st.st_uid != ::geteuid()) {
    return ConfigError(absl::StrCat("checkpoint directory ", dir, " belongs to user ", st.st_uid,
                                    ", not to this process's user ", ::geteuid(),
                                    "; use a directory of your own"));
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    return ConfigError(
        absl::StrFormat("checkpoint directory %s (owner %d) is writable by every user (mode %04o); "
                        "chmod o-w it, or use a directory of your own",
                        dir, st.st_uid, st.st_mode & 07777));
  }
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno(absl::StrCat("cannot open directory ", dir));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno(absl::StrCat("fsync of directory ", dir, " failed"));
  return absl::OkStatus();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

// Writes `content` to `name` in `dir` atomically (temporary, fsync, rename, fsync dir).
absl::Status WriteSmallFileAtomically(const std::string& dir, const std::string& name,
                                      const std::string& content) {
  const std::string temp = Join(dir, absl::StrCat(kTempPrefix, name, "-", ::getpid()));
  ::unlink(temp.c_str());  // Left by a crash (we hold the lock).
  // A new file, never through a link someone placed.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(absl::StrCat("cannot create ", temp));
  const bool written =
      ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  const bool synced = written && ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) {
    absl::Status st = Errno(absl::StrCat("cannot write ", temp));
    ::unlink(temp.c_str());
    return st;
  }
  if (::rename(temp.c_str(), Join(dir, name).c_str()) != 0) {
    return Errno(absl::StrCat("cannot rename ", temp, " to ", name));
  }
  return SyncDir(dir);
}

}  // namespace

std::string CheckpointFileName(int64_t step) { return absl::StrFormat("ckpt-%012d.rwckpt", step); }

std::vector<std::string> ListCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  for (const std::string& name : Entries(dir)) {
    std::smatch m;
    int64_t step = 0;
    if (std::regex_match(name, m, CheckpointNamePattern()) && absl::SimpleAtoi(m[1].str(), &step)) {
      found.emplace_back(step, Join(dir, name));
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [step, path] : found) paths.push_back(std::move(path));
  return paths;
}

absl::StatusOr<std::string> LatestCheckpoint(const std::string& dir) {
  const std::string latest = Join(dir, kLatest);
  const int fd = ::open(latest.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat("no checkpoint in ", dir, " (no ", latest, ")"));
    }
    return Errno(absl::StrCat("cannot open ", latest));
  }
  char buffer[128];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  ::close(fd);
  if (n < 0) return Errno(absl::StrCat("cannot read ", latest));
  const std::string name(absl::StripTrailingAsciiWhitespace(absl::string_view(buffer, n)));
  if (!std::regex_match(name, CheckpointNamePattern())) {
    return CheckpointError(absl::StrCat(
        latest, " does not name a checkpoint file (",
        n == static_cast<ssize_t>(sizeof(buffer)) ? "too long" : name, "): it is corrupt"));
  }
  const std::string path = Join(dir, name);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return CheckpointError(
        absl::StrCat(latest, " names ", name, ", which is missing: ", std::strerror(errno)));
  }
  return path;
}

absl::StatusOr<std::unique_ptr<CheckpointDirectory>> CheckpointDirectory::OpenForWriting(
    const std::string& dir, int keep) {
  if (dir.empty()) return ConfigError("the checkpoint directory is empty");
  if (keep < 1) return ConfigError(absl::StrCat("keep ", keep, " checkpoints: expected >= 1"));
  absl::Status made = MakeDirs(dir);
  if (!made.ok()) return made;
  absl::Status ours = MustBeOurs(dir);
  if (!ours.ok()) return ours;
  const std::string lock = Join(dir, kLock);
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ELOOP) {
    return ConfigError(absl::StrCat("the lock ", lock, " is a symbolic link; remove it"));
  }
  if (fd < 0) return Errno(absl::StrCat("cannot open the lock ", lock));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {0};
    const ssize_t n = ::pread(fd, holder, sizeof(holder) - 1, 0);
    ::close(fd);
    return ConfigError(
        absl::StrCat("checkpoint directory ", dir, " is in use by another job (pid ",
                     n > 0 ? std::string(absl::StripTrailingAsciiWhitespace(holder)) : "unknown",
                     " holds ", lock, "); give each job its own directory"));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    RW_LOG(WARNING) << "could not record this pid in " << lock << ": " << std::strerror(errno);
  }
  // Left by writers that crashed (we hold the lock: none is writing now).
  for (const std::string& name : Entries(dir)) {
    if (absl::StartsWith(name, kTempPrefix)) {
      RW_LOG(INFO) << "removing " << Join(dir, name) << ", left by a writer that did not finish";
      ::unlink(Join(dir, name).c_str());
    }
  }
  return std::unique_ptr<CheckpointDirectory>(new CheckpointDirectory(dir, keep, fd));
}

CheckpointDirectory::~CheckpointDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // Releases the flock.
}

int64_t CheckpointDirectory::LatestStep(const std::string& dir) {
  absl::StatusOr<std::string> latest = LatestCheckpoint(dir);
  if (!latest.ok()) return -1;
  const std::string name = latest->substr(latest->rfind('/') + 1);
  int64_t step = -1;
  const size_t dash = name.find('-'), dot = name.find('.');
  if (dash == std::string::npos || dot == std::string::npos ||
      !absl::SimpleAtoi(name.substr(dash + 1, dot - dash - 1), &step)) {
    return -1;
  }
  return step;
}

absl::StatusOr<std::string> CheckpointDirectory::Write(const CheckpointManifest& manifest,
                                                       const std::vector<TensorData>& tensors) {
  if (manifest.step < min_step_) {
    return absl::UnavailableError(absl::StrCat(
        "not writing the checkpoint of step ", manifest.step, " in ", dir_,
        ": the writer before this one wrote step ", min_step_,
        " there; this worker's training state is older than the job's (it was left behind)"));
  }
  const std::string name = CheckpointFileName(manifest.step);
  const std::string temp = Join(dir_, absl::StrCat(kTempPrefix, name, "-", ::getpid()));
  ::unlink(temp.c_str());
  absl::Status st = WriteCheckpointFile(temp, manifest, tensors);
  if (!st.ok()) {
    ::unlink(temp.c_str());
    return st;
  }
  const std::string path = Join(dir_, name);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    absl::Status error = Errno(absl::StrCat("cannot rename ", temp, " to ", path));
    ::unlink(temp.c_str());
    return error;
  }
  st = SyncDir(dir_);
  if (st.ok()) st = WriteSmallFileAtomically(dir_, kLatest, name + "\n");
  if (!st.ok()) return st;
  std::vector<std::string> all = ListCheckpoints(dir_);
  for (size_t i = 0; i + keep_ < all.size(); ++i) {
    if (all[i] != path) ::unlink(all[i].c_str());
  }
  return path;
}

absl::Status CheckpointDirectory::RemoveAll() {
  ::unlink(Join(dir_, kLatest).c_str());
  for (const std::string& path : ListCheckpoints(dir_)) {
    if (::unlink(path.c_str()) != 0) return Errno(absl::StrCat("cannot remove ", path));
  }
  return SyncDir(dir_);
}

}  // namespace ringwork
