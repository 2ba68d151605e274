# Helpers the bench scripts source (. "$SRC/bench/lib.sh", SRC the repository root).

# wait_line FILE PATTERN: waits up to 60 s for a line of FILE matching PATTERN and prints its last word
# (a server's "listening on ADDR"); exits the script naming both when none comes.
wait_line() {
  for _ in $(seq 600); do
    if grep -q "$2" "$1" 2>/dev/null; then grep "$2" "$1" | head -1 | awk '{print $NF}'; return; fi
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2; exit 1
}
