#!/usr/bin/env bash
# The single source of testdata/host/variants/*: hand-made overlays on the real h200 capture.
# Each overlay holds only the files it changes plus an optional .gpulint-remove list (paths
# deleted from the layers below). Every variant is rebuilt from scratch here; nothing else is
# deleted, and a test (`variants_are_generated_by_the_script` in src/rules/host/tests.rs)
# regenerates all of them into a temporary directory and compares with the checked-in trees.
#
#   testdata/host/make-variants.sh [OUT]     (OUT defaults to testdata/host/variants)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-$HERE/variants}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$HERE"
H=h200/.gpulint-host/commands
V="$OUT"
# Real nvcc-built ELF fixtures (see testdata/fatbin/README.md).
FB=../fatbin
SITE=opt/torch/.venv/lib/python3.12/site-packages/torch

mk() { mkdir -p "$(dirname "$1")"; cat > "$1"; }
# variant NAME: start NAME afresh (only this one is deleted) and print its directory.
variant() { rm -rf "${V:?}/$1"; mkdir -p "$V/$1"; printf '%s' "$V/$1"; }

# --- complete: what the capture lacks, hand-made and consistent with it (synthetic) ---
C=$(variant complete)
mk $C/proc/modules <<'E'
nvidia_uvm 2076672 0 - Live 0x0000000000000000 (OE)
nvidia_drm 135168 0 - Live 0x0000000000000000 (OE)
nvidia_modeset 1638400 1 nvidia_drm, Live 0x0000000000000000 (OE)
nvidia 104071168 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (OE)
ext4 1081344 1 - Live 0x0000000000000000
E
mk $C/proc/cmdline <<'E'
BOOT_IMAGE=/vmlinuz-6.8.0-85-generic root=/dev/vda1 ro console=ttyS0
E
mk $C/etc/modprobe.d/blacklist-nouveau.conf <<'E'
blacklist nouveau
options nouveau modeset=0
E
printf '0x10de\n' | mk $C/sys/bus/pci/devices/0000:00:06.0/vendor
printf '0x030200\n' | mk $C/sys/bus/pci/devices/0000:00:06.0/class
printf '0x2335\n' | mk $C/sys/bus/pci/devices/0000:00:06.0/device
printf '0x1af4\n' | mk $C/sys/bus/pci/devices/0000:00:01.0/vendor
printf '0x020000\n' | mk $C/sys/bus/pci/devices/0000:00:01.0/class
printf '0x1000\n' | mk $C/sys/bus/pci/devices/0000:00:01.0/device
printf '6.8.0-85-generic\n' | mk $C/.gpulint-host/commands/uname-r.txt
printf 'x86_64\n' | mk $C/.gpulint-host/commands/uname-m.txt
printf 'uid=1000(alice) gid=1000(alice) groups=1000(alice),27(sudo),44(video)\n' | mk $C/.gpulint-host/commands/id.txt
printf 'systemd\nnvidia-persistenced\ndockerd\ncontainerd\nbash\n' | mk $C/.gpulint-host/commands/ps-comm.txt
mk $C/.gpulint-host/commands/dmesg.txt <<'E'
[    5.101] nvidia: loading out-of-tree module taints kernel.
[    5.310] nvidia-nvlink: Nvlink Core is being initialized, major device number 236
[    5.402] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)
[    6.020] nvidia-uvm: Loaded the UVM driver, major device number 238.
E
printf 'NVIDIA Container Toolkit CLI version 1.18.0\ncommit: 0000000\n' | mk $C/.gpulint-host/commands/nvidia-ctk-version.txt
printf 'cli-version: 1.18.0\nlib-version: 1.18.0\n' | mk $C/.gpulint-host/commands/nvidia-container-cli-version.txt
mk $C/lib/modules/6.8.0-85-generic/modules.dep <<'E'
kernel/fs/ext4/ext4.ko.zst: kernel/fs/jbd2/jbd2.ko.zst
updates/dkms/nvidia.ko.zst:
updates/dkms/nvidia-uvm.ko.zst: updates/dkms/nvidia.ko.zst
updates/dkms/nvidia-modeset.ko.zst: updates/dkms/nvidia.ko.zst
E
mkdir -p $C/var/lib/dkms/nvidia/580.159.04/6.8.0-85-generic/x86_64/module
: > $C/var/lib/dkms/nvidia/580.159.04/6.8.0-85-generic/x86_64/module/nvidia.ko.zst
for b in nvidia-ctk nvidia-container-cli nvidia-container-runtime nvidia-container-runtime-hook dockerd docker containerd; do
  mkdir -p $C/usr/bin; : > $C/usr/bin/$b
done
mk $C/etc/docker/daemon.json <<'E'
{
    "runtimes": {
        "nvidia": {
            "args": [],
            "path": "nvidia-container-runtime"
        }
    },
    "exec-opts": ["native.cgroupdriver=systemd"]
}
E
mk $C/etc/nvidia-container-runtime/config.toml <<'E'
#accept-nvidia-visible-devices-as-volume-mounts = false
disable-require = false

[nvidia-container-cli]
environment = []
ldconfig = "@/sbin/ldconfig.real"
load-kmods = true
#no-cgroups = false

[nvidia-container-runtime]
log-level = "info"
mode = "auto"
runtimes = ["docker-runc", "runc", "crun"]
E
mkdir -p $C/dev/char
ln -s ../nvidia0 $C/dev/char/195:0
ln -s ../nvidiactl $C/dev/char/195:255
ln -s ../nvidia-uvm $C/dev/char/238:0
ln -s ../nvidia-uvm-tools $C/dev/char/238:1
printf 'include /etc/ld.so.conf.d/*.conf\n' | mk $C/etc/ld.so.conf
printf '/usr/local/cuda-13.0/targets/x86_64-linux/lib\n' | mk $C/etc/ld.so.conf.d/988_cuda-13.conf
printf '/usr/local/nvidia/lib\n/usr/local/nvidia/lib64\n' | mk $C/etc/ld.so.conf.d/nvidia.conf

# --- api-mismatch: libraries upgraded to 580.105.08, kernel module still 580.159.04 ---
A=$(variant api-mismatch)
mkdir -p $A/usr/local/nvidia/lib64
cat > $A/.gpulint-remove <<'E'
usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04
usr/local/nvidia/lib64/libcuda.so.580.159.04
E
: > $A/usr/local/nvidia/lib64/libnvidia-ml.so.580.105.08
: > $A/usr/local/nvidia/lib64/libcuda.so.580.105.08
ln -sf libnvidia-ml.so.580.105.08 $A/usr/local/nvidia/lib64/libnvidia-ml.so.1
ln -sf libcuda.so.580.105.08 $A/usr/local/nvidia/lib64/libcuda.so.1
for f in nvidia-smi--query-gpu.csv nvidia-smi-q.xml nvidia-smi-q.txt nvidia-smi-L.txt nvidia-smi.txt; do
  printf 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.105\n' | mk $A/.gpulint-host/commands/$f
  echo 18 > $A/.gpulint-host/commands/$f.rc
done

