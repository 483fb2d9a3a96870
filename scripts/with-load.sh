#!/usr/bin/env bash
# Runs a command with CPU spinners beside it (`make test-loaded`, issue 48): a test that holds only on a quiet machine
# fails here rather than on a busy CI runner. LOAD_SPINNERS (2) spinners at niceness LOAD_NICE (19: they take what the
# command leaves idle; 0: they compete as the other work on a shared machine does). They stop however the command
# ends (exit, failure, Ctrl-C) and with this script even when it is killed: each asks the kernel for SIGKILL when its
# parent dies (PR_SET_PDEATHSIG), as the trap cannot run on a SIGKILL.
set -euo pipefail
SPIN='import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):  # the parent died before the call
    sys.exit()
while True:
    pass'
spinners=()
stop_spinners() {
    if ((${#spinners[@]})); then
        kill "${spinners[@]}" 2>/dev/null || true
        wait "${spinners[@]}" 2>/dev/null || true
    fi
}
trap stop_spinners EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq "${LOAD_SPINNERS:-2}"); do
    nice -n "${LOAD_NICE:-19}" python3 -c "$SPIN" "$$" &
    spinners+=("$!")
done
echo "with-load: ${#spinners[@]} spinner(s) at nice ${LOAD_NICE:-19}" >&2
"$@"
