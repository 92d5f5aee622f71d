// Gemma tokenizers: tokenizer.json (BPE with byte fallback, as the Hugging Face `tokenizers`
// library runs it) or a GGUF vocabulary. encode() must give exactly the reference ids.
// A loaded Tokenizer is immutable apart from an internal, locked cache: share it between threads.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gs {

class Tokenizer {
 public:
  // PATH: a tokenizer.json, a model directory holding one (with tokenizer_config.json), or a .gguf.
  // Throws gs::Error naming the file and the problem.
  static std::shared_ptr<const Tokenizer> load(const std::string& path);
  virtual ~Tokenizer() = default;

  // add_bos: prepend BOS (as tokenizer_config's add_bos_token asks for when `special` is on).
  // Special/added tokens written in the text are always matched as single tokens.
  // Text that is not valid UTF-8 is accepted: stray bytes become <0xXX> byte tokens.
  virtual std::vector<int> encode(std::string_view text, bool add_bos = false) const = 0;
  // As the reference decodes: a run of <0xXX> tokens that is not valid UTF-8 gives one U+FFFD per
  // byte; ids outside the vocabulary are left out.
  virtual std::string decode(const std::vector<int>& ids, bool skip_special = false) const = 0;

  virtual int vocab_size() const = 0;  // model vocabulary plus added tokens beyond it
  virtual std::optional<int> token_id(std::string_view token) const = 0;  // exact vocab/added token
  virtual std::string_view token_text(int id) const = 0;                  // raw vocab string
  virtual bool is_special(int id) const = 0;
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;  // tokenizer_config.json eos_token (else <eos>); -1 if none
  virtual bool add_bos_default() const = 0;  // tokenizer_config.json add_bos_token
};

// Turns a stream of token ids into UTF-8 text pieces, never splitting a multi-byte character
// across pieces (bytes are held until the character is complete). The pieces concatenated equal
// decode() of all the ids.
class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tok, bool skip_special = true);
  std::string push(int id);  // text that became final with this token (may be empty)
  std::string flush();       // whatever is pending at the end (invalid bytes become U+FFFD)

 private:
  std::string take_new_text();

  std::shared_ptr<const Tokenizer> tok_;
  bool skip_special_;
  // A short window of recent ids: ids_[0, prefix_offset_) were emitted and are kept as context
  // (a decoder may treat the first token of a sequence differently); ids_[prefix_offset_, end)
  // are pending. A run of <0xXX> byte tokens stays pending until it ends, because the whole run
  // decides how its bytes decode.
  std::vector<int> ids_;
  size_t emitted_bytes_ = 0;  // bytes of decode(ids_[0, prefix_offset_))
  size_t prefix_offset_ = 0;
};

}  // namespace gs
