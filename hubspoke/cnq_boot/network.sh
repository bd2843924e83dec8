# 4b. The OS never owns the floating IPs: Qumulo Core moves them between nodes (host-managed networking
#     adds and removes them on qumulo-frontend1 itself). cloud-init's EC2 datasource adds "all additional
#     values (secondary addresses)" of the interface to the network config it writes at first boot
#     (apply_full_imds_network_config, default true; canonical/cloud-init @ 1dcf6d87,
#     doc/rtd/reference/datasources/ec2.rst), so a node rebooted after a failover would take back
#     addresses another node now serves. cloud-init's network config is switched off for every later boot
#     ("network: config: disabled" and "disable_network_activation: true", canonical/cloud-init @ 0167c1b9,
#     doc/rtd/reference/network-config.rst): the same two keys Qumulo's GCP node script writes to
#     99-disable-network-config.cfg on its RHEL path (Qumulo/qumulo-terraform-gcp @ a30b449, user-data.py
#     lines 710-722; Qumulo's AWS node script is not stored here, so no claim is made about it). Rewriting
#     netplan so that the host keeps only its primary address by DHCP, and dropping the secondary addresses
#     from the running interface, is hubspoke's own design: no stored Qumulo script does it.
primary=$(retry imds local-ipv4) || fail "cannot read the primary IPv4 address from instance metadata"
addresses=$(retry imds "network/interfaces/macs/$mac/local-ipv4s") ||
  fail "cannot read the interface's IPv4 addresses from instance metadata"
block=$(retry imds "network/interfaces/macs/$mac/subnet-ipv4-cidr-block") ||
  fail "cannot read the interface's subnet from instance metadata"
device=""
for link in "$ROOT"/sys/class/net/*; do
  [ "$(cat "$link/address" 2> /dev/null)" = "$mac" ] && device=$(basename "$link") && break
done
[ -n "$device" ] || fail "no network device has the primary interface's MAC $mac"
mkdir -p "$ROOT/etc/cloud/cloud.cfg.d" "$ROOT/etc/netplan"
cat > "$ROOT/etc/cloud/cloud.cfg.d/99-hubspoke-network.cfg" << 'CLOUDCFG'
# hubspoke (node/network.sh): the OS never owns the CNQ floating IPs; Qumulo Core moves them.
disable_network_activation: true
network:
  config: disabled
CLOUDCFG
# cloud-init's rendering (floating IPs included) goes; the primary address stays DHCP on the same MAC.
rm -f "$ROOT/etc/netplan/50-cloud-init.yaml"
cat > "$ROOT/etc/netplan/50-hubspoke-primary.yaml" << NETPLAN
# hubspoke (node/network.sh): the primary address only; Qumulo Core adds the floating IPs it serves.
network:
  version: 2
  ethernets:
    primary:
      match:
        macaddress: "$mac"
      dhcp4: true
NETPLAN
chmod 0600 "$ROOT/etc/netplan/50-hubspoke-primary.yaml"
# The running networkd still holds the first boot's rendering, floating IPs as static addresses, in
# /run/systemd/network: netplan writes it there and "does not apply the generated configuration" (netplan
# generate(8), netplan.io 1.1.2 on Ubuntu 24.04, manpages.ubuntu.com noble). Until it is regenerated and
# networkd re-reads it, any networkd restart (an unattended systemd upgrade, `netplan apply`, a carrier flap)
# would put the floating IPs back. `networkctl reload` makes networkd re-read its .network files and
# reconfigure the links that match a new, changed or removed one (networkctl(1), systemd 255 on Ubuntu
# 24.04; that page is not in the stored corpus). Regenerate, reload, and only then delete the addresses, so
# nothing re-adds them after the delete.
netplan generate || fail "netplan generate failed on the rewritten network config (see above)"
networkctl reload || fail "networkctl reload failed: systemd-networkd still holds the floating IPs as static addresses"
for address in $addresses; do
  [ "$address" = "$primary" ] && continue
  ip -4 address del "$address/${block#*/}" dev "$device" 2> /dev/null && continue
  # A failed delete is fine only if the address is gone (the reload may have dropped it already). One the OS
  # keeps would answer for an address Qumulo moves to another node (two hosts, one IP): the install stops
  # here, visibly, rather than run a node that does that silently.
  # Listed first, then searched: with pipefail, `ip | grep -q` can fail on SIGPIPE when grep stops early.
  held=$(ip -4 -o address show dev "$device") || fail "cannot list the addresses of $device (ip address show)"
  if grep -q " inet $address/" <<< "$held"; then
    fail "cannot remove floating IP $address from $device (ip address del failed); the OS must not hold it"
  fi
  log "$address was not on $device"
done
log "cloud-init network config disabled; $device keeps only $primary (DHCP)"
