// Where `serve` takes its API key from. A key on the command line (--api-key) is visible to every
// user of the machine in `ps` and /proc; the environment variable GEMMASERVE_API_KEY (as vLLM
// reads VLLM_API_KEY) and a file (--api-key-file, e.g. a mounted Kubernetes secret) are not.
#pragma once
#include <optional>
#include <string>

namespace gs::server {

inline constexpr const char* kApiKeyEnv = "GEMMASERVE_API_KEY";

struct ApiKeySources {
  std::optional<std::string> flag;  // --api-key, when given
  std::optional<std::string> file;  // --api-key-file, when given
  std::optional<std::string> env;   // $GEMMASERVE_API_KEY, when set
};

// The key to require ("" when no source is given). Throws gs::Error when more than one source is
// given (which one wins would be a guess), when a given key is empty (that would turn
// authentication off while the operator meant it on), or when the file cannot be read.
std::string resolve_api_key(const ApiKeySources& sources);

// The first line of `path`, trailing whitespace (the newline editors and `echo` add) removed.
// Throws gs::Error naming the path when it cannot be read or the key is empty.
std::string read_api_key_file(const std::string& path);

}  // namespace gs::server