# --- nouveau-loaded: nouveau bound the GPU, nvidia never loaded ---
N=$(variant nouveau-loaded)
mk $N/proc/modules <<'E'
nouveau 3096576 0 - Live 0x0000000000000000
drm_ttm_helper 16384 1 nouveau, Live 0x0000000000000000
ext4 1081344 1 - Live 0x0000000000000000
E
cat > $N/.gpulint-remove <<'E'
etc/modprobe.d/blacklist-nouveau.conf
proc/driver/nvidia
.gpulint-host/dev-nvidia.txt
E
for f in nvidia-smi--query-gpu.csv nvidia-smi-q.xml nvidia-smi-q.txt nvidia-smi-L.txt nvidia-smi.txt; do
  printf "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n" | mk $N/.gpulint-host/commands/$f
  echo 9 > $N/.gpulint-host/commands/$f.rc
done
: > $N/.gpulint-host/dev-nvidia.txt

# --- nouveau-blacklist-stale: blacklisted after the initramfs was built, so the boot still
# loaded nouveau (mtimes.txt: git keeps no mtimes); its twin -fixed: initramfs rebuilt, rebooted ---
NB=$(variant nouveau-blacklist-stale)
cp -a $N/. $NB/
grep -v '^etc/modprobe.d/blacklist-nouveau.conf$' $N/.gpulint-remove > $NB/.gpulint-remove
# The blacklist and the kernel again, so the overlay read alone shows the cause too.
mk $NB/etc/modprobe.d/blacklist-nouveau.conf < $C/etc/modprobe.d/blacklist-nouveau.conf
mk $NB/.gpulint-host/commands/uname-r.txt < $C/.gpulint-host/commands/uname-r.txt
mkdir -p $NB/boot; : > $NB/boot/initrd.img-6.8.0-85-generic
printf 'cpu  1 0 1 100 0 0 0 0 0 0\nbtime 1796000000\n' | mk $NB/proc/stat
mk $NB/.gpulint-host/mtimes.txt <<'E'
1796100000 /etc/modprobe.d/blacklist-nouveau.conf
1795900000 /boot/initrd.img-6.8.0-85-generic
E
NF=$(variant nouveau-blacklist-stale-fixed)
mk $NF/etc/modprobe.d/blacklist-nouveau.conf < $C/etc/modprobe.d/blacklist-nouveau.conf
mk $NF/.gpulint-host/commands/uname-r.txt < $C/.gpulint-host/commands/uname-r.txt
mkdir -p $NF/boot; : > $NF/boot/initrd.img-6.8.0-85-generic
printf 'cpu  1 0 1 100 0 0 0 0 0 0\nbtime 1796250000\n' | mk $NF/proc/stat
mk $NF/.gpulint-host/mtimes.txt <<'E'
1796100000 /etc/modprobe.d/blacklist-nouveau.conf
1796200000 /boot/initrd.img-6.8.0-85-generic
E

# --- no-uvm: nvidia loaded, nvidia_uvm not; no /dev/nvidia-uvm* ---
U=$(variant no-uvm)
mk $U/proc/modules <<'E'
nvidia_drm 135168 0 - Live 0x0000000000000000 (OE)
nvidia_modeset 1638400 1 nvidia_drm, Live 0x0000000000000000 (OE)
nvidia 104071168 1 nvidia_modeset, Live 0x0000000000000000 (OE)
E
grep -v uvm h200/.gpulint-host/dev-nvidia.txt | mk $U/.gpulint-host/dev-nvidia.txt

# --- mig-on: MIG enabled, no instances created ---
M=$(variant mig-on)
sed 's/Disabled, Enabled$/Enabled, Enabled/' $H/nvidia-smi--query-gpu.csv | mk $M/.gpulint-host/commands/nvidia-smi--query-gpu.csv
sed 's|<current_mig>Disabled</current_mig>|<current_mig>Enabled</current_mig>|; s|<pending_mig>Disabled</pending_mig>|<pending_mig>Enabled</pending_mig>|' $H/nvidia-smi-q.xml | mk $M/.gpulint-host/commands/nvidia-smi-q.xml

# --- mig-instances: MIG enabled with two instances (on top of mig-on) ---
MI=$(variant mig-instances)
{ cat $H/nvidia-smi-L.txt; printf '  MIG 3g.71gb     Device  0: (UUID: MIG-5c89e0a2-1111-5b0e-8d1c-000000000001)\n  MIG 3g.71gb     Device  1: (UUID: MIG-5c89e0a2-2222-5b0e-8d1c-000000000002)\n'; } | mk $MI/.gpulint-host/commands/nvidia-smi-L.txt

# --- old-driver: driver 535.104.05 (CUDA 12.2) with the CUDA 13.0 toolkit and torch cu130 ---
O=$(variant old-driver)
for f in nvidia-smi--query-gpu.csv nvidia-smi-q.xml nvidia-smi-q.txt nvidia-smi.txt; do
  sed 's/580\.159\.04/535.104.05/g; s|<cuda_version>13.0</cuda_version>|<cuda_version>12.2</cuda_version>|; s/CUDA Version: 13.0/CUDA Version: 12.2/; s/^CUDA Version\( *\): 13.0/CUDA Version\1: 12.2/' $H/$f | mk $O/.gpulint-host/commands/$f
done
sed 's/580\.159\.04/535.104.05/g' h200/proc/driver/nvidia/version | mk $O/proc/driver/nvidia/version
mkdir -p $O/usr/local/nvidia/lib64
cat > $O/.gpulint-remove <<'E'
usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04
usr/local/nvidia/lib64/libcuda.so.580.159.04
usr/local/nvidia/lib64/libnvidia-ptxjitcompiler.so.580.159.04
E
: > $O/usr/local/nvidia/lib64/libnvidia-ml.so.535.104.05
: > $O/usr/local/nvidia/lib64/libcuda.so.535.104.05

# --- lib-only-old-driver: old-driver's libraries (535.104.05), but no nvidia-smi and no
# /proc/driver/nvidia/version (unreadable): only libnvidia-ml.so.<version> names the driver ---
LO=$(variant lib-only-old-driver)
mkdir -p $LO/usr/local/nvidia/lib64
cat > $LO/.gpulint-remove <<'E'
usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04
usr/local/nvidia/lib64/libcuda.so.580.159.04
usr/local/nvidia/lib64/libnvidia-ptxjitcompiler.so.580.159.04
proc/driver/nvidia/version
.gpulint-host/commands/nvidia-smi--query-gpu.csv
.gpulint-host/commands/nvidia-smi-q.xml
.gpulint-host/commands/nvidia-smi-q.txt
.gpulint-host/commands/nvidia-smi-L.txt
.gpulint-host/commands/nvidia-smi.txt
E
: > $LO/usr/local/nvidia/lib64/libnvidia-ml.so.535.104.05
: > $LO/usr/local/nvidia/lib64/libcuda.so.535.104.05
# headers DIR KERNEL: the kernel's headers installed, linked from its module tree as packages do.
headers() { : | mk $1/usr/src/linux-headers-$2/Makefile; ln -s /usr/src/linux-headers-$2 $1/lib/modules/$2/build; }

