#include "bench/stream_request.h"

#include "bench/sse_parser.h"
#include "core/error.h"

namespace gs::bench {

ApiEndpoint parse_api_endpoint(const std::string& path) {
  if (path == "/v1/completions") return ApiEndpoint::Completions;
  if (path == "/v1/chat/completions") return ApiEndpoint::ChatCompletions;
  throw Error("--endpoint '{}' is not /v1/completions or /v1/chat/completions", path);
}

const char* endpoint_path(ApiEndpoint e) {
  return e == ApiEndpoint::Completions ? "/v1/completions" : "/v1/chat/completions";
}

nlohmann::json request_body(const RequestSettings& s, const BenchRequest& req) {
  nlohmann::json body = {{"model", s.model},
                         {"max_tokens", req.output_len},
                         {"temperature", s.temperature},
                         {"stream", true},
                         {"stream_options", {{"include_usage", true}}}};
  if (s.endpoint == ApiEndpoint::Completions) {
    body["prompt"] = req.prompt;
  } else {
    nlohmann::json content = req.prompt;
    if (!req.image_urls.empty()) {
      content = nlohmann::json::array({{{"type", "text"}, {"text", req.prompt}}});
      for (const std::string& url : req.image_urls)
        content.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
    }
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", content}}});
  }
  if (s.ignore_eos) body["ignore_eos"] = true;
  for (auto it = s.extra_body.begin(); it != s.extra_body.end(); ++it) body[it.key()] = it.value();
  return body;
}

namespace {

// What a chunk's first choice says about generated tokens.
struct ChunkTokens {
  bool carries_tokens = false;  // a generation step reported by this chunk (its text may be "")
  std::string text;
};

ChunkTokens chunk_tokens(const nlohmann::json& data, ApiEndpoint e) {
  ChunkTokens out;
  auto choices = data.find("choices");
  if (choices == data.end() || !choices->is_array() || choices->empty()) return out;  // usage-only
  const auto& c = (*choices)[0];
  if (e == ApiEndpoint::Completions) {
    auto t = c.find("text");
    out.carries_tokens = t != c.end() && t->is_string();
    if (out.carries_tokens) out.text = t->get<std::string>();
    return out;
  }
  auto delta = c.find("delta");
  if (delta == c.end() || !delta->is_object()) return out;
  bool has_field = delta->contains("tool_calls");
  // Reasoning text is generated text too (SGLang's client counts reasoning_content chunks;
  // newer vLLM calls the field "reasoning").
  for (const char* key : {"reasoning_content", "reasoning", "content"}) {
    auto v = delta->find(key);
    if (v == delta->end() || !v->is_string()) continue;
    has_field = true;
    out.text += v->get<std::string>();
  }
  // A role announcement ({"role":"assistant","content":""}) is not a token unless it also
  // carries text; a finish-only chunk (empty delta) is not one either.
  out.carries_tokens = delta->contains("role") ? !out.text.empty() : has_field;
  return out;
}

}  // namespace

void StreamTimer::on_payload(const std::string& payload, double t, RequestResult& r) {
  if (payload == "[DONE]") {
    done_ = true;
    return;
  }
  nlohmann::json data;
  try {
    data = nlohmann::json::parse(payload);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("a streamed chunk is not JSON ({}): {}", e.what(), payload.substr(0, 200));
  }
  if (auto err = data.find("error"); err != data.end() && !err->is_null()) {
    throw Error("the server reported an error in the stream: {}", err->dump());
  }
  if (auto usage = data.find("usage"); usage != data.end() && usage->is_object()) {
    if (auto ct = usage->find("completion_tokens"); ct != usage->end() && ct->is_number_integer()) {
      r.output_tokens = ct->get<int>();
      r.output_tokens_from_usage = true;
    }
    if (auto pt = usage->find("prompt_tokens"); pt != usage->end() && pt->is_number_integer() && r.prompt_len == 0) {
      r.prompt_len = pt->get<int>();
    }
  }
  const ChunkTokens c = chunk_tokens(data, endpoint_);
  if (!c.carries_tokens) return;
  if (chunks_ == 0) r.ttft = t;
  else r.itl.push_back(t - last_);
  last_ = t;
  r.latency = t;
  ++chunks_;
  r.generated_text += c.text;
}

RequestResult run_stream_request(HttpClient& client, const RequestSettings& s, const BenchRequest& req,
                                 Clock::time_point run_start) {
  RequestResult r;
  r.prompt_len = req.prompt_len;
  r.expected_output_len = req.output_len;
  const nlohmann::json body = request_body(s, req);
  StreamTimer timer(s.endpoint);
  SseParser sse;
  std::string failure;
  const auto sent = Clock::now();
  r.start_time = std::chrono::duration<double>(sent - run_start).count();
  auto handle = [&](const std::vector<std::string>& payloads, Clock::time_point at) {
    const double t = std::chrono::duration<double>(at - sent).count();
    for (const auto& p : payloads) timer.on_payload(p, t, r);
  };
  HttpReply reply;
  try {
    reply = client.post_stream(endpoint_path(s.endpoint), body, [&](std::string_view bytes) {
      const auto at = Clock::now();  // one time for every event that arrived in this read
      try {
        handle(sse.feed(bytes), at);
      } catch (const Error& e) {
        failure = e.what();
        return false;
      }
      return true;
    });
    if (failure.empty()) handle(sse.finish(), Clock::now());
  } catch (const Error& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    r.error = failure;
  } else if (!reply.error.empty()) {
    r.error = reply.error;
  } else if (reply.status != 200) {
    r.error = "HTTP " + std::to_string(reply.status) + ": " + reply.body.substr(0, 1000);
  } else if (!timer.any_tokens()) {
    r.error = "the stream carried no generated tokens (no TTFT can be measured)";
  } else if (!timer.done()) {
    r.error = "the stream ended without \"data: [DONE]\" (cut short by the server)";
  } else {
    r.success = true;
  }
  return r;
}

}  // namespace gs::bench
