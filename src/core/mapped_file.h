// A read-only memory map of a whole file. Checkpoint shards are mapped, never read into memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gs {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws gs::Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gs
