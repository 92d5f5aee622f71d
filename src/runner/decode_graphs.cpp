#include "runner/decode_graphs.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_activity.h"

namespace gs {

DecodeGraphs::DecodeGraphs(Gemma4Model& model, KvCache& cache, int page_size, DecodeGraphOptions opts)
    : model_(model), be_(model.backend()), cache_(cache),
      inputs_(model.backend(), cache, page_size, opts.max_batch, std::max(opts.max_q_len, 1), opts.max_kv_len,
              opts.max_rows) {
  GS_CHECK(be_.supports_graphs(), "decode graphs: the {} backend cannot record graphs", be_.name());
}

DecodeGraphs::~DecodeGraphs() {
  for (auto& [key, g] : graphs_) be_.release_graph(g.handle);
}

bool DecodeGraphs::accepts(const std::vector<SequenceStep>& steps) const {
  return !steps.empty() && steps[0].write_kv && inputs_.fits(steps);
}

ForwardOutput DecodeGraphs::forward(const std::vector<SequenceStep>& steps, const std::vector<int>& ids,
                                    const Tensor& feedback_src, const std::vector<std::pair<int, int>>& feedback) {
  GS_CHECK(accepts(steps), "decode graphs: {} sequences that are not one graph step", steps.size());
  GraphStepInputs::Packed p = inputs_.pack(steps, ids);
  if (!feedback.empty()) be_.scatter_ids(p.ids, feedback_src, feedback);

  be_.set_step_rows(p.shape.rows());  // before the eager run and the capture: launches are recorded with it
  if (auto it = graphs_.find(p.shape); it != graphs_.end()) {
    be_.replay(it->second.handle);
    return it->second.out;
  }
  // First step of this shape: run it eagerly (sizing workspaces and GEMM plans), then record it.
  mark_activity("eager forward before a graph capture");
  ForwardOutput out = model_.forward(p.ids, p.batch, cache_, p.logit_rows);
  be_.begin_capture();
  try {
    mark_activity("capturing a decode graph");
    model_.forward(p.ids, p.batch, cache_, p.logit_rows);
  } catch (...) {
    try {
      be_.release_graph(be_.end_capture());
    } catch (...) {  // the capture may be invalid already; the forward's error is the one to report
    }
    throw;
  }
  graphs_[p.shape] = Graph{be_.end_capture(), out};
  log::debug("decode graphs: captured {} sequences x {} rows x {} context ({} graphs)", p.shape.seqs, p.shape.q_len,
             p.shape.context, graphs_.size());
  return out;
}

}  // namespace gs
