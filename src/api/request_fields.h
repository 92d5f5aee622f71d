// Which request fields this server knows, and what it does with the ones that cannot change the
// output. docs/api-fields.md has the whole table (honoured / refused / accepted without effect);
// openai_request.cpp reads the honoured fields and refuses the unsupported ones.
//
// A field that is neither is unknown: accepted, as vLLM accepts it, and logged once per field name
// for the life of the process (so a client's typo shows in the log without flooding it).
#pragma once
#include <string>
#include <vector>

#include "api/openai_request.h"

namespace gs::api {

class FieldReader;

// Type-checks the fields accepted without effect (`user` must be a string, ...): a wrong type is
// still a 400, as OpenAI answers.
void check_no_effect_fields(const FieldReader& f, Endpoint endpoint);

// Logs, once per name and process, each top-level field of `body` that `endpoint` does not know;
// returns the names logged by this call.
std::vector<std::string> note_unknown_fields(const RequestJson& body, Endpoint endpoint);

// Whether `name` is a field of `endpoint`'s request schema (OpenAI's or vLLM's).
bool is_known_field(const std::string& name, Endpoint endpoint);

}  // namespace gs::api