# --- other-kernel: booted 6.8.0-90, the module only built for 6.8.0-85 ---
K=$(variant other-kernel)
printf '6.8.0-90-generic\n' | mk $K/.gpulint-host/commands/uname-r.txt
printf 'kernel/fs/ext4/ext4.ko.zst: kernel/fs/jbd2/jbd2.ko.zst\n' | mk $K/lib/modules/6.8.0-90-generic/modules.dep
headers $K 6.8.0-90-generic
printf 'ext4 1081344 1 - Live 0x0000000000000000\n' | mk $K/proc/modules
# Rebooted without the module: nothing created /dev/nvidia* (dev is a fresh tmpfs).
: > $K/.gpulint-host/dev-nvidia.txt
cat > $K/.gpulint-remove <<'E'
proc/driver/nvidia
E
for f in nvidia-smi--query-gpu.csv nvidia-smi-q.xml nvidia-smi-q.txt nvidia-smi-L.txt nvidia-smi.txt; do
  printf "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n" | mk $K/.gpulint-host/commands/$f
  echo 9 > $K/.gpulint-host/commands/$f.rc
done

# --- newer-kernel: running 6.8.0-85 fine, 6.8.0-90 installed without the module ---
NK=$(variant newer-kernel)
printf 'kernel/fs/ext4/ext4.ko.zst: kernel/fs/jbd2/jbd2.ko.zst\n' | mk $NK/lib/modules/6.8.0-90-generic/modules.dep
# Headers of 6.8.0-90 installed (DKMS could build, it just has not).
headers $NK 6.8.0-90-generic

# --- dkms-no-headers: 6.8.0-90 installed without its headers: DKMS cannot build, the next boot
# has no driver; twin -fixed: headers installed, module built ---
NH=$(variant dkms-no-headers)
printf 'kernel/fs/ext4/ext4.ko.zst: kernel/fs/jbd2/jbd2.ko.zst\n' | mk $NH/lib/modules/6.8.0-90-generic/modules.dep
: | mk $NH/boot/vmlinuz-6.8.0-90-generic
# The running kernel and its module again, so the overlay read alone shows the cause too.
mk $NH/.gpulint-host/commands/uname-r.txt < $C/.gpulint-host/commands/uname-r.txt
mk $NH/lib/modules/6.8.0-85-generic/modules.dep < $C/lib/modules/6.8.0-85-generic/modules.dep
mk $NH/proc/modules < $C/proc/modules
NHF=$(variant dkms-no-headers-fixed)
cp -a $NH/. $NHF/
headers $NHF 6.8.0-90-generic
printf 'updates/dkms/nvidia.ko.zst:\n' >> $NHF/lib/modules/6.8.0-90-generic/modules.dep
mkdir -p $NHF/var/lib/dkms/nvidia/580.159.04/6.8.0-90-generic/x86_64/module
: > $NHF/var/lib/dkms/nvidia/580.159.04/6.8.0-90-generic/x86_64/module/nvidia.ko.zst

