#include "checkpoint/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace gs {

size_t TensorDecl::nbytes() const {
  size_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

namespace {

const char* st_dtype(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::U8: return "U8";
  }
  return "?";
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

std::string safetensors_header_bytes(const std::vector<TensorDecl>& tensors,
                                     const std::map<std::string, std::string>& metadata) {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  size_t offset = 0;
  for (const TensorDecl& t : tensors) {
    size_t n = t.nbytes();
    h[t.name] = {{"dtype", st_dtype(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string json = h.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t len = json.size();
  for (int i = 0; i < 8; ++i) out[i] = char((len >> (8 * i)) & 0xff);
  return out + json;
}

void write_safetensors(const std::string& path, const std::vector<TensorDecl>& tensors, const TensorFiller& fill,
                       const std::map<std::string, std::string>& metadata) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) throw Error("cannot create {}: {}", path, std::strerror(errno));
  auto write = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) throw Error("cannot write {}: {}", path, std::strerror(errno));
  };
  std::string header = safetensors_header_bytes(tensors, metadata);
  write(header.data(), header.size());
  std::vector<uint8_t> buf;
  for (const TensorDecl& t : tensors) {
    // A zero-byte tensor has no data to fill, and an empty buffer may have no storage at all
    // (data() == nullptr, which a filler's memcpy must never get).
    if (t.nbytes() == 0) continue;
    buf.assign(t.nbytes(), 0);
    fill(t, buf.data());
    write(buf.data(), buf.size());
  }
  FILE* raw = f.release();
  if (std::fclose(raw) != 0) throw Error("cannot write {}: {}", path, std::strerror(errno));
}

std::vector<std::string> write_sharded_safetensors(const std::string& dir, const std::vector<TensorDecl>& tensors,
                                                   const TensorFiller& fill, size_t max_shard_bytes) {
  std::vector<std::vector<TensorDecl>> shards(1);
  size_t in_shard = 0, total = 0;
  for (const TensorDecl& t : tensors) {
    size_t n = t.nbytes();
    if (!shards.back().empty() && in_shard + n > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += n;
    total += n;
  }
  if (shards.size() == 1) {
    write_safetensors(dir + "/model.safetensors", tensors, fill);
    return {"model.safetensors"};
  }
  std::vector<std::string> names;
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    write_safetensors(dir + "/" + name, shards[i], fill);
    for (const TensorDecl& t : shards[i]) weight_map[t.name] = name;
    names.push_back(name);
  }
  nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  std::string path = dir + "/model.safetensors.index.json";
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) throw Error("cannot create {}: {}", path, std::strerror(errno));
  std::string text = index.dump(2) + "\n";
  if (std::fwrite(text.data(), 1, text.size(), f.get()) != text.size())
    throw Error("cannot write {}: {}", path, std::strerror(errno));
  names.push_back("model.safetensors.index.json");
  return names;
}

}  // namespace gs
