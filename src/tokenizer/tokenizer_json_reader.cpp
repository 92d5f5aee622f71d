#include "tokenizer/tokenizer_json_reader.h"

#include "core/error.h"

namespace gs {

namespace {

using json = nlohmann::json;
using DomParser = nlohmann::detail::json_sax_dom_parser<json>;

// SAX handler: forwards events to a DOM builder, except inside model.vocab and model.merges.
class Handler {
 public:
  Handler(TokenizerJsonDoc& doc, const std::string& source) : doc_(doc), dom_(doc.root, true), source_(source) {}

  bool null() { return mode_ == Mode::kDom ? dom_.null() : bad("null"); }
  bool boolean(bool v) { return mode_ == Mode::kDom ? dom_.boolean(v) : bad("a boolean"); }
  bool number_integer(json::number_integer_t v) { return mode_ == Mode::kDom ? dom_.number_integer(v) : vocab_id(v); }
  bool number_unsigned(json::number_unsigned_t v) {
    if (mode_ == Mode::kDom) return dom_.number_unsigned(v);
    return vocab_id(v > static_cast<json::number_unsigned_t>(INT64_MAX) ? -1 : static_cast<long long>(v));
  }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return mode_ == Mode::kDom ? dom_.number_float(v, s) : bad("a fractional number");
  }
  bool binary(json::binary_t& b) { return mode_ == Mode::kDom ? dom_.binary(b) : bad("binary data"); }

  bool string(json::string_t& s) {
    if (mode_ == Mode::kDom) return dom_.string(s);
    if (mode_ == Mode::kMerges) {
      if (depth_ == 1) return merge_string(s);
      if (depth_ == 2) {
        pair_.push_back(std::move(s));
        return true;
      }
    }
    return bad("a string");
  }

  bool key(json::string_t& k) {
    if (mode_ == Mode::kVocab) {
      token_ = std::move(k);
      return true;
    }
    pending_key_ = k;
    return dom_.key(k);
  }

  bool start_object(std::size_t n) {
    if (mode_ == Mode::kDom) {
      if (in_model() && pending_key_ == "vocab") return enter(Mode::kVocab);
      path_.push_back(std::move(pending_key_));
      pending_key_.clear();
      return dom_.start_object(n);
    }
    return bad("an object");
  }

  bool end_object() {
    if (mode_ == Mode::kDom) {
      path_.pop_back();
      return dom_.end_object();
    }
    mode_ = Mode::kDom;  // only the vocab object itself can end here
    depth_ = 0;
    return true;
  }

  bool start_array(std::size_t n) {
    if (mode_ == Mode::kDom) {
      if (in_model() && pending_key_ == "merges") {
        enter(Mode::kMerges);
        depth_ = 1;
        return true;
      }
      path_.push_back("[]");
      pending_key_.clear();
      return dom_.start_array(n);
    }
    if (mode_ == Mode::kMerges && depth_ == 1) {
      depth_ = 2;
      pair_.clear();
      return true;
    }
    return bad("an array");
  }

  bool end_array() {
    if (mode_ == Mode::kDom) {
      path_.pop_back();
      return dom_.end_array();
    }
    if (depth_ == 2) {
      depth_ = 1;
      if (pair_.size() != 2) return bad(fmt::format("an array of {} strings", pair_.size()));
      doc_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      return true;
    }
    mode_ = Mode::kDom;  // the merges array itself ends
    depth_ = 0;
    return true;
  }

  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) {
    throw Error("{}: invalid JSON (truncated or corrupt?) near byte {}: {}", source_, pos, e.what());
  }

 private:
  enum class Mode { kDom, kVocab, kMerges };

  // Directly inside the top-level "model" object (path_[0] is the root object's empty key).
  bool in_model() const { return path_.size() == 2 && path_[1] == "model"; }

  bool enter(Mode m) {
    // The tree gets null in place of the section; the data goes to the flat vectors.
    if ((m == Mode::kVocab && doc_.has_vocab) || (m == Mode::kMerges && doc_.has_merges)) {
      throw Error("{}: model.{} appears twice", source_, m == Mode::kVocab ? "vocab" : "merges");
    }
    dom_.null();
    mode_ = m;
    depth_ = 0;
    if (m == Mode::kVocab) doc_.has_vocab = true;
    if (m == Mode::kMerges) doc_.has_merges = true;
    return true;
  }
  bool vocab_id(long long id) {
    if (mode_ != Mode::kVocab) return bad("a number");
    doc_.vocab.emplace_back(std::move(token_), id);
    return true;
  }
  bool merge_string(json::string_t& s) {  // older form: "left right"
    const size_t sp = s.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos) {
      throw Error("{}: model.merges[{}] = '{}' is not two tokens separated by one space", source_, doc_.merges.size(), s);
    }
    doc_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    return true;
  }
  bool bad(const std::string& what) {
    if (mode_ == Mode::kVocab) throw Error("{}: model.vocab['{}'] must be a token id, found {}", source_, token_, what);
    throw Error("{}: model.merges[{}] must be \"left right\" or [\"left\", \"right\"], found {}", source_,
                doc_.merges.size(), what);
  }

  TokenizerJsonDoc& doc_;
  DomParser dom_;
  const std::string& source_;
  Mode mode_ = Mode::kDom;
  int depth_ = 0;
  std::vector<std::string> path_;  // keys of the open containers ("[]" for array elements)
  std::string pending_key_;
  std::string token_;
  std::vector<std::string> pair_;
};

}  // namespace

TokenizerJsonDoc read_tokenizer_json(std::string_view text, const std::string& source) {
  TokenizerJsonDoc doc;
  Handler h(doc, source);
  try {
    json::sax_parse(text.begin(), text.end(), &h);
  } catch (const nlohmann::json::exception& e) {
    throw Error("{}: invalid JSON (truncated or corrupt?): {}", source, e.what());
  }
  return doc;
}

}  // namespace gs
