// Hopper wgmma attention kernels (attention_wgmma.cuh) for both head dims.
#include "kernels/cuda/attention_wgmma.cuh"

namespace gs::cuda::attn {

void launch_wgmma_kernel(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  switch (k) {
    case TileKernel::Hd256Wgmma: return launch_wgmma_config<WgConfig<256, true>>(a, g, stream);
    case TileKernel::Hd512Wgmma: return launch_wgmma_config<WgConfig<512, true>>(a, g, stream);
    case TileKernel::Hd256WgmmaSerial: return launch_wgmma_config<WgConfig<256, false>>(a, g, stream);
    case TileKernel::Hd512WgmmaSerial: return launch_wgmma_config<WgConfig<512, false>>(a, g, stream);
    default: fail("attention: tile kernel " + std::to_string(int(k)) + " is not a wgmma kernel");
  }
}

bool wgmma_supported() {
  // The kernels exist as sm_90a SASS only; on any other device the build's compute_80 PTX
  // holds an empty body.
  static const bool ok = [] {
    int dev = 0, major = 0, minor = 0;
    GS_CUDA_CHECK(cudaGetDevice(&dev));
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    return major == 9 && minor == 0;
  }();
  return ok;
}

}  // namespace gs::cuda::attn
