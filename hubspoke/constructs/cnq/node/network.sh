# 4b. The OS never owns the floating IPs: Qumulo Core moves them between nodes (host-managed networking
#     adds and removes them on qumulo-frontend1 itself). cloud-init's EC2 datasource adds "all additional
#     values (secondary addresses)" of the interface to the network config it writes at first boot
#     (apply_full_imds_network_config, default true; canonical/cloud-init @ 1dcf6d87,
#     doc/rtd/reference/datasources/ec2.rst), so a node rebooted after a failover would take back
#     addresses another node now serves. As Qumulo's AWS node script does (its earlier CNQ Terraform's node
#     user data: "Stop cloud-init from configuring the host's networking", 99-disable-network-config.cfg),
#     cloud-init's network config is switched off for every later boot ("network: config: disabled" and
#     "disable_network_activation: true", canonical/cloud-init @ 0167c1b9, doc/rtd/reference/
#     network-config.rst); unlike that script, which hands the whole interface to Qumulo-managed networking,
#     the host keeps its primary address by DHCP (host-managed), and only the secondary addresses go.
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
for address in $addresses; do
  [ "$address" = "$primary" ] && continue
  ip -4 address del "$address/${block#*/}" dev "$device" 2> /dev/null ||
    log "$address was not on $device"
done
log "cloud-init network config disabled; $device keeps only $primary (DHCP)"
