# Sourced by the GPU scripts. gs_runnable PATH prints a runnable path for the binary PATH: PATH
# itself, or for a lean folder (collect-libs.sh), which carries binaries gzipped, an unpacked copy
# under /tmp/gs-gpu-bin.
gs_runnable() {
  local bin=$1
  if [[ ! -x $bin && -f $bin.gz ]]; then
    mkdir -p /tmp/gs-gpu-bin
    local out=/tmp/gs-gpu-bin/$(basename "$bin")
    [[ -x $out && $out -nt $bin.gz ]] || { gunzip -c "$bin.gz" > "$out" && chmod +x "$out"; }
    bin=$out
  fi
  printf '%s\n' "$bin"
}
