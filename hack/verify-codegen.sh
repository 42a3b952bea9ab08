#!/usr/bin/env bash
# Fails if the committed generated files differ from what hack/update-codegen.sh
# produces now. Runs the generators in a copy of the tree, leaving this one as it is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tmp"
(cd "$tmp" && hack/update-codegen.sh >/dev/null)
status=0
while IFS= read -r -d '' f; do
  rel=${f#"$tmp"/}
  if ! cmp -s "$f" "$rel"; then
    echo "generated file is stale or missing: $rel" >&2
    diff -u "$rel" "$f" 2>/dev/null | head -40 >&2 || true
    status=1
  fi
done < <(find "$tmp" -name 'zz_generated.*' -print0)
while IFS= read -r -d '' f; do
  [ -e "$tmp/$f" ] || { echo "generated file no longer generated: $f" >&2; status=1; }
done < <(find pkg examples -name 'zz_generated.*' -print0 2>/dev/null)
if [ "$status" -ne 0 ]; then
  echo "run hack/update-codegen.sh and commit the result" >&2
fi
exit "$status"