# --- dkms-build-failed: headers there, but DKMS's build for 6.8.0-90 failed (make.log); twin
# -fixed: the build succeeded ---
NE=$(variant dkms-build-failed)
cp -a $NH/. $NE/
headers $NE 6.8.0-90-generic
mk $NE/var/lib/dkms/nvidia/580.159.04/build/make.log <<'E'
DKMS make.log for nvidia-580.159.04 for kernel 6.8.0-90-generic (x86_64)
Wed Dec  2 09:14:03 UTC 2026
make[1]: Entering directory '/usr/src/linux-headers-6.8.0-90-generic'
warning: the compiler differs from the one used to build the kernel
  The kernel was built by: x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0
  You are using:           cc (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0
cc: error: unrecognized command-line option '-fmin-function-alignment=16'
make[3]: *** [scripts/Makefile.build:243: /var/lib/dkms/nvidia/580.159.04/build/nvidia/nv.o] Error 1
make[1]: Leaving directory '/usr/src/linux-headers-6.8.0-90-generic'
E
NEF=$(variant dkms-build-failed-fixed)
cp -a $NHF/. $NEF/
mk $NEF/var/lib/dkms/nvidia/580.159.04/build/make.log <<'E'
DKMS make.log for nvidia-580.159.04 for kernel 6.8.0-90-generic (x86_64)
Wed Dec  2 09:40:11 UTC 2026
make[1]: Entering directory '/usr/src/linux-headers-6.8.0-90-generic'
  LD [M]  /var/lib/dkms/nvidia/580.159.04/build/nvidia.ko
make[1]: Leaving directory '/usr/src/linux-headers-6.8.0-90-generic'
E

# --- driver-mixed: the .run installer's driver under packages (nvidia-driver-580 + DKMS):
# two nvidia.ko for the running kernel; twin -fixed: the .run install removed ---
dpkg_driver() { mk $1/var/lib/dpkg/status <<'E'
Package: nvidia-driver-580
Status: install ok installed
Architecture: amd64
Version: 580.159.04-0ubuntu1

Package: nvidia-dkms-580
Status: install ok installed
Architecture: amd64
Version: 580.159.04-0ubuntu1
E
}
DM=$(variant driver-mixed)
dpkg_driver $DM
: | mk $DM/usr/bin/nvidia-uninstall
mk $DM/var/log/nvidia-installer.log <<'E'
nvidia-installer log file '/var/log/nvidia-installer.log'
creation time: Mon Nov  2 10:12:40 2026
installer version: 580.95.05
-> Installing the kernel module into /lib/modules/6.8.0-85-generic/kernel/drivers/video
E
: | mk $DM/lib/modules/6.8.0-85-generic/kernel/drivers/video/nvidia.ko
# The running kernel and the DKMS module again, so the overlay read alone shows the cause too.
mk $DM/.gpulint-host/commands/uname-r.txt < $C/.gpulint-host/commands/uname-r.txt
mk $DM/lib/modules/6.8.0-85-generic/modules.dep < $C/lib/modules/6.8.0-85-generic/modules.dep
mk $DM/proc/modules < $C/proc/modules
DMF=$(variant driver-mixed-fixed)
dpkg_driver $DMF
mk $DMF/.gpulint-host/commands/uname-r.txt < $C/.gpulint-host/commands/uname-r.txt

# --- dev-perm: nodes 0660 root:video, user not in video ---
D=$(variant dev-perm)
sed 's/^crw-rw-rw- 1 root root/crw-rw---- 1 root video/' h200/.gpulint-host/dev-nvidia.txt | mk $D/.gpulint-host/dev-nvidia.txt
printf 'uid=1000(alice) gid=1000(alice) groups=1000(alice),27(sudo)\n' | mk $D/.gpulint-host/commands/id.txt

# --- nvml-cgroup: systemd cgroups, legacy runtime, no /dev/char links, no-cgroups = true ---
G=$(variant nvml-cgroup)
mkdir -p $G/dev/char
printf 'dev/char\n' > $G/.gpulint-remove
: > $G/dev/char/.keep
sed 's/^#no-cgroups = false/no-cgroups = true/; s/^mode = "auto"/mode = "legacy"/' $C/etc/nvidia-container-runtime/config.toml | mk $G/etc/nvidia-container-runtime/config.toml

# --- no-ctk: Docker installed, NVIDIA Container Toolkit not ---
T=$(variant no-ctk)
mkdir -p $T
cat > $T/.gpulint-remove <<'E'
usr/bin/nvidia-ctk
usr/bin/nvidia-container-cli
usr/bin/nvidia-container-runtime
usr/bin/nvidia-container-runtime-hook
.gpulint-host/commands/nvidia-ctk-version.txt
.gpulint-host/commands/nvidia-container-cli-version.txt
E

# --- gpu-err: ERR! in nvidia-smi, Xid 79 in the kernel log, pending row remap ---
E=$(variant gpu-err)
sed 's/|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                    0 |/|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                 ERR! |/' $H/nvidia-smi.txt | mk $E/.gpulint-host/commands/nvidia-smi.txt
sed 's|<remapped_row_pending>No</remapped_row_pending>|<remapped_row_pending>Yes</remapped_row_pending>|' $H/nvidia-smi-q.xml | mk $E/.gpulint-host/commands/nvidia-smi-q.xml
{ cat $C/.gpulint-host/commands/dmesg.txt; printf '[81234.567] NVRM: Xid (PCI:0000:00:06.0): 79, pid=0, name=, GPU has fallen off the bus.\n'; } | mk $E/.gpulint-host/commands/dmesg.txt

# --- xid-fatal: a double-bit ECC error (Xid 48) seen only in the kernel log: an error naming GPU 0 ---
XF=$(variant xid-fatal)
{ cat $C/.gpulint-host/commands/dmesg.txt; printf '[91234.001] NVRM: Xid (PCI:0000:00:06): 48, pid=4121, name=python3, Ch 00000008, DBE (double bit error) ECC error\n'; } | mk $XF/.gpulint-host/commands/dmesg.txt
# --- xid-app: the application's own faults (Xid 13, 31): info, the GPU stays usable ---
XA=$(variant xid-app)
{ cat $C/.gpulint-host/commands/dmesg.txt; printf '[91234.002] NVRM: Xid (PCI:0000:00:06): 31, pid=4121, name=python3, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n[91234.003] NVRM: Xid (PCI:0000:00:06): 13, pid=4121, name=python3, Graphics Exception: ESR 0x405840=0x0 0x405844=0x0\n'; } | mk $XA/.gpulint-host/commands/dmesg.txt

# --- persistence-off ---
P=$(variant persistence-off)
sed 's/143771 MiB, Enabled,/143771 MiB, Disabled,/' $H/nvidia-smi--query-gpu.csv | mk $P/.gpulint-host/commands/nvidia-smi--query-gpu.csv
printf 'systemd\ndockerd\nbash\n' | mk $P/.gpulint-host/commands/ps-comm.txt

# --- ld-conflict: a CUDA 12.4 toolkit whose ld.so.conf.d entry sorts first ---
L=$(variant ld-conflict)
printf '/usr/local/cuda-12.4/targets/x86_64-linux/lib\n' | mk $L/etc/ld.so.conf.d/000_cuda-12-4.conf
printf '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "12.4.1"\n   }\n}\n' | mk $L/usr/local/cuda-12.4/version.json

# --- debian-toolkit: Debian's nvidia-cuda-toolkit 12.4 (no version file; nvcc's banner and dpkg say it) ---
D=$(variant debian-toolkit)
printf '#!/bin/sh\nexec /usr/lib/nvidia-cuda-toolkit/bin/nvcc "$@"\n' | mk $D/usr/bin/nvcc
# Synthetic stand-in for the real nvcc ELF: only the banner string matters.
printf '\177ELF\0\0\0\0Cuda compilation tools, release 12.4, V12.4.131\0Build cuda_12.4.r12.4\0' | mk $D/usr/lib/nvidia-cuda-toolkit/bin/nvcc
: | mk $D/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc
mk $D/var/lib/dpkg/status <<'E'
Package: nvidia-cuda-toolkit
Status: install ok installed
Priority: optional
Architecture: amd64
Version: 12.4.131~12.4.1-2
Description: NVIDIA CUDA development toolkit

Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.41-12
E

# --- pci-extra: two NVIDIA GPUs on the bus, the driver sees one ---
X=$(variant pci-extra)
printf '0x10de\n' | mk $X/sys/bus/pci/devices/0000:00:07.0/vendor
printf '0x030200\n' | mk $X/sys/bus/pci/devices/0000:00:07.0/class
printf '0x2335\n' | mk $X/sys/bus/pci/devices/0000:00:07.0/device

# --- why the driver does not see the second GPU (0000:00:07.0, on top of pci-extra's bus) ---
# Each is pci-extra's second GPU plus what the kernel log / sysfs / modprobe.d state.
pci_second() { printf '0x10de\n' | mk $1/sys/bus/pci/devices/0000:00:07.0/vendor; printf '0x030200\n' | mk $1/sys/bus/pci/devices/0000:00:07.0/class; printf "$2\n" | mk $1/sys/bus/pci/devices/0000:00:07.0/device; }
# gpu-unsupported: the 580.159.04 release does not know the device (message of osinit.c).
GU=$(variant gpu-unsupported)
pci_second $GU 0x3182
{ cat $C/.gpulint-host/commands/dmesg.txt; printf "[    5.480] NVRM: The NVIDIA GPU 0000:00:07.0 (PCI ID: 10de:3182)\n[    5.480] NVRM: installed in this system is not supported by the\n[    5.480] NVRM: NVIDIA 580.159.04 driver release.\n[    5.480] NVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'\n[    5.480] NVRM: in this release's README, available on the operating system\n[    5.480] NVRM: specific graphics driver download page at www.nvidia.com.\n[    5.481] nvidia 0000:00:07.0: probe with driver nvidia failed with error -1\n"; } | mk $GU/.gpulint-host/commands/dmesg.txt
# gpu-newer-than-driver: an RTX 5090 (10de:2b85) on the bus and no kernel-log line about it;
# layered on old-driver (535.104.05) the tables say the driver predates it, on the capture's
# own 580.159.04 (its fixed twin) they do not.
GN=$(variant gpu-newer-than-driver)
pci_second $GN 0x2b85
# rm-init-failed: RmInitAdapter failed for the second GPU.
RI=$(variant rm-init-failed)
pci_second $RI 0x2335
{ cat $C/.gpulint-host/commands/dmesg.txt; printf '[    9.112] NVRM: GPU 0000:00:07.0: RmInitAdapter failed! (0x22:0x56:884)\n[    9.113] NVRM: GPU 0000:00:07.0: rm_init_adapter failed, device minor number 1\n'; } | mk $RI/.gpulint-host/commands/dmesg.txt
# bar-unassigned: the firmware left no MMIO window for its 256 GB BAR1.
BA=$(variant bar-unassigned)
pci_second $BA 0x2335
{ printf '[    0.912] pci 0000:00:07.0: BAR 1: no space for [mem size 0x4000000000 64bit pref]\n[    0.912] pci 0000:00:07.0: BAR 1: failed to assign [mem size 0x4000000000 64bit pref]\n'; cat $C/.gpulint-host/commands/dmesg.txt; printf '[    5.470] NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n[    5.470] NVRM: BAR1 is 0M @ 0x0 (PCI:0000:00:07.0)\n'; } | mk $BA/.gpulint-host/commands/dmesg.txt
# link-degraded: the second GPU's link trained at x4 of x16 with fatal AER errors (sysfs).
LD=$(variant link-degraded)
pci_second $LD 0x2335
printf 'Undefined 0\nDLP 2\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nTOTAL_ERR_FATAL 3\n' | mk $LD/sys/bus/pci/devices/0000:00:07.0/aer_dev_fatal
printf 'RxErr 0\nBadTLP 0\nTOTAL_ERR_COR 0\n' | mk $LD/sys/bus/pci/devices/0000:00:07.0/aer_dev_correctable
printf '4\n' | mk $LD/sys/bus/pci/devices/0000:00:07.0/current_link_width
printf '16\n' | mk $LD/sys/bus/pci/devices/0000:00:07.0/max_link_width
printf '32.0 GT/s PCIe\n' | mk $LD/sys/bus/pci/devices/0000:00:07.0/current_link_speed
printf '32.0 GT/s PCIe\n' | mk $LD/sys/bus/pci/devices/0000:00:07.0/max_link_speed
# gpu-excluded: excluded on purpose by NVreg_ExcludedGpus (listed in /proc, not usable).
GX=$(variant gpu-excluded)
pci_second $GX 0x2335
sed 's/00:06.0/00:07.0/; s/^GPU Excluded:.*/GPU Excluded:\t Yes/; s/GPU-1e22f56e-bc1a-5762-a390-38b2e823715b/GPU-7a41e0c2-55d1-4c3e-9b1f-0a2b3c4d5e6f/; s/^Device Minor:.*/Device Minor: \t 1/' h200/proc/driver/nvidia/gpus/0000:00:06.0/information | mk $GX/proc/driver/nvidia/gpus/0000:00:07.0/information
printf 'options nvidia NVreg_ExcludedGpus=GPU-7a41e0c2-55d1-4c3e-9b1f-0a2b3c4d5e6f\n' | mk $GX/etc/modprobe.d/nvidia-exclude.conf
{ cat $C/.gpulint-host/commands/dmesg.txt; printf '[    5.490] nvidia 0000:00:07.0: NVRM: Excluded GPU GPU-7a41e0c2-55d1-4c3e-9b1f-0a2b3c4d5e6f successfully\n'; } | mk $GX/.gpulint-host/commands/dmesg.txt
# vfio-bound: the second GPU is bound to vfio-pci (reserved for passthrough).
VB=$(variant vfio-bound)
pci_second $VB 0x2335
ln -s ../../../bus/pci/drivers/vfio-pci $VB/sys/bus/pci/devices/0000:00:07.0/driver

# --- bar-listed: the driver lists GPU 0, but the firmware left its BAR1 unassigned (kernel log,
# sysfs resource, nvidia-smi -q BAR1 Total 0 MiB) ---
BL=$(variant bar-listed)
{ printf "[    0.912] pci 0000:00:06.0: BAR 1 [mem size 0x4000000000 64bit pref]: can't assign; no space\n"; cat $C/.gpulint-host/commands/dmesg.txt; } | mk $BL/.gpulint-host/commands/dmesg.txt
printf '0x00000000fd000000 0x00000000fdffffff 0x0000000000040200\n0x0000000000000000 0x0000000000000000 0x0000000000000000\n' | mk $BL/sys/bus/pci/devices/0000:00:06.0/resource
awk '/BAR1 Memory Usage/{b=1} b&&/Total/{sub(/262144 MiB/,"0 MiB");b=0} {print}' $H/nvidia-smi-q.txt | mk $BL/.gpulint-host/commands/nvidia-smi-q.txt

# --- gpu-gone: the driver is installed, but the only GPU left the bus: the kernel log says
# the slot's link went down (nvidia-smi finds no device, sysfs no NVIDIA device) ---
GG=$(variant gpu-gone)
cat > $GG/.gpulint-remove <<'E'
sys/bus/pci/devices/0000:00:06.0
proc/driver/nvidia/gpus
E
for f in nvidia-smi--query-gpu.csv nvidia-smi-q.xml nvidia-smi-q.txt nvidia-smi-L.txt nvidia-smi.txt; do
  printf 'No devices were found\n' | mk $GG/.gpulint-host/commands/$f
  echo 6 > $GG/.gpulint-host/commands/$f.rc
done
{ cat $C/.gpulint-host/commands/dmesg.txt; printf '[ 3605.112] pcieport 0000:00:03.0: pciehp: Slot(6): Link Down\n[ 3605.113] pcieport 0000:00:03.0: pciehp: Slot(6): Card not present\n'; } | mk $GG/.gpulint-host/commands/dmesg.txt

# --- open-refused: the open module refuses a pre-Turing GPU (kernel log) ---
R=$(variant open-refused)
{ cat $C/.gpulint-host/commands/dmesg.txt; printf '[    5.500] NVRM: The NVIDIA GPU 0000:00:07.0 (PCI ID: 10de:1db4)\n[    5.500] NVRM: installed in this system is not supported by open nvidia.ko because it does not include the required GPU System Processor (GSP).\n'; } | mk $R/.gpulint-host/commands/dmesg.txt

# --- torch-cpu: a CPU-only torch in the venv ---
TC=$(variant torch-cpu)
sed "s/__version__ = '2.11.0+cu130'/__version__ = '2.11.0+cpu'/; s/cuda: Optional\[str\] = '13.0'/cuda: Optional[str] = None/" h200/$SITE/version.py | mk $TC/$SITE/version.py

# --- torch-old-arch / torch-ptx-jit / torch-ptx-too-new: torch cu130 whose libtorch_cuda.so
# is a real nvcc-built ELF with other device code (the kernel of testdata/fatbin/):
#   old-arch:    SASS sm_75 only                 -> no kernel image for the H200 (sm_90);
#                run.txt: "209 no kernel image is available" on the H200
#   ptx-jit:     PTX compute_75 only (nvcc 13.0, PTX ISA 9.0) -> the 13.0 driver JIT-compiles it;
#                run.txt: "ok" on the H200
#   ptx-too-new: PTX compute_90 only (nvcc 13.5, PTX ISA 9.5) -> the 13.0 driver cannot JIT it
torch_with() { mkdir -p "$2/$SITE/lib"; cp h200/$SITE/version.py "$2/$SITE/version.py"; cp "$1" "$2/$SITE/lib/libtorch_cuda.so"; }
torch_with $FB/cuda-binaries/v02_sm75_only/libv02_sm75_only.so "$(variant torch-old-arch)"
torch_with $FB/cuda-binaries/v03_ptx75_only/libv03_ptx75_only.so "$(variant torch-ptx-jit)"
torch_with $FB/nvcc-13.5/libv20_ptx90_nvcc135.so "$(variant torch-ptx-too-new)"

# --- gpu-hot / power-brake: the real XML report with a slowdown active (nvidia-smi -q -x and
# -q text of the same state) ---
HT=$(variant gpu-hot)
sed 's|<clocks_event_reason_hw_slowdown>Not Active<|<clocks_event_reason_hw_slowdown>Active<|; s|<clocks_event_reason_hw_thermal_slowdown>Not Active<|<clocks_event_reason_hw_thermal_slowdown>Active<|; s|<gpu_temp>40 C</gpu_temp>|<gpu_temp>91 C</gpu_temp>|; s|<gpu_temp_tlimit>47 C</gpu_temp_tlimit>|<gpu_temp_tlimit>-4 C</gpu_temp_tlimit>|' $H/nvidia-smi-q.xml | mk $HT/.gpulint-host/commands/nvidia-smi-q.xml
PB=$(variant power-brake)
sed 's|<clocks_event_reason_hw_slowdown>Not Active<|<clocks_event_reason_hw_slowdown>Active<|; s|<clocks_event_reason_hw_power_brake_slowdown>Not Active<|<clocks_event_reason_hw_power_brake_slowdown>Active<|' $H/nvidia-smi-q.xml | mk $PB/.gpulint-host/commands/nvidia-smi-q.xml

# --- cvd-missing / cvd-empty / cvd-order: CUDA_VISIBLE_DEVICES in the invoking environment ---
with_env() { { cat h200/.gpulint-host/env.txt; printf '%s\n' "$2"; } | mk $1/.gpulint-host/env.txt; }
with_env "$(variant cvd-missing)" 'CUDA_VISIBLE_DEVICES=1'
with_env "$(variant cvd-empty)" 'CUDA_VISIBLE_DEVICES='
# cvd-order: an L40S at 00:05.0 (nvidia-smi GPU 0, PCI order) next to the H200 (GPU 1); CUDA's
# default FASTEST_FIRST order may put the H200 first, so index 1 is ambiguous.
CO=$(variant cvd-order)
with_env $CO 'CUDA_VISIBLE_DEVICES=1'
{ head -1 $H/nvidia-smi--query-gpu.csv; printf '0, NVIDIA L40S, GPU-0b5e3c1d-9a7f-4e2b-8c6d-112233445566, 00000000:00:05.0, 580.159.04, 8.9, 46068 MiB, Enabled, [N/A], Enabled\n'; tail -n +2 $H/nvidia-smi--query-gpu.csv | sed 's/^0, /1, /'; } | mk $CO/.gpulint-host/commands/nvidia-smi--query-gpu.csv
{ printf 'GPU 0: NVIDIA L40S (UUID: GPU-0b5e3c1d-9a7f-4e2b-8c6d-112233445566)\n'; sed 's/^GPU 0:/GPU 1:/' $H/nvidia-smi-L.txt; } | mk $CO/.gpulint-host/commands/nvidia-smi-L.txt
{ printf 'crw-rw-rw- 1 root root 195,   1 Nov 30 14:41 /dev/nvidia1\n'; cat h200/.gpulint-host/dev-nvidia.txt; } | mk $CO/.gpulint-host/dev-nvidia.txt
printf '0x10de\n' | mk $CO/sys/bus/pci/devices/0000:00:05.0/vendor
printf '0x030200\n' | mk $CO/sys/bus/pci/devices/0000:00:05.0/class
printf '0x26b9\n' | mk $CO/sys/bus/pci/devices/0000:00:05.0/device
printf '.gpulint-host/commands/nvidia-smi-q.xml\n.gpulint-host/commands/nvidia-smi-q.txt\n' > $CO/.gpulint-remove

# --- gpu-container: inside a docker container started with `--gpus all` (healthy) ---
# What a container sees: the host's /proc and /sys, no /lib/modules, no engine configuration,
# root, a kernel log it may not read, and the devices and driver libraries the toolkit mounted.
GC=$(variant gpu-container)
: > $GC/.dockerenv
printf '0::/\n' | mk $GC/proc/1/cgroup
cat > $GC/.gpulint-remove <<'E'
lib/modules
var/lib/dkms
etc/docker
etc/nvidia-container-runtime
etc/modprobe.d
usr/bin/docker
usr/bin/dockerd
usr/bin/containerd
usr/bin/nvidia-ctk
usr/bin/nvidia-container-cli
usr/bin/nvidia-container-runtime
usr/bin/nvidia-container-runtime-hook
.gpulint-host/commands/nvidia-ctk-version.txt
.gpulint-host/commands/nvidia-container-cli-version.txt
.gpulint-host/commands/ps-comm.txt
E
printf 'uid=0(root) gid=0(root) groups=0(root)\n' | mk $GC/.gpulint-host/commands/id.txt
printf 'dmesg: read kernel buffer failed: Operation not permitted\n' | mk $GC/.gpulint-host/commands/dmesg.txt.stderr
: > $GC/.gpulint-host/commands/dmesg.txt
echo 1 > $GC/.gpulint-host/commands/dmesg.txt.rc
{ cat h200/.gpulint-host/env.txt 2>/dev/null || true; printf 'NVIDIA_VISIBLE_DEVICES=all\nNVIDIA_DRIVER_CAPABILITIES=compute,utility\n'; } | mk $GC/.gpulint-host/env.txt

# --- container-no-gpus: the same container started without `--gpus` ---
CN=$(variant container-no-gpus)
cp -a $GC/. $CN/
grep -v '^NVIDIA_VISIBLE_DEVICES=\|^NVIDIA_DRIVER_CAPABILITIES=' $GC/.gpulint-host/env.txt | mk $CN/.gpulint-host/env.txt
cat >> $CN/.gpulint-remove <<'E'
usr/local/nvidia
.gpulint-host/commands/nvidia-smi--query-gpu.csv
.gpulint-host/commands/nvidia-smi-q.xml
.gpulint-host/commands/nvidia-smi-q.txt
.gpulint-host/commands/nvidia-smi-L.txt
.gpulint-host/commands/nvidia-smi.txt
E
: > $CN/.gpulint-host/dev-nvidia.txt

# --- wsl2: a working WSL2 GPU host: the Windows driver (580.159.04's CUDA 13.0) served through
# /dev/dxg and /usr/lib/wsl/lib, no Linux nvidia module, no /proc/driver/nvidia, no /dev/nvidia*,
# no NVIDIA device in the VM's PCI view. (Layout of the CUDA on WSL user guide.)
W=$(variant wsl2)
cat > $W/.gpulint-remove <<'E'
proc/driver/nvidia
proc/modules
lib/modules
var/lib/dkms
usr/local/nvidia
sys/bus/pci/devices/0000:00:06.0
etc/ld.so.conf.d/nvidia.conf
dev/char
E
mkdir -p $W/dev $W/usr/lib/wsl/lib
: > $W/dev/dxg
for f in libcuda.so libcuda.so.1 libcuda.so.1.1 libcudadebugger.so.1 libnvidia-ml.so.1 libnvidia-ptxjitcompiler.so.1 libdxcore.so libd3d12.so nvidia-smi; do
  : > $W/usr/lib/wsl/lib/$f
done
printf '# This file was automatically generated by WSL.\n/usr/lib/wsl/lib\n' | mk $W/etc/ld.so.conf.d/ld.wsl.conf
printf 'Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP Tue Nov 5 00:21:55 UTC 2024\n' | mk $W/proc/version
printf '5.15.167.4-microsoft-standard-WSL2\n' | mk $W/.gpulint-host/commands/uname-r.txt
printf '[    0.000000] Linux version 5.15.167.4-microsoft-standard-WSL2\n[    0.412000] hv_vmbus: registering driver dxgkrnl\n' | mk $W/.gpulint-host/commands/dmesg.txt
: > $W/.gpulint-host/dev-nvidia.txt

# --- torch-cu124-ldpath / torch-conda-ldpath: torch 2.6.0+cu124 from pip (its CUDA libraries
# in site-packages/nvidia/*/lib, empty stand-ins named as the wheels name them) with an older
# CUDA 12.1 libnvJitLink/libcusparse first on LD_LIBRARY_PATH: a toolkit's lib64, or a conda
# environment's lib (pytorch/pytorch#111469) ---
cu124() {  # cu124 SITE-DIR
  sed "s/__version__ = '2.11.0+cu130'/__version__ = '2.6.0+cu124'/; s/cuda: Optional\[str\] = '13.0'/cuda: Optional[str] = '12.4'/" h200/$SITE/version.py | mk $1/torch/version.py
  mkdir -p $1/torch/lib $1/nvidia/nvjitlink/lib $1/nvidia/cusparse/lib $1/nvidia/cublas/lib
  cp h200/$SITE/lib/libtorch_cuda.so $1/torch/lib/libtorch_cuda.so
  : > $1/nvidia/nvjitlink/lib/libnvJitLink.so.12
  : > $1/nvidia/cusparse/lib/libcusparse.so.12
  : > $1/nvidia/cublas/lib/libcublas.so.12
}
cuda121_libs() {  # cuda121_libs DIR
  mkdir -p $1
  : > $1/libnvJitLink.so.12.1.105; ln -s libnvJitLink.so.12.1.105 $1/libnvJitLink.so.12
  : > $1/libcusparse.so.12.1.0.106; ln -s libcusparse.so.12.1.0.106 $1/libcusparse.so.12
}
TL=$(variant torch-cu124-ldpath)
cu124 $TL/opt/torch/.venv/lib/python3.12/site-packages
cuda121_libs $TL/usr/local/cuda-12.1/targets/x86_64-linux/lib
ln -s targets/x86_64-linux/lib $TL/usr/local/cuda-12.1/lib64
printf '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "12.1.1"\n   }\n}\n' | mk $TL/usr/local/cuda-12.1/version.json
{ grep -v '^LD_LIBRARY_PATH=' h200/.gpulint-host/env.txt; printf 'LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64:/usr/local/nvidia/lib64\n'; } | mk $TL/.gpulint-host/env.txt
TCO=$(variant torch-conda-ldpath)
CE=$TCO/opt/conda/envs/ml
cu124 $CE/lib/python3.12/site-packages
cuda121_libs $CE/lib
mkdir -p $CE/bin $CE/conda-meta
: > $CE/bin/python3
printf '{"name": "cuda-nvjitlink", "version": "12.1.105"}\n' | mk $CE/conda-meta/cuda-nvjitlink-12.1.105-0.json
{ grep -v '^LD_LIBRARY_PATH=\|^PATH=' h200/.gpulint-host/env.txt; printf 'PATH=/opt/conda/envs/ml/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nCONDA_PREFIX=/opt/conda/envs/ml\nCONDA_DEFAULT_ENV=ml\nLD_LIBRARY_PATH=/opt/conda/envs/ml/lib:/usr/local/nvidia/lib64\n'; } | mk $TCO/.gpulint-host/env.txt

# --- wsl2-linux-driver: the same WSL2 with a Linux driver installed inside it (the CUDA on WSL
# guide says never to) ---
WL=$(variant wsl2-linux-driver)
cp -a $W/. $WL/
mkdir -p $WL/usr/lib/x86_64-linux-gnu
: > $WL/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
: > $WL/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15

# --- ldpath-profile: the same cu124 torch and CUDA 12.1 toolkit as torch-cu124-ldpath, but the
# invoking environment is clean: /etc/profile.d/cuda.sh (the guides' advice) sets LD_LIBRARY_PATH
# for every later login shell; twin -fixed: the file sets PATH only ---
cuda121_toolkit() {  # cuda121_toolkit ROOT
  cuda121_libs $1/usr/local/cuda-12.1/targets/x86_64-linux/lib
  ln -s targets/x86_64-linux/lib $1/usr/local/cuda-12.1/lib64
  printf '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "12.1.1"\n   }\n}\n' | mk $1/usr/local/cuda-12.1/version.json
}
LP=$(variant ldpath-profile)
cu124 $LP/opt/torch/.venv/lib/python3.12/site-packages
cuda121_toolkit $LP
mk $LP/etc/profile.d/cuda.sh <<'E2'
# CUDA 12.1 toolkit
export PATH=/usr/local/cuda-12.1/bin${PATH:+:${PATH}}
export LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}
E2
LPF=$(variant ldpath-profile-fixed)
cu124 $LPF/opt/torch/.venv/lib/python3.12/site-packages
cuda121_toolkit $LPF
mk $LPF/etc/profile.d/cuda.sh <<'E2'
# CUDA 12.1 toolkit
export PATH=/usr/local/cuda-12.1/bin${PATH:+:${PATH}}
E2

