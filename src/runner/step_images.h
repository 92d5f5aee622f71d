// The images a step prefills, gathered from its sequences' chunks (runner/sequence_step.h): every
// vision block that starts in a chunk is one image whose soft tokens are that chunk's rows.
#pragma once
#include <vector>

#include "model/gemma4_model.h"
#include "runner/sequence_step.h"

namespace gs {

// Appends the images of chunk `s`, whose rows start at row0 of the step. Throws gs::Error when a
// block has no image, or when the chunk holds only part of an image (the scheduler never splits one).
void collect_step_images(const SequenceStep& s, int row0, StepImages& out);

}  // namespace gs
