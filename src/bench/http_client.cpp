#include "bench/http_client.h"

#include <httplib.h>

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace gs::bench {

BaseUrl parse_base_url(const std::string& url) {
  const auto scheme_end = url.find("://");
  GS_CHECK(scheme_end != std::string::npos, "--base-url '{}' needs a scheme, e.g. http://127.0.0.1:8000", url);
  const std::string scheme = url.substr(0, scheme_end);
  GS_CHECK(scheme == "http", "--base-url '{}': only http:// is supported (this build has no TLS)", url);
  const auto path_start = url.find('/', scheme_end + 3);
  BaseUrl b;
  b.scheme_host_port = url.substr(0, path_start);
  GS_CHECK(b.scheme_host_port.size() > scheme_end + 3, "--base-url '{}' has no host", url);
  if (path_start != std::string::npos) {
    b.path_prefix = url.substr(path_start);
    while (!b.path_prefix.empty() && b.path_prefix.back() == '/') b.path_prefix.pop_back();
  }
  return b;
}

HttpClient::HttpClient(const std::string& base_url, std::string api_key, double timeout_s)
    : url_(base_url), base_(parse_base_url(base_url)), api_key_(std::move(api_key)), timeout_s_(timeout_s) {
  cli_ = std::make_unique<httplib::Client>(base_.scheme_host_port);
  const auto sec = static_cast<time_t>(timeout_s);
  const auto usec = static_cast<time_t>((timeout_s - std::floor(timeout_s)) * 1e6);
  cli_->set_connection_timeout(sec, usec);
  cli_->set_read_timeout(sec, usec);
  cli_->set_write_timeout(sec, usec);
  cli_->set_keep_alive(true);
  // httplib writes a request's headers and body separately. With Nagle's algorithm on, the body
  // waits for the server to acknowledge the headers, and a server with nothing to send yet
  // delays that ACK (40 ms on Linux): every TTFT measured 40 ms long. Clients that benchmarks are
  // compared with (vLLM's aiohttp, SGLang's, curl) disable Nagle too.
  cli_->set_tcp_nodelay(true);
}

HttpClient::~HttpClient() = default;

namespace {

httplib::Headers headers_for(const std::string& api_key) {
  httplib::Headers h;
  if (!api_key.empty()) h.emplace("Authorization", "Bearer " + api_key);
  return h;
}

}  // namespace

std::string describe_failure(const std::string& url, httplib::Error e, const TransferProgress& p, double timeout_s) {
  const std::string lib = " [httplib: " + httplib::to_string(e) + "]";
  switch (e) {
    case httplib::Error::Connection:
    case httplib::Error::ConnectionTimeout:
      return "cannot connect to " + url + lib;
    case httplib::Error::Write:
      return "the request could not be sent: the server closed or reset the connection" + lib;
    case httplib::Error::Read:
      if (timeout_s > 0 && p.idle_s >= timeout_s * 0.99) {
        return fmt::format("no data from the server for {:g} s (--timeout){}", p.idle_s, lib);
      }
      if (p.status == 0) return "the server closed or reset the connection before any response" + lib;
      return fmt::format("the server closed or reset the connection after HTTP {} and {} body bytes{}", p.status,
                         p.body_bytes, lib);
    default:
      return "request failed" + lib;
  }
}

namespace {

HttpReply to_reply(const httplib::Result& r, const std::string& url, double timeout_s) {
  HttpReply out;
  if (!r) {
    out.error = describe_failure(url, r.error(), {}, timeout_s);
    return out;
  }
  out.status = r->status;
  out.body = r->body;
  return out;
}

}  // namespace

HttpReply HttpClient::get(const std::string& path) {
  return to_reply(cli_->Get(base_.path_prefix + path, headers_for(api_key_)), url_, 0);
}

HttpReply HttpClient::post_json(const std::string& path, const nlohmann::json& body) {
  return to_reply(cli_->Post(base_.path_prefix + path, headers_for(api_key_), body.dump(), "application/json"), url_, 0);
}

HttpReply HttpClient::post_stream(const std::string& path, const nlohmann::json& body,
                                  const std::function<bool(std::string_view)>& on_bytes) {
  HttpReply out;
  httplib::Request req;
  req.method = "POST";
  req.path = base_.path_prefix + path;
  req.headers = headers_for(api_key_);
  req.headers.emplace("Accept", "text/event-stream");
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  TransferProgress progress;
  auto last_byte = std::chrono::steady_clock::now();
  req.response_handler = [&](const httplib::Response& res) {
    out.status = progress.status = res.status;
    last_byte = std::chrono::steady_clock::now();
    return true;
  };
  // Error bodies are collected whole; a 200 body goes to the caller piece by piece.
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    progress.body_bytes += n;
    last_byte = std::chrono::steady_clock::now();
    if (out.status != 200) {
      out.body.append(data, n);
      return true;
    }
    return on_bytes(std::string_view(data, n));
  };
  auto r = cli_->send(req);
  if (!r && r.error() != httplib::Error::Canceled) {
    progress.idle_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_byte).count();
    out.error = describe_failure(url_, r.error(), progress, timeout_s_);
  }
  return out;
}

nlohmann::json HttpClient::get_json(const std::string& path) {
  const HttpReply r = get(path);
  GS_CHECK(r.error.empty(), "GET {}{}: {}", url_, path, r.error);
  GS_CHECK(r.status == 200, "GET {}{}: HTTP {}: {}", url_, path, r.status, r.body.substr(0, 500));
  try {
    return nlohmann::json::parse(r.body);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("GET {}{}: the answer is not JSON: {}", url_, path, e.what());
  }
}

std::string first_model_id(HttpClient& client) {
  const nlohmann::json models = client.get_json("/v1/models");
  auto data = models.find("data");
  GS_CHECK(data != models.end() && data->is_array() && !data->empty() && (*data)[0].contains("id") &&
               (*data)[0]["id"].is_string(),
           "GET {}/v1/models lists no model; pass --model", client.url());
  return (*data)[0]["id"].get<std::string>();
}

}  // namespace gs::bench