# --- conda-activate-ldpath: a conda environment (not active in the capture) with a pip cu124
# torch and conda's CUDA 12.1 libnvJitLink; its activate.d script puts the environment's lib on
# LD_LIBRARY_PATH at `conda activate`; twin -fixed: the script sets CUDA_HOME only ---
conda_ml() {  # conda_ml ROOT
  mkdir -p $1/opt/conda/conda-meta $1/opt/conda/bin
  : > $1/opt/conda/conda-meta/history
  : > $1/opt/conda/bin/conda
  local ce=$1/opt/conda/envs/ml
  cu124 $ce/lib/python3.12/site-packages
  cuda121_libs $ce/lib
  mkdir -p $ce/bin $ce/conda-meta
  : > $ce/bin/python3
  printf '{"name": "cuda-nvjitlink", "version": "12.1.105"}\n' | mk $ce/conda-meta/cuda-nvjitlink-12.1.105-0.json
}
CA=$(variant conda-activate-ldpath)
conda_ml $CA
mk $CA/opt/conda/envs/ml/etc/conda/activate.d/env_vars.sh <<'E2'
#!/bin/sh
export CUDA_HOME="${CONDA_PREFIX}"
export LD_LIBRARY_PATH="${CONDA_PREFIX}/lib:${LD_LIBRARY_PATH}"
E2
CAF=$(variant conda-activate-ldpath-fixed)
conda_ml $CAF
mk $CAF/opt/conda/envs/ml/etc/conda/activate.d/env_vars.sh <<'E2'
#!/bin/sh
export CUDA_HOME="${CONDA_PREFIX}"
E2

