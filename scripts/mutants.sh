#!/usr/bin/env bash
# Machine-made mutants of the providers' code, measured against the conformance suite.
#
#   scripts/mutants.sh install              install the pinned cargo-mutants if missing
#   scripts/mutants.sh list CRATE           the mutants of CRATE (kvm2 | template), one a line
#   scripts/mutants.sh run CRATE [K/N] [-- ARGS]
#                                           test CRATE's mutants (shard K of N) at HEAD
#   scripts/mutants.sh record CRATE OUT...  fold the outcomes of runs into mutants/CRATE.json
#   scripts/mutants.sh new CRATE            run only the mutants the record has no outcome for
#
# What is mutated and the test each mutant gets (the crate's `conformance` target: the
# suite on the fake) are in .cargo/mutants.toml. `run` tests the committed HEAD, copied
# to target/mutants/src, in place there, with its own target directory
# (target/mutants/build, reused from run to run); the worktree may change meanwhile.
# Outcomes go to target/mutants/out/CRATE[-K-of-N]/mutants.out, the log to
# target/mutants/CRATE[-K-of-N].log. `record` keeps every judgment whose mutant is
# still listed and resets the outcome of no mutant it has no new outcome for.
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

# A clean copy of HEAD: what is measured is a commit, never a worktree's edits.
snapshot() {
  local commit=$1 src=$work/src
  if [ -f "$src/.commit" ] && [ "$(cat "$src/.commit")" = "$commit" ] \
    && ! grep -rqs 'changed by cargo-mutants' "$src"/reference-kvm2/kvm2/src "$src"/fakes/template/src; then
    return
  fi
  rm -rf "$src"
  mkdir -p "$src"
  git archive "$commit" | tar -x -C "$src"
  echo "$commit" >"$src/.commit"
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
    args+=(--shard "$shard")
  fi
  mkdir -p "$work/out/$label"
  snapshot "$commit"
  echo "$commit" >"$work/out/$label/commit"
  local t0
  t0=$(date +%s)
  # In place in the copy, so the build directory is reused from mutant to mutant. The
  # test timeout is explicit: in place, cargo-mutants sets none from the baseline.
  CARGO_TARGET_DIR=$work/build nice -n 10 cargo mutants --in-place --dir "$work/src" \
    --package "$package" --output "$work/out/$label" --timeout 180 \
    "${args[@]}" "$@" 2>&1 | tee "$work/$label.log" || true
  echo "$(($(date +%s) - t0))" >"$work/out/$label/seconds"
  echo "outcomes: $work/out/$label/mutants.out/outcomes.json ($(cat "$work/out/$label/seconds") s)"
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
  # One anchored regex a line, matching the mutant's name whatever its line and column.
  local re=()
  while IFS= read -r n; do re+=(--re "$n"); done <"$names"
  run "$crate" "" -- "${re[@]}"
}

case "${1:-}" in
  install) install ;;
  list) list "${2:?crate}" ;;
  run) shift; run "$@" ;;
  record) shift; record "$@" ;;
  new) new "${2:?crate}" ;;
  *) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
