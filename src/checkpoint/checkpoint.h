// A Hugging Face model directory as published: config.json, generation_config.json, and the
// weights in model.safetensors or in shards listed by model.safetensors.index.json. Files are
// memory-mapped; nothing is read until a tensor's bytes are used.
//
// Text only by default: tensors of the vision and audio towers (and the tied lm_head) are left out
// of the index and never touched; their bytes are counted so the load log can say what was skipped.
// With CheckpointOptions::vision the vision tower and its projection (model.vision_tower.*,
// model.embed_vision.*) are kept (multimodal serving).
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/generation_config.h"
#include "checkpoint/safetensors.h"

namespace gs {

struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the mapping; valid while the Checkpoint lives
  size_t nbytes = 0;
  const std::string* file = nullptr;  // the shard holding it
  int64_t numel() const;
};

struct CheckpointOptions {
  bool vision = false;  // keep the vision tower's tensors
};

class Checkpoint {
 public:
  // Opens DIR; throws gs::Error naming the file and problem.
  static std::unique_ptr<Checkpoint> open(const std::string& dir, const CheckpointOptions& opts = {});

  const std::string& dir() const { return dir_; }
  const nlohmann::json& config_json() const { return config_; }
  std::string config_path() const { return dir_ + "/config.json"; }
  const GenerationConfig& generation_config() const { return generation_; }

  const TensorRef* find(const std::string& name) const;  // null when absent (or skipped)
  // Throws gs::Error "tensor NAME not found in DIR (files: ...)" when absent.
  const TensorRef& tensor(const std::string& name) const;
  const std::map<std::string, TensorRef>& tensors() const { return tensors_; }
  std::vector<std::string> files() const;  // shard paths

  size_t loaded_bytes() const;       // bytes of the tensors kept in the index
  size_t skipped_bytes() const { return skipped_bytes_; }  // vision/audio/lm_head
  int skipped_tensors() const { return skipped_tensors_; }

  // True for names a text-only engine never reads.
  static bool is_skipped_name(const std::string& name);
  static bool is_vision_name(const std::string& name);  // model.vision_tower.* / model.embed_vision.*

 private:
  Checkpoint() = default;
  void add_file(const std::string& file_name, const std::vector<std::string>* only);

  std::string dir_;
  CheckpointOptions opts_;
  nlohmann::json config_;
  GenerationConfig generation_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, TensorRef> tensors_;
  size_t skipped_bytes_ = 0;
  int skipped_tensors_ = 0;
};

// Reads and parses a JSON file; throws gs::Error naming the path (missing, unreadable, malformed).
nlohmann::json read_json_file(const std::string& path);

}  // namespace gs