# --- companion-mismatch: torch 2.11.0+cu130 (the capture's) with torchvision 0.25.0+cu128 (the
# torch 2.10 / CUDA 12.8 build) next to it; twin -fixed: torchvision 0.26.0+cu130 ---
tv_version() {  # tv_version SITE-DIR VERSION
  mk $1/torchvision/version.py <<E2
__version__ = '$2'
git_version = '0000000000000000000000000000000000000000'
from torchvision.extension import _check_cuda_version
if _check_cuda_version() > 0:
    cuda = _check_cuda_version()
E2
  mkdir -p $1/torchvision-${2%%+*}.dist-info
  printf 'Metadata-Version: 2.1\nName: torchvision\nVersion: %s\n' "$2" | mk $1/torchvision-${2%%+*}.dist-info/METADATA
}
TVM=$(variant companion-mismatch)
tv_version $TVM/opt/torch/.venv/lib/python3.12/site-packages 0.25.0+cu128
TVF=$(variant companion-mismatch-fixed)
tv_version $TVF/opt/torch/.venv/lib/python3.12/site-packages 0.26.0+cu130

# --- companion-conda: a conda environment (not on PATH) with torch 2.6.0+cu124 and torchaudio
# 2.6.0+cu118 (another CUDA variant, found by its dist-info name only); twin -fixed: cu124 ---
ta_conda() {  # ta_conda ROOT TORCHAUDIO-VERSION
  mkdir -p $1/opt/conda/conda-meta $1/opt/conda/envs/ml/conda-meta $1/opt/conda/envs/ml/bin
  # git keeps no empty directory: conda's own history file marks each prefix.
  : > $1/opt/conda/conda-meta/history
  : > $1/opt/conda/envs/ml/conda-meta/history
  : > $1/opt/conda/envs/ml/bin/python3
  local site=$1/opt/conda/envs/ml/lib/python3.12/site-packages
  sed "s/__version__ = '2.11.0+cu130'/__version__ = '2.6.0+cu124'/; s/cuda: Optional\[str\] = '13.0'/cuda: Optional[str] = '12.4'/" h200/$SITE/version.py | mk $site/torch/version.py
  printf 'Metadata-Version: 2.1\nName: torchaudio\nVersion: %s\n' "$2" | mk $site/torchaudio-$2.dist-info/METADATA
}
ta_conda "$(variant companion-conda)" 2.6.0+cu118
ta_conda "$(variant companion-conda-fixed)" 2.6.0+cu124

