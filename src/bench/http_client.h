// A small HTTP client for OpenAI-compatible servers: base URL handling, the API key, plain JSON
// requests and streamed (SSE) responses. One instance per thread: the underlying cpp-httplib
// client keeps one connection alive and is not safe to share.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace httplib {
class Client;
enum class Error;
}

namespace gs::bench {

// "http://host:port[/prefix]" split into what httplib wants and a path prefix that is put in
// front of every request path (a server mounted under /some/prefix).
struct BaseUrl {
  std::string scheme_host_port;
  std::string path_prefix;  // no trailing slash; empty for none
};
BaseUrl parse_base_url(const std::string& url);

struct HttpReply {
  int status = 0;  // 0: no HTTP response at all (see error)
  std::string body;
  std::string error;  // connection-level failure, empty when the whole response came
};

// How far a response got before it failed, and how long nothing had arrived.
struct TransferProgress {
  int status = 0;         // 0: no response header yet
  uint64_t body_bytes = 0;
  double idle_s = 0;      // since the last byte (or the request, when none came)
};

// One line saying what went wrong, where, and httplib's own name for it, e.g. "the server closed
// or reset the connection before any response [httplib: Read]". timeout_s: the per-read timeout
// in force (a Read failure after that long without data is reported as a timeout); 0: unknown.
std::string describe_failure(const std::string& url, httplib::Error e, const TransferProgress& p, double timeout_s);

class HttpClient {
 public:
  // api_key: sent as "Authorization: Bearer KEY" when not empty. timeout_s bounds connecting and
  // each read (not the whole response: long generations stream for minutes).
  HttpClient(const std::string& base_url, std::string api_key, double timeout_s);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpReply get(const std::string& path);
  HttpReply post_json(const std::string& path, const nlohmann::json& body);

  // POSTs `body` and hands each piece of the response body to `on_bytes` as it arrives (return
  // false to stop reading). The reply's body stays empty for status 200 and holds the whole
  // body otherwise (an error message), which is not passed to on_bytes.
  HttpReply post_stream(const std::string& path, const nlohmann::json& body,
                        const std::function<bool(std::string_view)>& on_bytes);

  // GET path, which must answer 200 with JSON; otherwise a gs::Error naming the URL and status.
  nlohmann::json get_json(const std::string& path);

  const std::string& url() const { return url_; }

 private:
  std::string url_;
  BaseUrl base_;
  std::string api_key_;
  double timeout_s_;
  std::unique_ptr<httplib::Client> cli_;
};

// The first model id of GET /v1/models (what `--model` defaults to).
std::string first_model_id(HttpClient& client);

}  // namespace gs::bench
