#!/usr/bin/env bash
# Runs a command that must reject its input: exit status exactly 1, the
# status of a reported error. A panic (101), a signal or success fails, so
# error tests catch crashes that `not` would let through.
"$@"
status=$?
if [ "$status" -ne 1 ]; then
  echo "expect-error: '$*' exited with $status, expected 1 (a reported error)" >&2
  exit 1
fi
exit 0
