#include "api/engine_client.h"

namespace gs::api {

Engine::SubmitResult EngineClientFor::submit(GenerationRequest req) { return e_.submit(std::move(req)); }
void EngineClientFor::abort(const std::string& request_id) { e_.abort(request_id); }
EngineStats EngineClientFor::stats() const { return e_.stats(); }
RequestLimits EngineClientFor::limits() const { return e_.request_limits(); }

}  // namespace gs::api
