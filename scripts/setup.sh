#!/usr/bin/env bash
# Install what placement needs on a fresh Debian machine. Idempotent: skips what is already there.
#   scripts/setup.sh            the python package and Graphviz (`make demo`: `placement plan` and its pictures)
#   scripts/setup.sh --full     plus Debian packages and extras the test suite uses: openssh-server (real sshd in
#                               network namespaces), graphviz (plan pictures), iperf3 (link tests), a JDK (lab jobs),
#                               prometheus (metric histories from Prometheus), iptables and libnetfilter-queue-dev (the
#                               lab's delay lines), the Flink 2.3 wheel, PySpark, Ansible.
#   scripts/setup.sh --check    only print the Debian packages that would be installed (with --full: for the tests)
#   scripts/setup.sh --latest   into .venv-latest instead, the newest versions pyproject.toml's ranges allow (not the
#                               tested ones in constraints.txt): `make test-latest` runs the suite there, `make lock`
#                               writes what it resolved into constraints.txt
# Python packages come in the versions constraints.txt records (the ones the suite was last run with), so a fresh
# machine installs what a developer's machine tested, not whatever a registry released since.
set -euo pipefail
cd "$(dirname "$0")/.."
FULL=0
CHECK=0
LATEST=0
for arg in "$@"; do
  case "$arg" in
    --full) FULL=1 ;;
    --check) CHECK=1 ;;
    --latest) LATEST=1 ;;
    *) echo "usage: scripts/setup.sh [--full] [--check] [--latest]" >&2; exit 2 ;;
  esac
done
VENV=.venv
PIN=(-c constraints.txt)
if [ "$LATEST" = 1 ]; then
  VENV=.venv-latest
  PIN=(--upgrade --upgrade-strategy eager)
fi

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)   # plan.svg/png: the README's first command draws them
if [ "$FULL" = 1 ]; then
  command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)
  command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)   # tests/collect/test_prometheus.py scrapes a real Flink
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v tc >/dev/null 2>&1 || missing+=(iproute2)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)   # the lab's delay lines: NFQUEUE rules
  [ -f /usr/include/libnetfilter_queue/libnetfilter_queue.h ] || missing+=(libnetfilter-queue-dev)   # builds netfilterqueue
  command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
  /usr/bin/python3 -c "import apt" >/dev/null 2>&1 || missing+=(python3-apt)   # Ansible's apt module, in the real role runs
fi
if [ "$CHECK" = 1 ]; then
  echo "missing Debian packages: ${missing[*]:-none}"
  exit 0
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  elif [ "$FULL" = 1 ]; then
    echo "setup: need root (and apt-get) to install: ${missing[*]}" >&2
    exit 1
  else  # the demo still plans; only the pictures wait for Graphviz
    echo "setup: plan pictures need Graphviz: as root, apt-get install graphviz (until then plans come with plan.dot only)" >&2
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
extras="test,forecast"
[ "$FULL" = 1 ] && extras="test,forecast,lab,delayline,ansible"
digest="$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)"
stamp="$VENV/.installed-$extras-$digest"
full_stamp="$VENV/.installed-test,lab,delayline,ansible-$digest"   # the full install holds the basic one
if [ "$LATEST" = 1 ] || { [ ! -f "$stamp" ] && ! { [ "$FULL" = 0 ] && [ -f "$full_stamp" ]; }; }; then
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null
  # setuptools ends an editable install with a block of asterisks, "Editable installation ... be careful with folders
  # in your working directory with the same name as your package": a notice (InformationOnly) for the import finder
  # it maps placement/ with, which pip -q still prints. Only that notice is filtered; every other warning shows.
  PYTHONWARNINGS="ignore:Editable installation${PYTHONWARNINGS:+,$PYTHONWARNINGS}" \
    "$VENV/bin/pip" install -q "${PIN[@]}" -e ".[$extras]"
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi
