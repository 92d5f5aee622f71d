#!/usr/bin/env bash
# Installs what gemmaserve needs to build and test on Debian 12. Idempotent; safe to re-run.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build git pkg-config ca-certificates
  nlohmann-json3-dev libcpp-httplib-dev libssl-dev libopenblas-dev libcli11-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libstb-dev libjpeg62-turbo-dev libwebp-dev  # image input: stb_image (PNG, GIF, BMP), libjpeg-turbo, libwebp
  clang libclang-rt-14-dev llvm  # llvm: llvm-symbolizer, for file:line in sanitizer reports
  python3 python3-jinja2 python3-numpy
)
missing=()
# node/npm may come from another source (NodeSource); only ask Debian when absent.
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "[setup] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[setup] all Debian packages present"
fi
