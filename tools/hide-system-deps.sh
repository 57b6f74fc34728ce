#!/usr/bin/env bash
# Runs a command as on a machine with only Node: Debian's PostgreSQL and Chromium
# hidden in a private mount namespace (nothing is uninstalled; other processes
# still see them). Needs root (unshare -m). Used to show that `npm test` needs
# no system packages:
#   tools/hide-system-deps.sh npx vitest run test/console/console.e2e.test.ts
set -euo pipefail
if [ -z "${SWITCHBOARD_HIDDEN:-}" ]; then
  exec unshare -m env SWITCHBOARD_HIDDEN=1 "$0" "$@"
fi
scratch=$(mktemp -d /var/tmp/hide-system-deps.XXXXXX)
mkdir -p "$scratch/empty" "$scratch/up" "$scratch/work"
# A whiteout (a 0/0 character device) in an overlay's upper layer hides that name in /usr/bin.
for name in chromium initdb pg_ctl postgres pg_ctlcluster; do mknod "$scratch/up/$name" c 0 0; done
mount -t overlay overlay -o "lowerdir=/usr/bin,upperdir=$scratch/up,workdir=$scratch/work" /usr/bin
for dir in /usr/lib/postgresql /usr/lib/chromium /usr/share/postgresql; do
  [ -d "$dir" ] && mount --bind "$scratch/empty" "$dir"
done
# A fresh /tmp, so the npm-shipped Chromium is unpacked anew rather than reused.
mount -t tmpfs tmpfs /tmp
unset PG_BIN_DIR CHROMIUM_PATH TEST_DATABASE_URL
export PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v postgresql | paste -sd: -)
echo "hidden: $(ls /usr/bin/chromium /usr/lib/postgresql/*/bin/initdb 2>&1 | tr '\n' ' ')" >&2
"$@"
