// libFuzzer target for the safetensors header parser: any input must either parse or raise
// gs::Error; crashes, sanitizer reports, hangs and any other exception are bugs.
#include <cstddef>
#include <cstdint>

#include "checkpoint/safetensors.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    gs::SafetensorsHeader h = gs::parse_safetensors(data, size, "fuzz.safetensors");
    // Every accepted tensor must lie inside the input: touch its first and last byte.
    volatile uint8_t sink = 0;
    for (const gs::SafetensorsTensor& t : h.tensors)
      if (t.nbytes) sink = sink ^ data[t.offset] ^ data[t.offset + t.nbytes - 1];
    (void)sink;
  } catch (const gs::Error&) {
  }
  return 0;
}
