#!/usr/bin/env bash
# Machine-made mutants of the providers' code, measured against the conformance suite.
#
#   scripts/mutants.sh install              install the pinned cargo-mutants if missing
#   scripts/mutants.sh list CRATE           the mutants of CRATE (kvm2 | template), one a line
#   scripts/mutants.sh run CRATE [K/N] [-- ARGS]
#                                           test CRATE's mutants (shard K of N) at HEAD
#   scripts/mutants.sh record CRATE [--unmeasured WHY] OUT...
#                                           fold the outcomes of runs into mutants/CRATE.json
#   scripts/mutants.sh new CRATE            run only the mutants the record has no outcome for
#   scripts/mutants.sh missed CRATE         run again the mutants the record has as missed
#
# What is mutated and the test each mutant gets (the crate's `conformance` target: the
# suite on the fake) are in .cargo/mutants.toml; mutants/README.md explains the record.
# `run` tests the committed HEAD, copied to target/mutants/CRATE/src and mutated in place
# there, with a build directory of its own (target/mutants/CRATE/build, reused from run
# to run), so the worktree may change meanwhile. Shards are round-robin. Outcomes go to
# target/mutants/CRATE/out/LABEL/mutants.out, the log to target/mutants/CRATE/LABEL.log
# (LABEL is CRATE or CRATE-K-of-N). `record` keeps every judgment whose mutant is still
# listed; pass `--unmeasured WHY` before the run directories to say why the mutants with
# no outcome were not run.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

# The version the record was measured with; the consistency test lists with it.
PINNED=27.1.0
root=$PWD
work=$root/target/mutants

package_of() {
  case "$1" in
    kvm2) echo reference-kvm2 ;;
    template) echo template-provider ;;
    *) echo "unknown crate '$1' (kvm2 | template)" >&2; exit 2 ;;
  esac
}

installed_version() {
  cargo mutants --version 2>/dev/null | awk '{print $2}'
}

install() {
  if [ "$(installed_version)" = "$PINNED" ]; then
    echo "cargo-mutants $PINNED is installed"
    return
  fi
  local t0
  t0=$(date +%s)
  cargo install --locked cargo-mutants --version "$PINNED"
  echo "cargo-mutants $PINNED installed in $(($(date +%s) - t0)) s"
}

require_pinned() {
  local v
  v=$(installed_version)
  if [ "$v" != "$PINNED" ]; then
    echo "cargo-mutants ${v:-is missing}; the record is measured with $PINNED: scripts/mutants.sh install" >&2
    exit 2
  fi
}

list() {
  require_pinned
  cargo mutants --list --line-col=false --package "$(package_of "$1")"
}

