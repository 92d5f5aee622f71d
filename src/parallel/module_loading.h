#pragma once

// CUDA's lazy module loading (the default since CUDA 12.2) loads a kernel's code at its first
// launch, and that load waits for the device to go idle while holding a lock the other devices'
// launches from this process also take. On tensor-parallel ranks in one process the device is
// rarely idle: an all-reduce kernel spins until every rank has arrived. A rank that launches a
// kernel for the first time after its all-reduce (a new batch size, the first decode step) waits
// for that all-reduce, which waits for a rank stuck behind the lock: the process hangs in its
// first steps. Loading every module when the context is created removes the wait.

namespace gs {

// Sets CUDA_MODULE_LOADING=EAGER for this process unless the user set it. Effective only before
// the process's first CUDA call; call it before making the ranks' backends.
void prefer_eager_module_loading();

// True when CUDA is initialised and loads modules lazily (so prefer_eager_module_loading came
// too late or was overridden); false otherwise and in builds without CUDA.
bool cuda_modules_load_lazily();

}  // namespace gs
