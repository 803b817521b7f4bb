#!/usr/bin/env bash
# Flags incompatible changes to the public Go API (the normalize package),
# as buf breaking does for the proto: it compares this tree with the last
# release tag (v*), or with main when there is no tag yet, using apidiff
# (pinned; test/setup.sh installs it into .bin/).
#
#   bash test/apidiff.sh          against the last tag, else main
#   bash test/apidiff.sh REF      against any commit
#
# It says SKIP and succeeds when there is nothing to compare with: no tag
# and no main branch, or a base without the package (the change that
# introduces it). An intended break is a new major version, not a
# silenced check.
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
cd "$(dirname "$0")/.."
pkg=github.com/acpnorm/acpnorm/normalize
base=${1:-}
if [ -z "$base" ]; then
  base=$(git describe --tags --abbrev=0 --match 'v*' 2>/dev/null || true)
  if [ -z "$base" ] && git rev-parse --verify -q main >/dev/null; then base=main; fi
fi
if [ -z "$base" ]; then
  echo "SKIP apidiff: no v* tag and no main branch to compare the normalize API with"
  exit 0
fi
if ! git cat-file -e "$base:normalize/doc.go" 2>/dev/null; then
  echo "SKIP apidiff: $base has no normalize package yet (this change introduces it)"
  exit 0
fi
apidiff="$PWD/.bin/apidiff"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/old"
git archive "$base" | tar -x -C "$tmp/old"
(cd "$tmp/old" && GOFLAGS=-mod=mod "$apidiff" -w "$tmp/old.api" "$pkg")
"$apidiff" -w "$tmp/new.api" "$pkg"
changes=$("$apidiff" -incompatible "$tmp/old.api" "$tmp/new.api")
if [ -n "$changes" ]; then
  echo "apidiff: incompatible changes to $pkg since $base:" >&2
  echo "$changes" >&2
  exit 1
fi
echo "apidiff: no incompatible change to $pkg since $base ($(git rev-parse --short "$base"))"
