#!/bin/bash
# hubspoke: turn a stock Ubuntu node into a Qumulo Core node, the way Qumulo's CNQ deployments do
# (docs/runbooks/qumulo-core.md). Rendered by hubspoke/constructs/cnq/node/__init__.py; cloud-init runs it
# once, at first boot, as root. Every failure ends in one HUBSPOKE-CNQ-INSTALL-FAILED line on the console
# (`aws ec2 get-console-output`) and in the stack's install log group, stream named after the instance.
set -euo pipefail

REGION=@REGION@
INSTALL_PARAMETER=@INSTALL_PARAMETER@
LOG_GROUP=@LOG_GROUP@
# EBS volumes the instance's block-device mapping attaches, the boot volume included (storage.cache_volumes).
EBS_VOLUMES=@EBS_VOLUMES@
# Qumulo's node script retries package steps 5 times, 10 s apart (qumulo-terraform-gcp @ a30b449c,
# user-data.py MAX_RETRIES, RETRY_DELAY).
ATTEMPTS=5
DELAY=${HUBSPOKE_RETRY_DELAY:-10}
# ASSUMED bound: Qumulo's node script waits for its disks without one (wait_for_block_devices); the
# mapping attaches them at launch, so ten minutes without them means they are not coming.
DEVICE_WAIT=${HUBSPOKE_DEVICE_WAIT:-600}
# On a first boot, unattended-upgrades may hold dpkg's lock: wait for it up to 10 minutes rather than fail
# (apt >= 1.9.11, DPkg::Lock::Timeout in apt's configure-index; Ubuntu 24.04 ships apt 2.7).
APT=(apt-get -o DPkg::Lock::Timeout=600)
# Empty on a node; tests point these at a scratch directory and a file.
ROOT=${HUBSPOKE_ROOT:-}
CONSOLE=${HUBSPOKE_CONSOLE:-/dev/console}
STATE=$ROOT/var/lib/hubspoke
export PATH=$PATH:/snap/bin
export DEBIAN_FRONTEND=noninteractive

log() { echo "HUBSPOKE-CNQ: $*"; }

