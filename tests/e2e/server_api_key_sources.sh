#!/usr/bin/env bash
# Where `serve` takes its API key from (issue 28): a file (--api-key-file) or the environment
# ($GEMMASERVE_API_KEY), not only the command line that `ps` shows; more than one source, an
# empty or unreadable file are errors at start-up; listening beyond loopback without a key warns.
# Usage (ctest): bash server_api_key_sources.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
serve_opts=(--backend cpu --max-model-len 128 --max-num-seqs 2)
status=0
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

# Expects the server to need `key`: 401 without it or with another, 200 with it.
check_key() {
  local what="$1" key="$2"
  [ "$(code "$GS_BASE_URL/v1/models")" = 401 ] || { echo "FAILED ($what): no key must be 401"; status=1; }
  [ "$(code -H "Authorization: Bearer wrong" "$GS_BASE_URL/v1/models")" = 401 ] ||
    { echo "FAILED ($what): a wrong key must be 401"; status=1; }
  [ "$(code -H "Authorization: Bearer $key" "$GS_BASE_URL/v1/models")" = 200 ] ||
    { echo "FAILED ($what): the key must be accepted"; status=1; }
  if tr '\0' ' ' <"/proc/$GS_PID/cmdline" | grep -qF -- "$key"; then
    echo "FAILED ($what): the key is on the command line"; status=1
  fi
}

file_key="file-$RANDOM$RANDOM"
printf '%s \n' "$file_key" >"$work/key"  # trailing space and newline are not part of the key
gs_start_server "$bin" "$work/file.log" "${serve_opts[@]}" --api-key-file "$work/key"
check_key "--api-key-file" "$file_key"
port="$GS_PORT"

# Start-up errors (checked while that server holds its port: a start that got past the key checks
# fails on the port instead of serving, so none of these can hang).
expect_start_error() {
  local what="$1" expected="$2"; shift 2
  local rc=0
  timeout 120 "$@" >"$work/err.log" 2>&1 || rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -qF -- "$expected" "$work/err.log"; then
    echo "FAILED ($what): exit $rc, expected an error with: $expected"; cat "$work/err.log"; status=1
  fi
}
serve_taken=("$bin" serve --host 127.0.0.1 --port "$port" "${serve_opts[@]}")
expect_start_error "flag and file" "the API key is given more than once (--api-key, --api-key-file)" \
  "${serve_taken[@]}" --api-key k --api-key-file "$work/key"
expect_start_error "flag and env" "the API key is given more than once (--api-key, \$GEMMASERVE_API_KEY)" \
  env GEMMASERVE_API_KEY=e "${serve_taken[@]}" --api-key k
expect_start_error "file and env" "the API key is given more than once (--api-key-file, \$GEMMASERVE_API_KEY)" \
  env GEMMASERVE_API_KEY=e "${serve_taken[@]}" --api-key-file "$work/key"
expect_start_error "missing file" "--api-key-file $work/missing: cannot be read" \
  "${serve_taken[@]}" --api-key-file "$work/missing"
: >"$work/empty"
expect_start_error "empty file" "--api-key-file $work/empty: the first line is empty" \
  "${serve_taken[@]}" --api-key-file "$work/empty"
expect_start_error "empty env" "GEMMASERVE_API_KEY is set but empty" env GEMMASERVE_API_KEY= "${serve_taken[@]}"
# Exposure: beyond loopback without a key warns (then fails on the taken port); with a key, or
# on loopback, it does not.
expect_start_error "0.0.0.0 without a key" "listening on 0.0.0.0 without an API key" \
  "$bin" serve --host 0.0.0.0 --port "$port" "${serve_opts[@]}"
for args in "--host 0.0.0.0 --api-key k" "--host 127.0.0.1"; do
  # shellcheck disable=SC2086
  timeout 120 "$bin" serve $args --port "$port" "${serve_opts[@]}" >"$work/err.log" 2>&1 || true
  if grep -q "without an API key" "$work/err.log"; then echo "FAILED: '$args' warned about exposure"; status=1; fi
  grep -q "already in use" "$work/err.log" || { echo "FAILED: '$args' did not reach the port"; cat "$work/err.log"; status=1; }
done
gs_stop_server || { echo "FAILED: shutdown (file key)"; status=1; }

env_key="env-$RANDOM$RANDOM"
GEMMASERVE_API_KEY="$env_key" gs_start_server "$bin" "$work/env.log" "${serve_opts[@]}"
check_key "\$GEMMASERVE_API_KEY" "$env_key"
gs_stop_server || { echo "FAILED: shutdown (env key)"; status=1; }

[ $status -eq 0 ] && echo "ok: API keys from a file and the environment; conflicting and empty sources refused"
exit $status