# --- topo-cross-socket: four GPUs, two per socket, no NVLink: `nvidia-smi topo -m` (the real
# tab-separated layout) shows SYS between the sockets; twin topo-nvlink: the same GPUs joined
# by NVLink (NV12) ---
TS=$(variant topo-cross-socket)
mk $TS/.gpulint-host/commands/nvidia-smi-topo-m.txt <<'E2'
	GPU0	GPU1	GPU2	GPU3	NIC0	CPU Affinity	NUMA Affinity	GPU NUMA ID
GPU0	 X 	PHB	SYS	SYS	PHB	0-31,64-95	0		N/A
GPU1	PHB	 X 	SYS	SYS	PHB	0-31,64-95	0		N/A
GPU2	SYS	SYS	 X 	PHB	SYS	32-63,96-127	1		N/A
GPU3	SYS	SYS	PHB	 X 	SYS	32-63,96-127	1		N/A
NIC0	PHB	PHB	SYS	SYS	 X 

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0

E2
TN=$(variant topo-nvlink)
sed 's/\tPHB\tSYS\tSYS\tPHB\t/\tNV12\tNV12\tNV12\tPHB\t/; s/^GPU1\tPHB\t X \tSYS\tSYS/GPU1\tNV12\t X \tNV12\tNV12/; s/^GPU2\tSYS\tSYS\t X \tPHB/GPU2\tNV12\tNV12\t X \tNV12/; s/^GPU3\tSYS\tSYS\tPHB\t X /GPU3\tNV12\tNV12\tNV12\t X /' $TS/.gpulint-host/commands/nvidia-smi-topo-m.txt | mk $TN/.gpulint-host/commands/nvidia-smi-topo-m.txt

