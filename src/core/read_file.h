// A whole file as a string (templates, tokenizer JSON, datasets): one place for the open and read
// checks and their message.
#pragma once
#include <string>

namespace gs {

// Throws gs::Error "<path>: cannot open for reading" or "<path>: read error".
std::string read_file(const std::string& path);

}  // namespace gs