imds() {
  # IMDSv2 only (the nodes require session tokens).
  local token
  token=$(curl -fsS -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 300" http://169.254.169.254/latest/api/token) &&
    curl -fsS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}

cloudwatch() {
  command -v aws > /dev/null || return 1
  local stream events
  stream=$(imds instance-id) || stream=unknown-instance
  events=$(python3 -c 'import json, sys, time; print(json.dumps([{"timestamp": int(time.time() * 1000), "message": sys.argv[1]}]))' "$1")
  aws logs create-log-stream --region "$REGION" --log-group-name "$LOG_GROUP" --log-stream-name "$stream" 2> /dev/null || true
  aws logs put-log-events --region "$REGION" --log-group-name "$LOG_GROUP" --log-stream-name "$stream" --log-events "$events" > /dev/null
}

fail() {
  local line="HUBSPOKE-CNQ-INSTALL-FAILED: $*"
  echo "$line" >&2
  echo "$line" >> "$CONSOLE" 2> /dev/null || true
  cloudwatch "$line" || echo "HUBSPOKE-CNQ: could not write to log group $LOG_GROUP" >&2
  exit 1
}
trap 'fail "unexpected error at line $LINENO: $BASH_COMMAND"' ERR

retry() {
  local attempt
  for attempt in $(seq 1 "$ATTEMPTS"); do
    "$@" && return 0
    echo "HUBSPOKE-CNQ: attempt $attempt/$ATTEMPTS of '$*' failed" >&2
    if [ "$attempt" -lt "$ATTEMPTS" ]; then sleep "$DELAY"; fi
  done
  return 1
}

if [ -e "$STATE/installed" ]; then
  log "Qumulo Core already installed ($(cat "$STATE/installed")); nothing to do"
  exit 0
fi
mkdir -p "$STATE"

# 1. The AWS CLI. Canonical's Ubuntu AMIs ship snapd (AWS preinstalls the SSM Agent on them as a snap,
#    Systems Manager User Guide, "AMIs with SSM Agent preinstalled"); the CLI is the aws-cli snap.
if ! command -v aws > /dev/null; then
  command -v snap > /dev/null ||
    fail "neither the AWS CLI nor snapd is on this image: storage.ami_id must be a stock Canonical Ubuntu 24.04 image"
  retry snap install aws-cli --classic ||
    fail "cannot install the aws-cli snap: the node needs outbound HTTPS (NAT) to the Snap Store"
fi

# 2. The route MTU towards the peer VPCs, before Qumulo's portal traffic (TCP 3713) starts; a timer keeps
#    it pinned (new spokes, network restarts). hubspoke.mtu renders the pin script.
mkdir -p "$ROOT/usr/local/sbin" "$ROOT/etc/systemd/system"
cat > "$ROOT/usr/local/sbin/hubspoke-pin-peer-mtu" << 'HUBSPOKE_PIN'
@PIN_SCRIPT@
HUBSPOKE_PIN
chmod 0755 "$ROOT/usr/local/sbin/hubspoke-pin-peer-mtu"
cat > "$ROOT/etc/systemd/system/hubspoke-peer-mtu.service" << 'UNIT'
[Unit]
Description=hubspoke: pin the route MTU towards the peer VPCs (docs/runbooks/mtu.md)
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/hubspoke-pin-peer-mtu
UNIT
cat > "$ROOT/etc/systemd/system/hubspoke-peer-mtu.timer" << 'UNIT'
[Unit]
Description=hubspoke: re-pin the route MTU towards the peer VPCs every 5 minutes

[Timer]
OnBootSec=1min
OnUnitActiveSec=5min

[Install]
WantedBy=timers.target
UNIT
systemctl daemon-reload
retry "$ROOT/usr/local/sbin/hubspoke-pin-peer-mtu" || fail "cannot pin the route MTU towards the peer VPCs (see above)"
systemctl enable --now hubspoke-peer-mtu.timer

# 3. Which release, from where: the Storage stack's parameter, so a new release never changes this script.
install=$(retry aws ssm get-parameter --region "$REGION" --name "$INSTALL_PARAMETER" --query Parameter.Value --output text) ||
  fail "cannot read $INSTALL_PARAMETER from SSM"
read -r PACKAGE_URI VERSION <<< "$install"
log "installing Qumulo Core $VERSION from $PACKAGE_URI"

# 4. The host, as Qumulo's node script prepares Ubuntu (qumulo-terraform-gcp @ a30b449c, user-data.py,
#    DebianNodeInitializer): its packages, no host time sync (Qumulo runs chrony in its container, so the
#    host's chronyd AppArmor profile is disabled too), no Ubuntu Advantage tools, and the frontend
#    interface named qumulo-frontend1 so that Qumulo Core, with host-managed networking, knows where the
#    floating IPs go.
retry "${APT[@]}" update || fail "apt-get update failed: the node needs outbound access to the Ubuntu archive"
retry "${APT[@]}" install -y jq unzip linux-tools-common systemd-container ||
  fail "apt-get could not install Qumulo Core's host packages"
# Qumulo installs the tools of the running kernel. Ubuntu keeps only the current kernel ABI's packages in
# -updates and -security, so a node added later on an older pinned image may find none for its kernel:
# then the AWS kernel's meta package brings the current ones (linux-tools-aws).
kernel=$(uname -r)
if apt-cache show "linux-tools-$kernel" > /dev/null 2>&1; then
  retry "${APT[@]}" install -y "linux-tools-$kernel" || fail "apt-get could not install linux-tools-$kernel"
else
  log "linux-tools-$kernel is no longer in the Ubuntu archive (the pinned image is older than its kernel updates); installing linux-tools-aws instead"
  retry "${APT[@]}" install -y linux-tools-aws ||
    fail "apt-get could not install linux-tools-aws (nor linux-tools-$kernel, gone from the archive): pin a newer image"
fi
"${APT[@]}" remove -y chrony ubuntu-advantage-tools || log "chrony or ubuntu-advantage-tools not installed"
systemctl mask --now systemd-timesyncd ubuntu-advantage || log "timesyncd or ubuntu-advantage not present"
mkdir -p "$ROOT/etc/apparmor.d/disable"
ln -sf "$ROOT/etc/apparmor.d/usr.sbin.chronyd" "$ROOT/etc/apparmor.d/disable/"
apparmor_parser -R "$ROOT/etc/apparmor.d/usr.sbin.chronyd" || log "no chronyd AppArmor profile loaded"
mac=$(retry imds mac) || fail "cannot read the primary interface's MAC from instance metadata"
mkdir -p "$ROOT/etc/systemd/network"
printf '[Match]\nMACAddress=%s\n\n[Link]\nAlternativeName=qumulo-frontend1\n' "$mac" \
  > "$ROOT/etc/systemd/network/05-qumulo-frontend-link-altname.link"
udevadm trigger --action=add
@NETWORK@
# 5. The package, downloaded from the staged location (the node role may read only that prefix), then,
#    once every EBS volume of the node is there, installed with host-managed networking, as Qumulo's node
#    script does it (install_qumulo_core: download, wait_for_block_devices, install). EBS volumes show the
#    NVMe model "Amazon Elastic Block Store"; instance-store disks another one (EC2 User Guide, "Amazon EBS
#    and NVMe"), so only the volumes the mapping attaches are counted.
retry aws s3 cp --region "$REGION" --only-show-errors "$PACKAGE_URI" "$STATE/qumulo-core.deb" ||
  fail "cannot download $PACKAGE_URI: is Qumulo Core $VERSION staged there? (hubspoke preflight checks it)"
waited=0
while :; do
  found=$(lsblk --nodeps --noheadings --output MODEL | grep -c "Amazon Elastic Block Store" || true)
  [ "$found" -ge "$EBS_VOLUMES" ] && break
  [ "$waited" -ge "$DEVICE_WAIT" ] &&
    fail "only $found of the $EBS_VOLUMES EBS volumes of this node appeared in ${DEVICE_WAIT} s (lsblk): check the instance's block devices"
  log "waiting for EBS volumes: $found of $EBS_VOLUMES"
  sleep 5
  waited=$((waited + 5))
done
@ATLAS_OVERRIDES@
export QUMULO_NETWORK_MANAGED_BY_HOST=true
retry "${APT[@]}" install -y "$STATE/qumulo-core.deb" || fail "apt-get could not install Qumulo Core $VERSION from $PACKAGE_URI"

echo "$VERSION" > "$STATE/installed"
log "installed Qumulo Core $VERSION"
echo "HUBSPOKE-CNQ-INSTALLED: Qumulo Core $VERSION from $PACKAGE_URI" >> "$CONSOLE" 2> /dev/null || true