# --- bar1-small: the H200's BAR1 assigned at 256 MiB (firmware without Above 4G decoding /
# Resizable BAR): nvidia-smi -q / -q -x BAR1 Total 256 MiB, sysfs BAR 1 of 256 MiB; twin -fixed:
# the 256 GiB BAR1 of the capture, and sysfs agreeing ---
B1=$(variant bar1-small)
awk '/BAR1 Memory Usage/{b=1} b&&/Total/{sub(/262144 MiB/,"256 MiB");b=0} b&&/Free/{sub(/262143 MiB/,"255 MiB")} {print}' $H/nvidia-smi-q.txt | mk $B1/.gpulint-host/commands/nvidia-smi-q.txt
awk '/<bar1_memory_usage>/{b=1} b&&/<total>/{sub(/262144 MiB/,"256 MiB")} b&&/<free>/{sub(/262143 MiB/,"255 MiB")} /<\/bar1_memory_usage>/{b=0} {print}' $H/nvidia-smi-q.xml | mk $B1/.gpulint-host/commands/nvidia-smi-q.xml
printf '0x00000000fd000000 0x00000000fdffffff 0x0000000000040200\n0x00000000e0000000 0x00000000efffffff 0x000000000014220c\n' | mk $B1/sys/bus/pci/devices/0000:00:06.0/resource
B1F=$(variant bar1-small-fixed)
printf '0x00000000fd000000 0x00000000fdffffff 0x0000000000040200\n0x0000380000000000 0x0000383fffffffff 0x000000000014220c\n' | mk $B1F/sys/bus/pci/devices/0000:00:06.0/resource

# --- proc-only / xml-only / text-only: what detection does with fewer nvidia-smi outputs ---
printf '.gpulint-host/commands/nvidia-smi--query-gpu.csv\n.gpulint-host/commands/nvidia-smi-q.xml\n.gpulint-host/commands/nvidia-smi-q.txt\n.gpulint-host/commands/nvidia-smi-L.txt\n.gpulint-host/commands/nvidia-smi.txt\n' | mk "$(variant proc-only)/.gpulint-remove"
printf '.gpulint-host/commands/nvidia-smi--query-gpu.csv\n.gpulint-host/commands/nvidia-smi-q.txt\n.gpulint-host/commands/nvidia-smi-L.txt\n' | mk "$(variant xml-only)/.gpulint-remove"
printf '.gpulint-host/commands/nvidia-smi--query-gpu.csv\n.gpulint-host/commands/nvidia-smi-q.xml\n.gpulint-host/commands/nvidia-smi-L.txt\n' | mk "$(variant text-only)/.gpulint-remove"
echo done
