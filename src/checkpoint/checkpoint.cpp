#include "checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace gs {

using nlohmann::json;

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read {}: no such file or not readable", path);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error("{}: not well-formed JSON", path);
  return j;
}

namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string gb(size_t bytes) { return fmt::format("{:.2f} GB", double(bytes) / 1e9); }

}  // namespace

bool Checkpoint::is_skipped_name(const std::string& name) {
  static const char* const kPrefixes[] = {"model.vision_tower.", "model.embed_vision.", "model.audio_tower.",
                                          "model.embed_audio."};
  for (const char* p : kPrefixes)
    if (name.rfind(p, 0) == 0) return true;
  return name == "lm_head.weight";  // tied to embed_tokens
}

bool Checkpoint::is_vision_name(const std::string& name) {
  return name.rfind("model.vision_tower.", 0) == 0 || name.rfind("model.embed_vision.", 0) == 0;
}

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir_in, const CheckpointOptions& opts) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!is_dir(dir)) throw Error("model directory {} does not exist (or is not a directory)", dir);
  std::unique_ptr<Checkpoint> c(new Checkpoint());
  c->dir_ = dir;
  c->opts_ = opts;
  c->config_ = read_json_file(dir + "/config.json");
  if (!c->config_.is_object()) throw Error("{}/config.json: expected a JSON object", dir);
  std::string gen_path = dir + "/generation_config.json";
  json gen = is_file(gen_path) ? read_json_file(gen_path) : json();
  c->generation_ = GenerationConfig::from_json(gen, c->config_, gen_path);

  std::string index_path = dir + "/model.safetensors.index.json";
  if (is_file(index_path)) {
    json index = read_json_file(index_path);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw Error("{}: missing 'weight_map' object", index_path);
    std::map<std::string, std::vector<std::string>> by_file;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it->is_string()) throw Error("{}: weight_map entry '{}' is not a file name", index_path, it.key());
      const std::string& f = it->get_ref<const std::string&>();
      if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
        throw Error("{}: weight_map entry '{}' names '{}', which is not a file in the model directory", index_path,
                    it.key(), f);
      by_file[f].push_back(it.key());
    }
    if (by_file.empty()) throw Error("{}: weight_map is empty", index_path);
    for (const auto& [file, names] : by_file) c->add_file(file, &names);
  } else if (is_file(dir + "/model.safetensors")) {
    c->add_file("model.safetensors", nullptr);
  } else {
    throw Error("{}: no model.safetensors or model.safetensors.index.json", dir);
  }
  log::info("checkpoint {}: {} tensors, {} {} weights; skipped {} {}audio/lm_head tensors ({})", dir,
            c->tensors_.size(), gb(c->loaded_bytes()), opts.vision ? "text+vision" : "text", c->skipped_tensors_,
            opts.vision ? "" : "vision/", gb(c->skipped_bytes_));
  return c;
}

void Checkpoint::add_file(const std::string& file_name, const std::vector<std::string>* only) {
  std::string path = dir_ + "/" + file_name;
  if (!is_file(path))
    throw Error("{}: shard {} listed in model.safetensors.index.json does not exist", dir_, file_name);
  files_.push_back(std::make_unique<SafetensorsFile>(path));
  const SafetensorsFile& f = *files_.back();
  if (only) {
    for (const std::string& name : *only)
      if (!f.find(name))
        throw Error("{}: tensor '{}' is listed in model.safetensors.index.json but not stored in the file", path,
                    name);
  }
  for (const SafetensorsTensor& t : f.tensors()) {
    if (is_skipped_name(t.name) && !(opts_.vision && is_vision_name(t.name))) {
      skipped_bytes_ += t.nbytes;
      ++skipped_tensors_;
      continue;
    }
    auto [it, inserted] = tensors_.try_emplace(t.name);
    if (!inserted) throw Error("tensor '{}' is stored twice: in {} and in {}", t.name, *it->second.file, path);
    TensorRef& r = it->second;
    r.name = t.name;
    r.dtype = t.dtype;
    r.shape = t.shape;
    r.data = f.data(t);
    r.nbytes = t.nbytes;
    r.file = &f.path();
  }
}

const TensorRef* Checkpoint::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorRef& Checkpoint::tensor(const std::string& name) const {
  if (const TensorRef* r = find(name)) return *r;
  std::string files;
  for (const auto& f : files_) files += (files.empty() ? "" : ", ") + f->path();
  throw Error("tensor '{}' not found in checkpoint {} (files: {})", name, dir_, files);
}

std::vector<std::string> Checkpoint::files() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

size_t Checkpoint::loaded_bytes() const {
  size_t n = 0;
  for (const auto& [name, t] : tensors_) n += t.nbytes;
  return n;
}

}  // namespace gs
