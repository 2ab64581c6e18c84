#!/usr/bin/env bash
# Runs a command that must reject its input: exit status exactly 1, the
# status of a reported error, or with --usage first exactly 2, the status of
# a usage error. A panic (101), a signal or success fails, so error tests
# catch crashes that `not` would let through.
expected=1
if [ "${1:-}" = "--usage" ]; then
  expected=2
  shift
fi
"$@"
status=$?
if [ "$status" -ne "$expected" ]; then
  echo "expect-error: '$*' exited with $status, expected $expected" >&2
  exit 1
fi
exit 0
