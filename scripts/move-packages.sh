#!/usr/bin/env bash
# scripts/move-packages.sh: gives the shipped simulators and the test support
# homes of their own, production helpers stay in internal/:
#   internal/ec2sim, internal/whatif                    -> sim/ec2sim, sim/whatif
#   internal/{testenv,simtest,damage,gotool,promtext}   -> internal/testsupport/...
#   internal/clusterhost (the cluster tier's)           -> internal/testsupport/clusterhost
# It moves the files with git mv, rewrites every mention of the old paths in
# the tracked text (imports, docs, Makefile, scripts) and gofmts what it
# touched. Safe to run again, on a tree where branches merged since added
# files under an old path or imports of one: it moves what is left and
# rewrites what still names an old path. Run from anywhere in the checkout.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
self=scripts/move-packages.sh

# old new: one line per package.
moves="internal/ec2sim sim/ec2sim
internal/whatif sim/whatif
internal/testenv internal/testsupport/testenv
internal/simtest internal/testsupport/simtest
internal/damage internal/testsupport/damage
internal/gotool internal/testsupport/gotool
internal/promtext internal/testsupport/promtext
internal/clusterhost internal/testsupport/clusterhost"

# move OLD NEW: every tracked file under OLD to the same place under NEW.
move() {
  local old="$1" new="$2" f dest
  git ls-files -z -- "$old/" | while IFS= read -r -d '' f; do
    dest="$new/${f#"$old"/}"
    if [ -e "$dest" ]; then
      echo "move-packages: $f: $dest exists, left in place; merge the two by hand" >&2
      continue
    fi
    mkdir -p "$(dirname "$dest")"
    git mv "$f" "$dest"
  done
  [ -d "$old" ] && find "$old" -depth -type d -empty -delete
  if [ -d "$old" ]; then
    echo "move-packages: $old still holds files git does not track" >&2
  fi
}

# The rewrite: OLD as a whole path element, not a part of a longer name.
expr=""
while read -r old new; do
  move "$old" "$new"
  expr+="s{(?<![\\w-])\\Q$old\\E(?![\\w-])}{$new}g; "
done <<<"$moves"

# Files that may name an old path (perl's expression decides), the script aside.
olds=$(cut -d' ' -f1 <<<"$moves" | paste -sd'|')
{ git grep -lIzE "($olds)" -- . ":(exclude)$self" || true; } | xargs -0r perl -pi -e "$expr"
git diff --name-only -z -- '*.go' | xargs -0r gofmt -w
