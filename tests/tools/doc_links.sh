#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# README.md and docs/*.md point only inside the repository: no path through
# ../shared (or any ../ that leaves the repository), and every relative link
# or image, [text](target) or ![alt](target), names a file or folder that
# exists (anchors "#..." after the path are ignored; http(s) and mailto
# links are not followed; code blocks and inline code are not links). Prints each bad reference as FILE:LINE: TARGET.
# Usage: doc_links.sh [REPOSITORY_ROOT]
set -euo pipefail
root=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
cd "$root"
status=0
files=(README.md docs/*.md)
for file in "${files[@]}"; do
  [[ -f $file ]] || { echo "doc_links: $file is missing"; status=1; continue; }
  if grep -n '\.\./shared' "$file"; then
    echo "doc_links: $file points at ../shared, outside the repository (lines above)"
    status=1
  fi
  dir=$(dirname "$file")
  # Every (target) right after ], one per line with its line number.
  while IFS=: read -r line target; do
    target=${target%%#*}              # drop an anchor
    target=${target%% *}              # drop a title: [x](path "title")
    [[ -z $target || $target == http://* || $target == https://* || $target == mailto:* ]] && continue
    resolved=$(realpath -m "$dir/$target")
    if [[ $resolved != "$root" && $resolved != "$root"/* ]]; then
      echo "$file:$line: $target: outside the repository"
      status=1
    elif [[ ! -e $resolved ]]; then
      echo "$file:$line: $target: no such file in the repository"
      status=1
    fi
  done < <(awk '
    /^[ ]*```/ { fenced = !fenced; next }   # code blocks: a lambda [&](x) is no link
    !fenced {
      text = $0
      gsub(/`[^`]*`/, "", text)             # nor is inline code
      while (match(text, /\]\([^)]*\)/)) {
        print NR ":" substr(text, RSTART + 2, RLENGTH - 3)
        text = substr(text, RSTART + RLENGTH)
      }
    }' "$file")
done
[[ $status -eq 0 ]] && echo "doc_links: every link in README.md and docs/*.md resolves inside the repository"
exit "$status"
