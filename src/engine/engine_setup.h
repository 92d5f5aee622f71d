// Start-up decisions of the engine: checks the options against the model, reserves the model's
// activation workspace for the largest step, and plans the KV memory from what is left.
#pragma once
#include "engine/engine.h"
#include "engine/memory_plan.h"
#include "engine/scheduler.h"

namespace gs {

struct EngineSetup {
  MemoryPlan plan;
  SchedulerConfig scheduler;
  int max_model_len = 0;
};

// Prompt-logprob rows one step may add to the sampled rows (each row is a vocabulary of f32 logits).
constexpr int kPromptLogprobRowsPerStep = 64;

// Throws gs::Error naming the option on anything inconsistent.
EngineSetup setup_engine(Gemma4Model& model, const EngineOptions& opts);

}  // namespace gs
