#!/usr/bin/env bash
# Every tracked C++ file of the repository is formatted with clang-format-14 and the
# repository's .clang-format (ns-3's style). Prints the files that are not, and how to fix them.
#
#   tests/format/check-format.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$(readlink -f "$0")")/../..}"
if ! command -v clang-format-14 > /dev/null; then
    echo "check-format: clang-format-14 is not installed (./metaroce setup installs it)" >&2
    exit 1
fi
if ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    echo "check-format: not a git work tree; nothing to check" >&2
    exit 0
fi
bad=()
while IFS= read -r -d '' file; do
    [ -f "$file" ] || continue
    if ! clang-format-14 --dry-run --Werror "$file" > /dev/null 2>&1; then
        bad+=("$file")
    fi
done < <(git ls-files -z -- '*.cc' '*.h')
if [ "${#bad[@]}" -gt 0 ]; then
    echo "check-format: ${#bad[@]} file(s) not formatted with clang-format-14:" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "fix: clang-format-14 -i ${bad[*]}" >&2
    exit 1
fi
echo "check-format: every tracked C++ file is formatted"
