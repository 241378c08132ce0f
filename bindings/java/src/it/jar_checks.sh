# shellcheck shell=bash
# Checks shared by check_bundled_jar.sh (Linux) and ../../windows/check_jar_windows.sh (Windows under Wine),
# sourced by both: without Fashion-MNIST the test is skipped (exit 77) here. The caller defines run NAME
# [ARGS...] (BundledJarApp, its output in $work/NAME.out), field KEY NAME (a value of that output) and $cache
# (where the natives were extracted).
DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }

# expect_cli_checksum CLI NAME: run NAME trained to the checksum of the CLI's run of BundledJarApp's recipe.
expect_cli_checksum() {
  local cli_json cli_sum java_sum
  cli_json=$("$1" train --model lenet --devices cpu:2 --epochs 1 --train-limit 1024 --test-limit 256 --seed 3 \
    --json 2>/dev/null) || fail "dptrain train"
  cli_sum=$(sed -n 's/.*"param_checksum": *"\([0-9a-f]\{16\}\)".*/\1/p' <<<"$cli_json")
  java_sum=$(field param_checksum "$2")
  echo "java param_checksum: ${java_sum:-<none>}, cli: ${cli_sum:-<none>}"
  [ -n "$cli_sum" ] && [ "$java_sum" = "$cli_sum" ] || fail "checksums differ"
}

# expect_cache_reused NAME [ARGS...]: run NAME leaves every extracted file as it was (same inode and times).
expect_cache_reused() {
  local before
  before=$(cd "$cache" && stat -c '%n %i %Y.%y' *)
  run "$@"
  [ "$(cd "$cache" && stat -c '%n %i %Y.%y' *)" = "$before" ] || fail "run $1 rewrote the cache in $cache"
}
