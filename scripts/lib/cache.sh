# Sourced by the scripts that keep results in the machine's cache folder
# (~/.cache/practice-api/NAME, or under XDG_CACHE_HOME): cfn-lint and
# oas-lint keep clean results, npm-ci installed node_modules folders.

# cache_dir NAME: the folder of NAME's entries.
cache_dir() { echo "${XDG_CACHE_HOME:-$HOME/.cache}/practice-api/$1"; }

# cache_key: 32 hex digits of the SHA-256 of stdin (sha256sum, or macOS's
# shasum).
cache_key() {
  if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi | cut -c1-32
}

# cache_prune DIR N: removes all but the N entries of DIR used last (by
# their times: a hit touches its entry).
cache_prune() {
  ls -1t "$1" | tail -n +$(($2 + 1)) | while read -r old; do rm -rf "${1:?}/$old"; done
}
