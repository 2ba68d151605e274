#!/usr/bin/env bash
# The lock rules written as Clang thread-safety annotations (src/ctrain/base/mutex.h,
# base/thread_annotations.h) checked by clang's -Wthread-safety: every source file whose
# classes use them (directly, or through its own header) is compiled with -fsyntax-only
# and the flags of build/compile_commands.json; a warning fails. Usage: thread_safety.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
CLANGXX=${CLANGXX:-$(command -v clang++-14 || command -v clang++)}
[ -f "$build/compile_commands.json" ] || { echo "thread_safety.sh: no $build/compile_commands.json (run scripts/build.sh)" >&2; exit 1; }
mapfile -t files < <(python3 - "$build/compile_commands.json" <<'PY'
import json, os, re, sys
pat = re.compile(r'ctrain/base/mutex\.h|CTRAIN_GUARDED_BY|CTRAIN_REQUIRES')
seen = set()
for e in json.load(open(sys.argv[1])):
    f = e["file"]
    if "/src/ctrain/" not in f or f in seen:
        continue
    seen.add(f)
    # The file, its own header, and the ctrain headers it includes directly.
    text = open(f).read()
    texts = [text]
    src = f[: f.index("/src/ctrain/") + len("/src/")]
    for inc in re.findall(r'#include "(ctrain/[^"]+)"', text) + [os.path.relpath(os.path.splitext(f)[0] + ".h", src)]:
        h = os.path.join(src, inc)
        if os.path.exists(h):
            texts.append(open(h).read())
    if any(pat.search(t) for t in texts):
        print(f)
PY
)
echo "thread_safety.sh: ${#files[@]} files with annotations, checked by $("$CLANGXX" --version | head -1)"
fail=0
for f in "${files[@]}"; do
  flags=$(python3 - "$build/compile_commands.json" "$f" <<'PY'
import json, shlex, sys
for e in json.load(open(sys.argv[1])):
    if e["file"] == sys.argv[2]:
        args = shlex.split(e["command"])[1:]
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
                skip = True
                continue
            if a == sys.argv[2] or a.startswith("-W") or a in ("-MD", "-MMD") or a.startswith("-fno-semantic"):
                continue
            out.append(a)
        print(shlex.join(out))
        break
PY
)
  # shellcheck disable=SC2086
  if ! (cd "$build" && eval "\"$CLANGXX\" $flags -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror=thread-safety -Wno-unknown-warning-option \"$f\""); then
    echo "thread_safety.sh: $f" >&2
    fail=1
  fi
done
exit $fail
