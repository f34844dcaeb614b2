#!/usr/bin/env bash
# Builds examples/stable-user — a crate that depends on gpu-kernels and gpu-runtime — on the
# stable toolchain, outside the repository, twice:
#
#   1. checkout: its path dependencies rewritten to this checkout's absolute paths;
#   2. packaged: against `cargo package`d copies of gpu, ptx-builder, gpu-runtime and
#      gpu-kernels, unpacked (the crate's own paths and a [patch.crates-io] point at them), so
#      that anything a package leaves out and the build needs fails here.
#
# Each runs `cargo +stable build --release` with RUSTUP_TOOLCHAIN unset and a `rustup` on PATH
# that refuses to run: gpu-kernels' build script asks rustup for the pinned nightly only when
# its carried PTX is stale, so a build that would need the nightly fails. The build must also
# leave no device build in gpu-kernels' OUT_DIR and warn of no stale PTX. Prints the time of
# the first build and of the rebuild after `touch src/main.rs` (which must not rerun
# gpu-kernels' build script), then runs the program (without a GPU it says why it could not
# open one).
#
#   bash scripts/stable-user.sh                  # both; KEEP=1 keeps the temporary folder
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
work=$(mktemp -d "${TMPDIR:-/tmp}/stable-user.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; else echo "keeping $work"; fi

# `cargo +stable` goes through rustup's cargo proxy, which does not look `rustup` up on PATH.
mkdir -p "$work/bin"
cat >"$work/bin/rustup" <<'EOF'
#!/bin/sh
echo "error: rustup is hidden by scripts/stable-user.sh: a stable build of gpu-kernels must not need the nightly" >&2
exit 1
EOF
chmod +x "$work/bin/rustup"

# build LABEL DIR: the build, its checks and timings in DIR (a copy of examples/stable-user).
build() {
  local label=$1 dir=$2
  local log=$work/$label.log
  cd "$dir"
  export TIMEFORMAT="$label: %lR for the first build (real; user %lU, sys %lS)"
  if ! time (env -u RUSTUP_TOOLCHAIN -u CARGO_TARGET_DIR -u RUSTFLAGS -u RUSTC_WRAPPER \
    PATH="$work/bin:$PATH" cargo +stable build --release -v >"$log" 2>&1); then
    tail -40 "$log"
    echo "error: $label: the stable build of examples/stable-user failed (log above)" >&2
    exit 1
  fi
  if grep -q "carried PTX (kernels/ptx) is stale" "$log"; then
    grep "is stale" "$log"
    echo "error: $label: gpu-kernels' carried PTX is stale: run \`cargo xtask build-ptx\`" >&2
    exit 1
  fi
  if [ -n "$(find target/release/build -path '*/gpu-kernels-*/out/device' -print -quit)" ]; then
    echo "error: $label: gpu-kernels' build script built device code (out/device)" >&2
    exit 1
  fi
  touch src/main.rs
  export TIMEFORMAT="$label: %lR for the rebuild after touch src/main.rs (real; user %lU, sys %lS)"
  time (env -u RUSTUP_TOOLCHAIN -u CARGO_TARGET_DIR PATH="$work/bin:$PATH" \
    cargo +stable build --release -v >"$log.rebuild" 2>&1) || {
    tail -40 "$log.rebuild"
    exit 1
  }
  if ! grep -q "Fresh gpu-kernels" "$log.rebuild"; then
    grep "gpu-kernels" "$log.rebuild" || true
    echo "error: $label: touching the user's main.rs reran gpu-kernels' build script" >&2
    exit 1
  fi
  echo "$label: $(./target/release/stable-user 2>&1 | head -1)"
  cd "$repo"
}

cargo +stable --version

# 1. Against the checkout.
cp -r examples/stable-user "$work/checkout"
rm -rf "$work/checkout/target"
sed -i -e "s|path = \"../../kernels\"|path = \"$repo/kernels\"|" \
  -e "s|path = \"../../runtime\"|path = \"$repo/runtime\"|" "$work/checkout/Cargo.toml"
grep -q "path = \"$repo/kernels\"" "$work/checkout/Cargo.toml"
build checkout "$work/checkout"

# 2. Against packaged copies. Packaged together so that each finds the others; no lock file,
# since gpu-runtime is in no registry to lock it against.
cargo +stable package -p gpu -p ptx-builder -p gpu-runtime -p gpu-kernels --allow-dirty \
  --no-verify --exclude-lockfile --target-dir "$work/package-target" --quiet
mkdir -p "$work/crates"
for crate in "$work"/package-target/package/*.crate; do
  tar -xzf "$crate" -C "$work/crates"
done
ls "$work/crates"
cp -r examples/stable-user "$work/packaged"
rm -rf "$work/packaged/target"
v=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
crates=$work/crates
sed -i -e "s|path = \"../../kernels\"|path = \"$crates/gpu-kernels-$v\"|" \
  -e "s|path = \"../../runtime\"|path = \"$crates/gpu-runtime-$v\"|" "$work/packaged/Cargo.toml"
cat >>"$work/packaged/Cargo.toml" <<EOF

# The packages name their dependencies by version (crates.io): these copies instead.
[patch.crates-io]
gpu = { path = "$crates/gpu-$v" }
ptx-builder = { path = "$crates/ptx-builder-$v" }
gpu-runtime = { path = "$crates/gpu-runtime-$v" }
EOF
build packaged "$work/packaged"
echo "stable-user: both builds on stable used gpu-kernels' carried PTX"
