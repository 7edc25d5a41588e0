#!/usr/bin/env bash
# Push this repository to a Hugging Face Space, its large binaries as Git LFS objects (a Space refuses them as
# plain git objects). This repository keeps them plain (its own transport and CI clone with plain git); the
# conversion happens in a temporary copy, never here.
#
#   scripts/space_push.sh prepare DIR            DIR: a new repository holding HEAD's history (branch main) in
#                                                which `git lfs migrate import` rewrote every file matching an
#                                                LFS rule of .gitattributes as an LFS object; checked: no plain
#                                                blob over 10 MB, no plain binary blob over 1 MB
#   scripts/space_push.sh push REMOTE [--force]  prepare a temporary DIR, then push its main to REMOTE's main
#                                                (e.g. https://huggingface.co/spaces/USER/SPACE; git asks for a
#                                                Hugging Face token as the password). A Space created on the site
#                                                starts with a commit of its own: --force replaces it.
#
# Needs git-lfs (Debian: apt-get install git-lfs). Only committed work is pushed: HEAD, not the working tree.
set -euo pipefail

PLAIN_LIMIT=$((10 * 1024 * 1024))   # no plain blob above this (a Space's hard limit without LFS/Xet)
BINARY_LIMIT=$((1024 * 1024))       # nor a plain binary above this (the Hub refuses binaries outside LFS/Xet)

die() { echo "space_push: $*" >&2; exit 1; }

repo_root() { git -C "$(dirname "$0")" rev-parse --show-toplevel; }

lfs_patterns() {  # the patterns .gitattributes sends to LFS, comma-separated for --include
    awk '!/^#/ && /filter=lfs/ {print $1}' "$1/.gitattributes" | paste -sd, -
}

check_blobs() {  # every blob in main's history: fail on a large plain one
    local dir="$1" bad=0 type sha size path
    while read -r type sha size path; do
        [ "$type" = blob ] || continue
        if [ "$size" -gt "$PLAIN_LIMIT" ]; then
            echo "space_push: $path ($size bytes) is still a plain git object" >&2; bad=1
        elif [ "$size" -gt "$BINARY_LIMIT" ] && git -C "$dir" cat-file blob "$sha" | head -c 8000 | grep -qaP '\x00'; then
            echo "space_push: $path ($size bytes) is a binary file outside LFS" >&2; bad=1
        fi
    done < <(git -C "$dir" rev-list --objects main | git -C "$dir" cat-file --batch-check='%(objecttype) %(objectname) %(objectsize) %(rest)')
    [ "$bad" = 0 ] || die "add an LFS rule for the files above to .gitattributes, commit, and run again"
}

prepare() {
    local dir="$1" root patterns
    command -v git-lfs >/dev/null || die "git-lfs is not installed (Debian: apt-get install git-lfs)"
    [ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || die "$dir exists and is not empty"
    root="$(repo_root)"
    patterns="$(lfs_patterns "$root")"
    [ -n "$patterns" ] || die "no LFS rules in $root/.gitattributes"
    git init -q -b main "$dir"
    git -C "$dir" lfs install --local >/dev/null   # filters and the pre-push hook in DIR's own config only
    git -C "$dir" fetch -q --no-tags "$root" HEAD
    git -C "$dir" reset -q --hard FETCH_HEAD
    git -C "$dir" lfs migrate import --yes --include="$patterns" main >/dev/null 2>&1
    git -C "$dir" lfs checkout >/dev/null 2>&1   # the working tree shows the files, not their pointers
    check_blobs "$dir"
    echo "space_push: prepared $dir (main at $(git -C "$dir" rev-parse --short main)); LFS files:"
    git -C "$dir" lfs ls-files
}

case "${1:-}" in
    prepare)
        [ $# -eq 2 ] || die "usage: $0 prepare DIR"
        prepare "$2"
        ;;
    push)
        [ $# -ge 2 ] && [ $# -le 3 ] || die "usage: $0 push REMOTE [--force]"
        force=()
        if [ $# -eq 3 ]; then
            [ "$3" = --force ] || die "usage: $0 push REMOTE [--force]"
            force=(--force)
        fi
        work="$(mktemp -d)"
        trap 'rm -rf "$work"' EXIT
        prepare "$work/space"
        git -C "$work/space" push "${force[@]}" "$2" main:main
        ;;
    *)
        sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
