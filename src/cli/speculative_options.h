// Speculative decoding flags, shared by serve and run, named as in vLLM: --speculative-model,
// --num-speculative-tokens, and --speculative-config '{"method": "gemma4_mtp", "model": ...,
// "num_speculative_tokens": K}' (either form, not conflicting values in both).
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace gs::cli {

struct SpeculativeFlags {
  std::string model;   // the MTP assistant: a directory, or a preset with --load-format dummy
  int num_tokens = 0;  // 0: not given (3 when a model is)
  std::string config;  // vLLM's JSON form
  double accept_rate = 0;  // benchmarks only: drafts pass with this probability (dummy weights)
  std::string convention = "transformers";  // where drafts sit (gemma4_drafter.h DraftConvention)
  int disable_by_batch_size = -1;           // -1: not given (0: speculate at any batch)
};

void add_speculative_options(CLI::App& app, SpeculativeFlags& flags);
// --speculative-convention alone (gemmaserve draft).
void add_convention_option(CLI::App& app, std::string& convention);

// The assistant and K after merging the two forms; model empty: speculation off. Throws gs::Error
// naming the flag on a bad JSON, an unknown method or key, or values that disagree.
struct SpeculativeChoice {
  std::string model;
  int num_tokens = 3;
  double accept_rate = 0;
  std::string convention = "transformers";
  int disable_by_batch_size = 0;  // > 0: no drafting while more requests than this are running
};
SpeculativeChoice resolve_speculative(const SpeculativeFlags& flags);

}  // namespace gs::cli
