// gemmaserve tokenize: token ids of strings (or, with --decode, strings of token ids) with a
// tokenizer.json, a model directory or a GGUF vocabulary. Scripts and tests compare these ids
// with the reference.
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace gs::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string input;
  std::string output;
  bool special = false;
  bool decode = false;
  bool skip_special = false;
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  GS_CHECK(f.good(), "{}: cannot open", path);
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("{}: invalid JSON: {}", path, e.what());
  }
}

void write_output(const std::string& path, const nlohmann::json& j) {
  // Non-UTF-8 bytes (a decode of arbitrary ids) are written as U+FFFD rather than failing.
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  GS_CHECK(f.good(), "{}: cannot open for writing", path);
  f << text;
  f.close();
  GS_CHECK(f.good(), "{}: write failed", path);
}

int run(const TokenizeOptions& o) {
  const auto tok = Tokenizer::load(o.tokenizer);
  const nlohmann::json in = read_json(o.input);
  GS_CHECK(in.is_array(), "{}: expected a JSON array", o.input);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < in.size(); ++i) {
    if (o.decode) {
      GS_CHECK(in[i].is_array(), "{}: element {} must be an array of token ids", o.input, i);
      std::vector<int> ids;
      for (const auto& v : in[i]) {
        GS_CHECK(v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() < tok->vocab_size(),
                 "{}: element {} has {}, which is not a token id (vocabulary size {})", o.input, i, v.dump(),
                 tok->vocab_size());
        ids.push_back(v.get<int>());
      }
      out.push_back(tok->decode(ids, o.skip_special));
    } else {
      GS_CHECK(in[i].is_string(), "{}: element {} must be a string", o.input, i);
      out.push_back(tok->encode(in[i].get_ref<const std::string&>(), o.special && tok->add_bos_default()));
    }
  }
  write_output(o.output, out);
  return 0;
}

GS_REGISTER_COMMAND(tokenize, "tokenize", "token ids of strings (or strings of ids with --decode)",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<TokenizeOptions>();
                      app.add_option("--tokenizer", o->tokenizer, "tokenizer.json, a model directory, or a .gguf")
                          ->required();
                      app.add_option("--input", o->input,
                                     "JSON array of strings (with --decode: a JSON array of id arrays)")
                          ->required();
                      app.add_option("--output", o->output, "where to write the JSON result ('-': stdout)")->required();
                      app.add_flag("--special", o->special, "add BOS when the tokenizer config asks for it");
                      app.add_flag("--decode", o->decode, "turn id arrays back into strings");
                      app.add_flag("--skip-special", o->skip_special, "with --decode: leave special tokens out");
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
