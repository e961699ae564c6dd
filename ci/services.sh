#!/usr/bin/env bash
# Real components for the live-source tests and the registry benchmark.
#
#   ci/services.sh start DIR   install what is missing (Debian, as root), then start in DIR:
#                              dockerd (DIR/docker.sock), a plain registry and an htpasswd
#                              registry on loopback ports, podman's Docker-compatible service
#                              (DIR/podman.sock). Writes DIR/env (KEY=VALUE lines) saying
#                              where each one is. Exit 3 when they cannot be installed/started.
#   ci/services.sh stop DIR    stop each by the PID it wrote in DIR, never by name.
#
# Nothing listens beyond loopback or unix sockets; dockerd runs with --bridge=none and no
# iptables. Keep DIR short (unix socket paths are limited to 108 bytes).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

log() { echo "services: $*" >&2; }

need_install() {
  for c in dockerd docker-registry skopeo umoci podman htpasswd; do
    command -v "$c" >/dev/null 2>&1 || return 0
  done
  return 1
}

install() {
  if ! need_install; then return 0; fi
  # Tests start services in parallel: one installs, the others wait for it (apt's own lock
  # would make them fail instead).
  exec 9>"${TMPDIR:-/tmp}/gpulint-services-install.lock"
  flock 9
  if ! need_install; then return 0; fi
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    log "missing tools and not root on Debian: cannot install docker.io docker-registry skopeo umoci podman apache2-utils"
    return 1
  fi
  log "installing docker.io docker-registry skopeo umoci podman apache2-utils"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || return 1
  apt-get install -y -qq --no-install-recommends \
    docker.io docker-registry skopeo umoci podman apache2-utils >&2 || return 1
}

# A loopback port nobody answers on (best effort: random, then probed).
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 20000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

wait_for() { # what, tries, command...
  local what=$1 tries=$2; shift 2
  for _ in $(seq 1 "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  log "$what did not come up"; return 1
}

docker_cli() {
  # The 20.10 client: /usr/local/bin/docker may be a newer one that wants buildx.
  if [[ -x /usr/bin/docker ]]; then echo /usr/bin/docker; else command -v docker; fi
}

start() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  install || exit 3
  local dk; dk=$(docker_cli)

  # dockerd, all state under DIR.
  mkdir -p "$dir/docker" "$dir/exec"
  dockerd --host "unix://$dir/docker.sock" --data-root "$dir/docker" --exec-root "$dir/exec" \
    --pidfile "$dir/dockerd.pid" --storage-driver vfs --iptables=false --ip6tables=false \
    --bridge=none >"$dir/dockerd.log" 2>&1 &
  wait_for dockerd 150 "$dk" -H "unix://$dir/docker.sock" version || { tail -20 "$dir/dockerd.log" >&2; exit 3; }

  # Two registries: anonymous, and htpasswd (bcrypt, as distribution requires).
  local p1 p2
  p1=$(free_port); p2=$(free_port)
  while [[ $p2 == "$p1" ]]; do p2=$(free_port); done
  mkdir -p "$dir/registry" "$dir/registry-auth"
  cat >"$dir/registry.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $dir/registry}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$p1}
EOF
  printf 's3cret-%s%s' "$RANDOM" "$RANDOM" >"$dir/password"
  htpasswd -Bbn gpulint "$(cat "$dir/password")" >"$dir/htpasswd"
  cat >"$dir/registry-auth.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $dir/registry-auth}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$p2}
auth: {htpasswd: {realm: gpulint-test, path: $dir/htpasswd}}
EOF
  docker-registry serve "$dir/registry.yml" >"$dir/registry.log" 2>&1 &
  echo $! >"$dir/registry.pid"
  docker-registry serve "$dir/registry-auth.yml" >"$dir/registry-auth.log" 2>&1 &
  echo $! >"$dir/registry-auth.pid"
  wait_for registry 100 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p1" || exit 3
  wait_for registry-auth 100 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p2" || exit 3

  # podman's service with its own storage; default ulimits need CAP_SYS_RESOURCE here.
  mkdir -p "$dir/podman/root" "$dir/podman/run" "$dir/podman/tmp" "$dir/podman/static"
  cat >"$dir/podman/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$dir/podman/tmp"
static_dir = "$dir/podman/static"
volume_path = "$dir/podman/volumes"
EOF
  cat >"$dir/podman/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$dir/podman/root"
runroot = "$dir/podman/run"
EOF
  CONTAINERS_CONF="$dir/podman/containers.conf" CONTAINERS_STORAGE_CONF="$dir/podman/storage.conf" \
    podman system service --time=0 "unix://$dir/podman.sock" >"$dir/podman.log" 2>&1 &
  echo $! >"$dir/podman.pid"
  wait_for podman 150 curl -sf --unix-socket "$dir/podman.sock" http://d/_ping || { tail -20 "$dir/podman.log" >&2; exit 3; }

  local user=gpulint
  cat >"$dir/env" <<EOF
DOCKER_CLI=$dk
GPULINT_DOCKER_HOST=unix://$dir/docker.sock
GPULINT_PODMAN_HOST=unix://$dir/podman.sock
GPULINT_PODMAN_CONF=$dir/podman/containers.conf
GPULINT_PODMAN_STORAGE_CONF=$dir/podman/storage.conf
GPULINT_REGISTRY=127.0.0.1:$p1
GPULINT_REGISTRY_ROOT=$dir/registry
GPULINT_AUTH_REGISTRY=127.0.0.1:$p2
GPULINT_AUTH_USER=$user
GPULINT_AUTH_PASSWORD_FILE=$dir/password
EOF
  log "started in $dir (env: $dir/env)"
}

stop() {
  local f pid
  for f in "$dir"/podman.pid "$dir"/registry.pid "$dir"/registry-auth.pid "$dir"/dockerd.pid; do
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
  log "stopped services in $dir"
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
