#!/usr/bin/env bash
# hubspoke HyperPod lifecycle script (OnCreate), run as root on every node when it is created.
# 1. moves containerd's data root and kubelet's state onto the secondary EBS volume HyperPod mounts at
#    /opt/sagemaker, so image layers and pod scratch space do not fill the small root volume;
# 2. tunes the NFS client for the dataset and checkpoint mounts on the Region's CNQ.
# No MTU pinning here: these nodes' NFS traffic goes to the Region's own CNQ inside the VPC (9001); the hosts
# whose traffic crosses the inter-Region peering are the CNQ nodes, which pin it themselves.
# Every step is idempotent; a failure logs what failed and exits non-zero, which fails node creation with
# this log in CloudWatch (/aws/sagemaker/Clusters/<cluster>/<id>, stream LifecycleConfig/...).
#
# How the data moves follows AWS's own HyperPod EKS lifecycle script (awslabs/awsome-distributed-training
# at 0edaf15, 1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create_main.sh):
# wait up to 60 s for the volume; containerd's `root` set in its configuration (Amazon Linux 2: the EKS
# containerd config; Amazon Linux 2023: a configuration on the volume that a systemd drop-in points
# containerd at); kubelet's directory moved and replaced by a symlink; any stale copy on the volume removed
# first. No /etc/fstab bind mounts: a mount listed there that fails at a recovery reboot stops the boot in
# emergency mode, and HyperPod reboots nodes to recover them.
set -euo pipefail

# Test hook: a directory standing in for / (empty on a real node).
ROOT="${HUBSPOKE_ROOT:-}"
VOLUME=/opt/sagemaker
VOLUME_WAIT_TRIES=12
VOLUME_WAIT_SECONDS=5

log() { echo "hubspoke on_create: $*"; }
fail() { echo "hubspoke on_create: ERROR: $*" >&2; exit 1; }

wait_for_volume() {
  local try
  for ((try = 1; try <= VOLUME_WAIT_TRIES; try++)); do
    if mountpoint -q "${ROOT}${VOLUME}"; then
      log "${VOLUME} is mounted"
      return 0
    fi
    log "waiting for ${VOLUME} to be mounted (${try}/${VOLUME_WAIT_TRIES})"
    sleep "$VOLUME_WAIT_SECONDS"
  done
  fail "${VOLUME} is not mounted after $((VOLUME_WAIT_TRIES * VOLUME_WAIT_SECONDS)) s; give the instance group an EBS volume (InstanceStorageConfigs)"
}

os_version() {
  local file="${ROOT}/etc/os-release"
  [ -r "$file" ] || fail "cannot read /etc/os-release to tell Amazon Linux 2 from 2023"
  # shellcheck disable=SC1090
  (. "$file" && echo "${VERSION_ID:-}")
}

containerd_root_al2() {
  local config="${ROOT}/etc/eks/containerd/containerd-config.toml" root="$1"
  [ -f "$config" ] || fail "Amazon Linux 2 without /etc/eks/containerd/containerd-config.toml; cannot set containerd's root"
  sed -i -e "/^[# ]*root[[:space:]]*=/c\\root = \"${root}\"" "$config" || fail "cannot edit $config"
  grep -q "^root = \"${root}\"$" "$config" || fail "$config has no root line to set"
}

containerd_root_al2023() {
  local root="$1" config="${ROOT}${VOLUME}/containerd/config.toml"
  local dropin="${ROOT}/etc/systemd/system/containerd.service.d"
  mkdir -p "$(dirname "$config")" "$dropin" || fail "cannot create ${VOLUME}/containerd or the containerd drop-in folder"
  cat > "$config" <<TOML || fail "cannot write ${VOLUME}/containerd/config.toml"
version = 2
root = "${root}"
state = "/run/containerd"

[grpc]
address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "localhost/kubernetes/pause"
enable_cdi = true

[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "nvidia"
discard_unpacked_layers = true

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
runtime_type = "io.containerd.runc.v2"
base_runtime_spec = "/etc/containerd/base-runtime-spec.json"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
BinaryName = "/usr/bin/nvidia-container-runtime"
SystemdCgroup = true

[plugins."io.containerd.grpc.v1.cri".registry]
config_path = "/etc/containerd/certs.d:/etc/docker/certs.d"

[plugins."io.containerd.grpc.v1.cri".cni]
bin_dir = "/opt/cni/bin"
conf_dir = "/etc/cni/net.d"
TOML
  cat > "${dropin}/10-hubspoke-data-root.conf" <<UNIT || fail "cannot write the containerd drop-in"
[Service]
ExecStart=
ExecStart=/usr/bin/containerd --config ${VOLUME}/containerd/config.toml
UNIT
}

containerd_moved() {
  # $1: the data root on the volume. True when an earlier run already pointed containerd at it.
  [ -f "${ROOT}/etc/systemd/system/containerd.service.d/10-hubspoke-data-root.conf" ] \
    || grep -qs "^root = \"$1\"$" "${ROOT}/etc/eks/containerd/containerd-config.toml"
}

move_containerd() {
  local data_root="${VOLUME}/containerd/data-root" version
  if containerd_moved "$data_root"; then
    log "containerd's root is already ${data_root}"
    return 0
  fi
  version="$(os_version)"
  # A copy left by an earlier, interrupted run (or an older AMI) must not be mixed with the current data.
  rm -rf "${ROOT}${data_root}" || fail "cannot remove the stale ${data_root}"
  mkdir -p "${ROOT}${VOLUME}/containerd" || fail "cannot create ${VOLUME}/containerd"
  if [ -d "${ROOT}/var/lib/containerd" ]; then
    cp -a "${ROOT}/var/lib/containerd" "${ROOT}${data_root}" || fail "cannot copy /var/lib/containerd to ${data_root}"
  else
    mkdir -p "${ROOT}${data_root}"
  fi
  case "$version" in
    2) containerd_root_al2 "$data_root" ;;
    2023) containerd_root_al2023 "$data_root" ;;
    *) fail "unsupported OS version '${version}' (Amazon Linux 2 or 2023 expected); containerd's root was not moved" ;;
  esac
  log "containerd's root is ${data_root} (Amazon Linux ${version})"
}

