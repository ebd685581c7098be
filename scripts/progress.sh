# Source this: `with_progress LABEL LOG COMMAND...` runs COMMAND with its output in LOG and,
# while it runs, says every $CUDYN_PROGRESS_EVERY seconds (20) how long it has been running
# and the last line it wrote, so a long step is never silent: on a terminal one line updated
# in place (cleared when the command ends), elsewhere (a CI log) a line each time. Returns the
# command's exit status. Used by scripts/test.sh and scripts/demo.sh.

# The last line COMMAND wrote that says something, cut to fit a line.
_progress_last_line() {
  tail -c 4000 "$1" 2>/dev/null | tr '\r' '\n' | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | grep -v '^[[:space:]]*$' |
    tail -n 1 | cut -c1-80
}

with_progress() {
  local label=$1 log=$2
  shift 2
  local every=${CUDYN_PROGRESS_EVERY:-20} start=$SECONDS
  "$@" >"$log" 2>&1 &
  local pid=$!
  (
    tty=0
    [ -t 1 ] && tty=1
    n=0
    while kill -0 "$pid" 2>/dev/null; do
      sleep 1
      n=$((n + 1))
      if [ $((n % every)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
        line="$label  $((SECONDS - start)) s: $(_progress_last_line "$log")"
        if [ $tty = 1 ]; then
          printf '\r\033[K%s' "$line"
        else
          printf '%s\n' "$line"
        fi
      fi
    done
    [ $tty = 1 ] && [ "$n" -ge "$every" ] && printf '\r\033[K'
    exit 0
  ) &
  local ticker=$!
  local rc=0
  wait "$pid" || rc=$?
  wait "$ticker" 2>/dev/null || true
  return $rc
}

# `COMMAND | say_once STATE`: COMMAND's output with a long message said before (by an earlier
# command sharing STATE, a file) said once: a line holding 80 or more characters that an
# earlier line held keeps what is around them and the first words of the repeat, then "...
# (as above)". Five examples that each skip with the driver's 444-character "could not be
# opened; tried: ..." print it once.
say_once() {
  python3 -c '
import difflib, sys
state = sys.argv[1]
try:
    seen = open(state).read().splitlines()
except OSError:
    seen = []
out = open(state, "a")
for line in sys.stdin:
    line = line.rstrip("\n")
    best = None
    for s in seen:
        m = difflib.SequenceMatcher(None, line, s, autojunk=False).find_longest_match(0, len(line), 0, len(s))
        if m.size >= 80 and (best is None or m.size > best.size):
            best = m
    if best:
        repeat = line[best.a:best.a + best.size]
        head = repeat.split(";")[0][:60]
        print(line[:best.a] + head + " ... (as above)" + line[best.a + best.size:], flush=True)
    else:
        print(line, flush=True)
    if len(line) >= 80:
        seen.append(line)
        out.write(line + "\n")
' "$1"
}
