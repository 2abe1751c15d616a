// A fuzzer's input as a file that readers open by path, in memory (memfd):
//
//   MemoryFile file(data, size);
//   auto reader = CheckpointReader::Open(file.path());
#ifndef RINGWORK_TESTS_FUZZ_MEMORY_FILE_H_
#define RINGWORK_TESTS_FUZZ_MEMORY_FILE_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) : fd_(::memfd_create("fuzz-input", 0)) {
    if (fd_ < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

#endif  // RINGWORK_TESTS_FUZZ_MEMORY_FILE_H_
