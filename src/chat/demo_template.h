// The chat template of the built-in demo model: Gemma-4's prompt format (turn markers, thinking
// switch, tool declarations, tool calls and responses inside the model turn), written for this
// project. Checkpoints bring their own template; this one is for `make-model --preset demo`.
#pragma once
#include <string>

namespace gs {

const std::string& demo_chat_template();

}  // namespace gs
