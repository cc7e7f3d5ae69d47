#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS each (default 60), one at
# a time and niced, so it can share a small machine.
#
#   scripts/fuzz.sh [SECONDS]            every target
#   FUZZ_TARGETS="robots normalize" scripts/fuzz.sh 600
#   FUZZ_NO_BUILD=1 scripts/fuzz.sh 600  the targets as last built
#
# Installs cargo-fuzz from crates.io when missing. Needs a nightly toolchain;
# without one, stable is used with RUSTC_BOOTSTRAP=1. Corpora grow in
# fuzz/corpus/<target>/ (seeded from fuzz/seeds/<target>/ and the example job
# and daemon files of config/), crashes land in fuzz/artifacts/<target>/, and
# each run's log in fuzz/artifacts/<target>.log; all three are gitignored.
# Exits non-zero when any target found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER_TARGET=${1:-60}
if ! [[ $SECONDS_PER_TARGET =~ ^[0-9]+$ ]] || [[ $SECONDS_PER_TARGET -eq 0 ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS]   (a positive whole number of seconds per target)" >&2
    exit 2
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    TOOLCHAIN=(+nightly)
else
    echo "== no nightly toolchain: using stable with RUSTC_BOOTSTRAP=1"
    TOOLCHAIN=()
    export RUSTC_BOOTSTRAP=1
fi

cd "$ROOT/fuzz"
TARGETS=${FUZZ_TARGETS:-$(cargo "${TOOLCHAIN[@]}" fuzz list)}

# Seed corpora: committed seeds, plus the repository's own job and daemon files.
for t in $TARGETS; do
    mkdir -p "corpus/$t" "artifacts/$t"
    if [[ -d "seeds/$t" ]]; then
        cp -n "seeds/$t"/* "corpus/$t/" 2>/dev/null || true
    fi
done
if [[ -d corpus/job_toml ]]; then
    for f in "$ROOT"/config/jobs.d/*.toml; do cp -n "$f" corpus/job_toml/ 2>/dev/null || true; done
fi
if [[ -d corpus/daemon_toml ]]; then
    cp -n "$ROOT/config/forager.toml" corpus/daemon_toml/ 2>/dev/null || true
fi

if [[ -z ${FUZZ_NO_BUILD:-} ]]; then
    echo "== building the fuzz targets"
    nice -n 10 cargo "${TOOLCHAIN[@]}" fuzz build
fi
# Run the built binaries directly: `cargo fuzz run` would rebuild the whole
# crate whenever a source file changed in between.
HOST=$(rustc "${TOOLCHAIN[@]}" -vV | sed -n 's/^host: //p')
BIN_DIR="target/$HOST/release"

failed=()
for t in $TARGETS; do
    echo "== $t for ${SECONDS_PER_TARGET}s (log: fuzz/artifacts/$t.log)"
    # -rss_limit_mb: a target that needs more than 2 GiB for one input is a finding.
    if nice -n 10 "$BIN_DIR/$t" "corpus/$t" -artifact_prefix="artifacts/$t/" \
        -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 >"artifacts/$t.log" 2>&1; then
        status=ok
    else
        status=FAILED
        failed+=("$t")
    fi
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "artifacts/$t.log" | grep -Eo '[0-9]+$' || echo '?')
    echo "   $status: $execs executions, corpus $(ls "corpus/$t" | wc -l) inputs"
done

if ((${#failed[@]})); then
    echo "== crashes in: ${failed[*]} (inputs in fuzz/artifacts/<target>/, logs beside them)" >&2
    exit 1
fi
echo "== no crash"