move_kubelet() {
  local src="${ROOT}/var/lib/kubelet" dst="${ROOT}${VOLUME}/kubelet"
  if [ -L "$src" ]; then
    log "/var/lib/kubelet already points to $(readlink "$src")"
    return 0
  fi
  rm -rf "$dst" || fail "cannot remove the stale ${VOLUME}/kubelet"
  mkdir -p "$dst" || fail "cannot create ${VOLUME}/kubelet"
  if [ -d "$src" ]; then
    # Dot files too; an empty directory has nothing to move.
    find "$src" -mindepth 1 -maxdepth 1 -exec mv -t "$dst" {} + || fail "cannot move /var/lib/kubelet to ${VOLUME}/kubelet"
    rmdir "$src" || fail "cannot remove the emptied /var/lib/kubelet"
  fi
  mkdir -p "$(dirname "$src")"
  ln -s "${VOLUME}/kubelet" "$src" || fail "cannot link /var/lib/kubelet to ${VOLUME}/kubelet"
  log "/var/lib/kubelet now lives in ${VOLUME}/kubelet"
}

move_container_data() {
  local restart=() service
  # `restart` may stay empty. Amazon Linux 2 has bash 4.2, where "${restart[@]}" of an empty array under
  # `set -u` is an "unbound variable" error (fixed in bash 4.4: bash CHANGES, bash-4.4-rc2, item a), so
  # every expansion of it is guarded: ${restart[@]+"${restart[@]}"} is nothing when the array is empty.
  for service in kubelet containerd; do
    if systemctl is-active --quiet "$service"; then
      systemctl stop "$service" || fail "cannot stop $service"
      restart=("$service" ${restart[@]+"${restart[@]}"})
    fi
  done
  move_containerd
  move_kubelet
  systemctl daemon-reload || fail "systemctl daemon-reload failed"
  for service in ${restart[@]+"${restart[@]}"}; do
    systemctl start "$service" || fail "cannot restart $service after moving its data"
  done
}

tune_nfs_client() {
  # nconnect=16 opens 16 TCP connections per mount: give each enough RPC slots and socket buffer.
  modprobe sunrpc || fail "cannot load the sunrpc module (NFS client)"
  mkdir -p "${ROOT}/etc/sysctl.d" "${ROOT}/etc/modprobe.d" "${ROOT}/etc/udev/rules.d"
  cat > "${ROOT}/etc/sysctl.d/90-hubspoke-nfs.conf" <<'SYSCTL' || fail "cannot write the NFS sysctl file"
sunrpc.tcp_max_slot_table_entries = 128
net.core.rmem_max = 16777216
net.core.wmem_max = 16777216
net.ipv4.tcp_rmem = 4096 131072 16777216
net.ipv4.tcp_wmem = 4096 131072 16777216
SYSCTL
  echo "options sunrpc tcp_max_slot_table_entries=128" > "${ROOT}/etc/modprobe.d/90-hubspoke-nfs.conf"
  # Kernels since 5.4 give NFS mounts 128 KiB of read-ahead; the loader reads shards sequentially, so
  # restore the older 15 x rsize (15 MiB with rsize=1 MiB).
  cat > "${ROOT}/etc/udev/rules.d/90-hubspoke-nfs-readahead.rules" <<'UDEV' || fail "cannot write the read-ahead rule"
SUBSYSTEM=="bdi", ACTION=="add", PROGRAM="/usr/bin/awk -v bdi=$kernel 'BEGIN{ret=1} {if ($4 == bdi) {ret=0}} END{exit ret}' /proc/fs/nfsfs/volumes", ATTR{read_ahead_kb}="15360"
UDEV
  sysctl --system > /dev/null || fail "sysctl --system failed"
  udevadm control --reload || fail "udevadm control --reload failed"
  log "NFS client tuned (128 RPC slots, 16 MiB socket buffers, 15 MiB read-ahead)"
}

main() {
  log "start"
  wait_for_volume
  move_container_data
  tune_nfs_client
  log "done"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
