// Writes small GGUF files in memory for the tests (metadata only, version 3).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gs::testing {

class GgufBuilder {
 public:
  void add_string(const std::string& key, const std::string& v) {
    header(key, 8);
    str(v);
  }
  void add_u32(const std::string& key, uint32_t v) {
    header(key, 4);
    pod(v);
  }
  void add_bool(const std::string& key, bool v) {
    header(key, 7);
    pod(static_cast<uint8_t>(v));
  }
  void add_strings(const std::string& key, const std::vector<std::string>& v) {
    header(key, 9);
    pod(uint32_t{8});
    pod(static_cast<uint64_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  void add_i32s(const std::string& key, const std::vector<int32_t>& v) {
    header(key, 9);
    pod(uint32_t{5});
    pod(static_cast<uint64_t>(v.size()));
    for (int32_t x : v) pod(x);
  }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
    auto put = [&](auto v) {
      const auto* p = reinterpret_cast<const uint8_t*>(&v);
      out.insert(out.end(), p, p + sizeof(v));
    };
    put(uint32_t{3});
    put(uint64_t{0});  // tensors
    put(n_kv_);
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

 private:
  template <typename T>
  void pod(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    body_.insert(body_.end(), p, p + sizeof(v));
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    body_.insert(body_.end(), s.begin(), s.end());
  }
  void header(const std::string& key, uint32_t type) {
    str(key);
    pod(type);
    ++n_kv_;
  }
  std::vector<uint8_t> body_;
  uint64_t n_kv_ = 0;
};

// A tiny "gemma4" vocabulary: control tokens, byte tokens, a few characters and merges.
inline GgufBuilder tiny_gemma4_vocab() {
  std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<|channel>"};
  std::vector<int32_t> types = {3, 3, 3, 3, 3, 4};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.emplace_back(buf);
    types.push_back(6);
  }
  for (const char* t : {"h", "i", "\xE2\x96\x81", "\n", "\n\n", "hi", "\xE2\x96\x81hi"}) {
    tokens.emplace_back(t);
    types.push_back(1);
  }
  GgufBuilder g;
  g.add_string("general.architecture", "gemma4");
  g.add_string("tokenizer.ggml.model", "gemma4");
  g.add_strings("tokenizer.ggml.tokens", tokens);
  g.add_i32s("tokenizer.ggml.token_type", types);
  g.add_strings("tokenizer.ggml.merges", {"h i", "\xE2\x96\x81 hi", "\n \n"});
  g.add_u32("tokenizer.ggml.bos_token_id", 2);
  g.add_u32("tokenizer.ggml.eos_token_id", 1);
  g.add_u32("tokenizer.ggml.unknown_token_id", 3);
  g.add_bool("tokenizer.ggml.add_bos_token", true);
  return g;
}

}  // namespace gs::testing
