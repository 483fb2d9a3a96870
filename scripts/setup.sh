#!/usr/bin/env bash
# Install what placement needs on a fresh Debian machine. Idempotent: skips what is already there.
#   scripts/setup.sh            python package only (enough for `placement plan`)
#   scripts/setup.sh --full     plus Debian packages and extras the test suite uses: openssh-server (real sshd in
#                               network namespaces), graphviz (plan pictures), iperf3 (link tests), a JDK (lab jobs),
#                               the Flink 2.3 wheel, PySpark, Ansible.
set -euo pipefail
cd "$(dirname "$0")/.."
FULL=0
[ "${1:-}" = "--full" ] && FULL=1

if [ "$FULL" = 1 ]; then
  missing=()
  command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  command -v dot >/dev/null 2>&1 || missing+=(graphviz)
  command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v tc >/dev/null 2>&1 || missing+=(iproute2)
  command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
  /usr/bin/python3 -c "import apt" >/dev/null 2>&1 || missing+=(python3-apt)   # Ansible's apt module, in the real role runs
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "setup: need root to install: ${missing[*]}" >&2
      exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
extras="test"
[ "$FULL" = 1 ] && extras="test,lab,ansible"
stamp=".venv/.installed-$extras-$(sha256sum pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e ".[$extras]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
