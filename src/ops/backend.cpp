// The op interface's out-of-line pieces: the error of an op a backend does not implement (here so
// that backend.h, which nvcc also compiles, needs no fmt).
#include "ops/backend.h"

#include "core/error.h"

namespace gs {

void throw_not_implemented(const std::string& message) { throw Error(message); }

}  // namespace gs
