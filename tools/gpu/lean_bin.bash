# Sourced by the GPU scripts.
# gs_gpu_libs DIR: unpacks DIR/gpu-libs/*.gz (the shared libraries our Debian build needs and the
# GPU machine's Ubuntu lacks, collect-libs.sh) into /tmp/gs-gpu-libs and puts them and the CUDA
# toolkit on LD_LIBRARY_PATH and PATH.
# gs_runnable PATH prints a runnable path for the binary PATH: PATH itself, or for a lean folder
# (collect-libs.sh), which carries binaries gzipped, an unpacked copy under /tmp/gs-gpu-bin.
gs_gpu_libs() {
  local libs=/tmp/gs-gpu-libs f
  mkdir -p "$libs"
  for f in "$1"/gpu-libs/*.gz; do
    [[ -e $f ]] || continue
    # Into a temporary name, then renamed: a library that another script's process has mapped is
    # replaced, not truncated under it (SIGBUS when several scripts run side by side).
    local to="$libs/$(basename "${f%.gz}")"
    gunzip -c "$f" > "$to.$$" && mv -f "$to.$$" "$to"
  done
  export LD_LIBRARY_PATH="$libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  export PATH="/usr/local/cuda/bin:$PATH"
}

gs_runnable() {
  local bin=$1
  if [[ ! -x $bin && -f $bin.gz ]]; then
    mkdir -p /tmp/gs-gpu-bin
    local out=/tmp/gs-gpu-bin/$(basename "$bin")
    [[ -x $out && $out -nt $bin.gz ]] || { gunzip -c "$bin.gz" > "$out.$$" && chmod +x "$out.$$" && mv -f "$out.$$" "$out"; }
    bin=$out
  fi
  printf '%s\n' "$bin"
}