# A copy of commit $2 for crate $1, in place of whatever commit the copy held: only
# files that differ are written, with a fresh mtime, so the build directory stays
# valid (a file cargo-mutants left mutated when stopped is written back too).
snapshot() {
  local crate=$1 commit=$2 src=$work/$1/src
  if [ ! -f "$src/.commit" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    git archive "$commit" | tar -x -m -C "$src"
  else
    local old f
    old=$(cat "$src/.commit")
    { git diff --name-only --no-renames "$old" "$commit"
      grep -rl 'changed by cargo-mutants' "$src" --include='*.rs' | sed "s|^$src/||" || true
    } | sort -u | while IFS= read -r f; do
      if git cat-file -e "$commit:$f" 2>/dev/null; then
        mkdir -p "$(dirname "$src/$f")"
        git show "$commit:$f" >"$src/$f"
      else
        rm -f "$src/$f"
      fi
    done
  fi
  echo "$commit" >"$src/.commit"
}

# A first build of the registry crates costs about ten minutes on two cores. When the
# crate's build directory does not exist yet and the workspace's own does, the new one
# starts from hard links to the workspace's compiled dependencies: cargo reuses those
# whose features and flags match (the workspace's own crates live at another path, so
# they are always rebuilt, under other file names). Only the compiled artefacts are
# links (the compiler writes a new file and renames it into place, so a link is never
# written through); the bookkeeping cargo rewrites in place is copied.
seed_build() {
  local build=$work/$1/build
  [ ! -d "$build" ] && [ -d "$root/target/debug/deps" ] || return 0
  mkdir -p "$build/debug"
  cp -al "$root/target/debug/deps" "$build/debug/deps"
  cp -a "$root/target/debug/build" "$root/target/debug/.fingerprint" "$build/debug/"
  echo "seeded $build from the workspace's compiled dependencies"
}

run() {
  local crate=$1 shard=${2:-}
  shift $(($# > 1 ? 2 : 1))
  [ "${1:-}" != "--" ] || shift
  require_pinned
  local package commit label args=()
  package=$(package_of "$crate")
  commit=$(git rev-parse HEAD)
  [ -z "$(git status --porcelain -- .cargo reference-kvm2 fakes conformance)" ] \
    || echo "note: uncommitted changes are not measured; HEAD ($commit) is" >&2
  label=$crate
  if [ -n "$shard" ]; then
    label=$crate-${shard%/*}-of-${shard#*/}
    args+=(--shard "$shard" --sharding round-robin)
  fi
  # MUTANTS_LABEL names a run whose outcomes are not the measurement (another test).
  label=${MUTANTS_LABEL:-$label}
  local out=$work/$crate/out/$label
  mkdir -p "$out"
  snapshot "$crate" "$commit"
  seed_build "$crate"
  echo "$commit" >"$out/commit"
  local t0
  t0=$(date +%s)
  # In place in the copy, so the build directory is reused from mutant to mutant. The
  # test timeout is explicit: in place, cargo-mutants sets none from the baseline.
  CARGO_TARGET_DIR=$work/$crate/build nice -n 10 cargo mutants --in-place \
    --dir "$work/$crate/src" --package "$package" --output "$out" --timeout 180 \
    "${args[@]}" "$@" 2>&1 | tee "$work/$crate/$label.log" || true
  echo "$(($(date +%s) - t0))" >"$out/seconds"
  echo "outcomes: $out/mutants.out/outcomes.json ($(cat "$out/seconds") s)"
}

record() {
  local crate=$1
  shift
  require_pinned
  local listing
  listing=$(mktemp)
  cargo mutants --list --json --package "$(package_of "$crate")" >"$listing"
  python3 mutants/record.py fold --crate "$crate" --version "$PINNED" --listing "$listing" "$@"
  rm -f "$listing"
}

new() {
  local crate=$1
  require_pinned
  local listing names
  listing=$(mktemp)
  names=$(mktemp)
  cargo mutants --list --json --package "$(package_of "$crate")" >"$listing"
  python3 mutants/record.py unmeasured --crate "$crate" --listing "$listing" >"$names"
  if [ ! -s "$names" ]; then
    echo "every listed mutant of $crate has an outcome in the record"
    return
  fi
  echo "$(wc -l <"$names") mutants of $crate have no outcome yet"
  run_named "$crate" "$names"
}

# Runs the mutants of crate $1 named in file $2: one anchored regex a line, matching a
# mutant's name whatever its line and column.
run_named() {
  local re=()
  while IFS= read -r n; do re+=(--re "$n"); done <"$2"
  run "$1" "" -- "${re[@]}"
}

# The record's missed mutants, run again at HEAD (after a check was sharpened): their
# new outcomes replace the old ones when the run is folded in with `record`.
missed() {
  local crate=$1
  require_pinned
  local names
  names=$(mktemp)
  python3 mutants/record.py missed --crate "$crate" >"$names"
  if [ ! -s "$names" ]; then
    echo "the record has no missed mutant of $crate"
    return
  fi
  echo "$(wc -l <"$names") missed mutants of $crate, run again"
  MUTANTS_LABEL=${MUTANTS_LABEL:-$crate-missed} run_named "$crate" "$names"
}

case "${1:-}" in
  install) install ;;
  list) list "${2:?crate}" ;;
  run) shift; run "$@" ;;
  record) shift; record "$@" ;;
  new) new "${2:?crate}" ;;
  missed) missed "${2:?crate}" ;;
  *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
