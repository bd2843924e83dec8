#!/usr/bin/env bash
# hubspoke HyperPod lifecycle script (OnCreate), run as root on every node when it is created.
# 1. moves containerd and kubelet data onto the secondary EBS volume HyperPod mounts at /opt/sagemaker,
#    so image layers and pod scratch space do not fill the small root volume;
# 2. pins the route MTU towards every peer VPC (inter-Region peering carries less than the VPC's 9001);
# 3. tunes the NFS client for the dataset and checkpoint mounts on the Region's CNQ.
# Every step is idempotent; any failure logs what failed and exits non-zero, which fails node creation
# with this log in CloudWatch (/aws/sagemaker/Clusters/<cluster>/<id>, stream LifecycleConfig/...).
set -euo pipefail

# Test hook: a directory standing in for / (empty on a real node).
ROOT="${HUBSPOKE_ROOT:-}"
SECONDARY="${ROOT}/opt/sagemaker"

log() { echo "hubspoke on_create: $*"; }
fail() { echo "hubspoke on_create: ERROR: $*" >&2; exit 1; }

# @HUBSPOKE_PEER_MTU_FUNCTION@

relocate() {
  # $1: directory to move (e.g. /var/lib/containerd); $2: its new home under the secondary volume.
  local src="${ROOT}$1" dst="${SECONDARY}/$2"
  if [ -e "${ROOT}/etc/fstab" ] && grep -qs " $1 none bind" "${ROOT}/etc/fstab"; then
    log "$1 already bind-mounted from ${dst}"
    return 0
  fi
  mkdir -p "$src" "$dst" || fail "cannot create $src or $dst"
  cp -a "$src/." "$dst/" || fail "cannot copy $src to $dst"
  echo "${dst#"${ROOT}"} $1 none bind 0 0" >> "${ROOT}/etc/fstab" || fail "cannot add $1 to /etc/fstab"
  mount --bind "$dst" "$src" || fail "cannot bind-mount $dst on $src"
  log "moved $1 to ${dst#"${ROOT}"}"
}

relocate_container_data() {
  mountpoint -q "$SECONDARY" || fail "${SECONDARY} is not a mounted volume; give the instance group an EBS volume (InstanceStorageConfigs)"
  local restart=() service
  for service in kubelet containerd; do
    if systemctl is-active --quiet "$service"; then
      systemctl stop "$service" || fail "cannot stop $service"
      restart=("$service" "${restart[@]}")
    fi
  done
  relocate /var/lib/containerd containerd
  relocate /var/lib/kubelet kubelet
  for service in "${restart[@]}"; do
    systemctl start "$service" || fail "cannot restart $service after moving its data"
  done
}

install_peer_mtu_unit() {
  # Routes vanish on reboot (HyperPod reboots nodes to recover them): re-pin at every boot.
  local script="${ROOT}/usr/local/sbin/hubspoke-peer-mtu" unit="${ROOT}/etc/systemd/system/hubspoke-peer-mtu.service"
  mkdir -p "$(dirname "$script")" "$(dirname "$unit")"
  {
    echo '#!/usr/bin/env bash'
    echo 'set -euo pipefail'
    declare -f hubspoke_pin_peer_mtu
    echo 'hubspoke_pin_peer_mtu'
  } > "$script" || fail "cannot write $script"
  chmod 0755 "$script"
  cat > "$unit" <<UNIT || fail "cannot write $unit"
[Unit]
Description=hubspoke: pin the route MTU towards peer VPCs
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/hubspoke-peer-mtu

[Install]
WantedBy=multi-user.target
UNIT
  # And every five minutes: on the hub, a spoke added after this node was created publishes its CIDRs
  # then, and must be pinned without replacing the node.
  cat > "${unit%.service}.timer" <<UNIT || fail "cannot write ${unit%.service}.timer"
[Unit]
Description=hubspoke: re-pin the route MTU towards peer VPCs

[Timer]
OnBootSec=1min
OnUnitActiveSec=5min

[Install]
WantedBy=timers.target
UNIT
  systemctl daemon-reload || fail "systemctl daemon-reload failed"
  systemctl enable hubspoke-peer-mtu.service || fail "cannot enable hubspoke-peer-mtu.service"
  systemctl enable --now hubspoke-peer-mtu.timer || fail "cannot enable hubspoke-peer-mtu.timer"
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
  relocate_container_data
  hubspoke_pin_peer_mtu || fail "pinning the peer route MTU failed"
  install_peer_mtu_unit
  tune_nfs_client
  log "done"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
