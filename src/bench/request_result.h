// What the client saw of one streamed request. Times are seconds; start_time is measured from
// the start of the benchmark run, the others from the moment the request was sent.
#pragma once
#include <string>
#include <vector>

namespace gs::bench {

struct RequestResult {
  bool success = false;
  std::string error;          // why it failed (HTTP status and body, connection error, ...)
  double start_time = 0;      // when it was sent, seconds after the run started
  double ttft = 0;            // time to the first token chunk (see stream_request.h)
  double latency = 0;         // end-to-end: time to the last token chunk
  std::vector<double> itl;    // gaps between consecutive token chunks (one per chunk)
  int prompt_len = 0;         // dataset's prompt length, else the server's usage.prompt_tokens
  int expected_output_len = 0;  // max_tokens asked for
  int output_tokens = 0;      // usage.completion_tokens, else counted by the tokenizer (see below)
  bool output_tokens_from_usage = false;
  std::string generated_text;
};

}  // namespace gs::bench
