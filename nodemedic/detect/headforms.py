"""The heads tools write before a kernel message, each as its source shows it: the data the
grammar of ``nodemedic.detect.heads`` is tested against (every form before every catalog
example) and the peers' side-by-side run writes its lines in."""

from __future__ import annotations

from typing import NamedTuple


class Form(NamedTuple):
    name: str
    head: str
    """A head of this form as its source shows it; the message follows it."""
    source: str


FORMS = (
    Form("dmesg", "[ 3947.590120] ", "util-linux dmesg(1), default output"),
    Form("dmesg -r", "<4>[ 3947.590120] ", "util-linux dmesg(1) --raw"),
    Form("dmesg -d", "[ 3947.590120 <    0.000041>] ", "util-linux dmesg(1) --show-delta"),
    Form("dmesg -H", "[  +0.000041] ", "util-linux dmesg(1) --human (relative stamps)"),
    Form("dmesg -H, decimal comma", "[  +0,000002] ", "util-linux dmesg(1) --human, LC_NUMERIC"),
    Form("dmesg -H minute", "[Nov22 18:30] ", "util-linux dmesg(1) --human (first of a minute)"),
    Form("dmesg -T", "[Fri Aug 30 11:43:09 2024] ", "leptonai/gpud PR #46, xid/README.md"),
    Form(
        "dmesg -T, another locale",
        "[Ter Set 19 06:01:41 2017] ",
        "lnls-dig/bpm-gw issue #73 (pt_BR: terça-feira, setembro)",
    ),
    Form(
        "dmesg -T, day's padding collapsed",
        "[Mon Feb 2 22:52:45 2026] ",
        "sulao.cn/post/1165 (a dmesg -T paste on a web page)",
    ),
    Form(
        "dmesg -T with host",
        "[Sun Dec  1 14:54:40 2024] ny2g1r12hh2 kernel: ",
        "leptonai/gpud components/accelerator/nvidia/infiniband/kmsg_matcher_test.go",
    ),
    Form(
        "dmesg --decode --time-format=iso",
        "kern  :warn  : 2025-01-02T03:04:05,123456+00:00 ",
        "util-linux dmesg(1) --decode, --time-format iso",
    ),
    Form(
        "caller id", "[ 3947.590120] [T92772] ", "kernel CONFIG_PRINTK_CALLER (lib/Kconfig.debug)"
    ),
    Form(
        "dmesg --decode, two time formats, caller id",
        "kern  :err   : [  +0.001354] [Tue Jan 13 04:33:10 2026] [T88977] ",
        "longhorn/longhorn issue #12470 (dmesg -x with relative and ctime stamps)",
    ),
    Form(
        "elided stamp",
        "[...] ",
        "leptonai/gpud components/accelerator/nvidia/infiniband/kmsg_matcher.go comments",
    ),
    Form(
        "redacted stamp",
        "[xxxxxx] ",
        "zenwen.tw, e1000e-detected-hardware-unit-hang (a dmesg paste)",
    ),
    Form(
        "elided head with its colon",
        "[...]: ",
        "amzn/amzn-drivers issue #277 (a syslog head elided up to its colon)",
    ),
    Form(
        "elided stamp, padded",
        "[    ....    ] ",
        "NVIDIA/open-gpu-kernel-modules issue #120 (a dmesg paste)",
    ),
    Form(
        "console name before the stamp",
        "cloud-hypervisor [  764.649502] ",
        "a cloud-hypervisor guest's serial console as pasted (issue 35's field lines)",
    ),
    Form(
        "console relayed by a program",
        "Feb 16 11:00:22 raspberrypi run1.sh[75558]: UART: [57316.105141] ",
        "chipsalliance/caliptra-sw issue #1392 (a script relaying a serial console to syslog)",
    ),
    Form(
        "serial console capture",
        "00h 02m 10.478s( 227ms): [  131.898167] ",
        "amzn/amzn-drivers issue #162 (a guest's console as captured; the thread names no tool)",
    ),
    Form("/dev/kmsg record", "4,1234,5678901234,-;", "Documentation/ABI/testing/dev-kmsg"),
    Form(
        "syslog",
        "Mar 27 19:52:25 scott-linux-main kernel: ",
        "NVIDIA Developer Forums, 'System keeps crashing and then GPU fans go into overspeed.'",
    ),
    Form(
        "syslog with a dmesg stamp",
        "Nov 22 18:30:01 ip-10-0-1-23 kernel: [ 3947.590120] ",
        "kubernetes/node-problem-detector config/kernel-monitor-filelog.json",
    ),
    Form(
        "syslog, day's padding collapsed",
        "Aug 6 13:25:28 yama kernel: [78351.260203] ",
        "peterkieser.com/?p=439 (a syslog paste on a web page)",
    ),
    Form(
        "syslog, stamp after the tag",
        "2022-11-04T14:09:31 server kernel:[75215.928881] ",
        "raspberrypi/linux issue #5239; syslogd's wall message (chia-plotter issue #535)",
    ),
    Form(
        "grep -n of syslog",
        "1261929:Apr 13 18:52:32 ifserv kernel: ",
        "OpenMandrivaAssociation/distribution issue #1163 (a grep -n of a syslog file)",
    ),
    Form(
        "syslog without host",
        "Mar 29 15:38:59 kernel: ",
        "kubernetes/node-problem-detector pkg/systemlogmonitor/logwatchers/filelog tests",
    ),
    Form("syslog without host or tag", "Mar 29 15:38:59 ", "issue 35's field lines (forum pastes)"),
    Form(
        "syslog with an empty host",
        "Sep  3 10:05:39  [193378.950513] ",
        "intel-wired-lan, 'ixgbe: NETDEV WATCHDOG' report (lore.kernel.org, FA05D61D-...)",
    ),
    Form(
        "syslog without date",
        "ny2g1r12hh2 kernel: ",
        "leptonai/gpud components/accelerator/nvidia/infiniband/kmsg_matcher_test.go",
    ),
    Form(
        "syslog tag alone",
        "kernel: ",
        "NVIDIA/open-gpu-kernel-modules issue #1150 (a grep of syslog)",
    ),
    Form(
        "syslog with facility",
        "Jan  1 01:00:54 fritz kern.err kernel: [    8.940000] ",
        "Freetz-NG/freetz-ng issue #3 (busybox syslogd -S)",
    ),
    Form(
        "logread",
        "Tue Feb  1 19:02:25 2022 kern.warn kernel: [11134.332928] ",
        "openwrt/mt76 issue #646 (OpenWrt logread)",
    ),
    Form(
        "ISO syslog with facility",
        "2016-07-31 16:26:53 +0000 UTC kern.warn kernel: ",
        "issue 35's field lines (Go's time format, logread's facility)",
    ),
    Form(
        "rsyslog file format",
        "2025-08-14T06:30:22.460986+00:00 host-1 kernel: ",
        "rsyslog RSYSLOG_FileFormat template",
    ),
    Form(
        "RFC 5424",
        "<4>1 2026-11-22T18:30:01.123456+00:00 ip-10-0-1-23 kernel - - - ",
        "RFC 5424 section 6; rsyslog RSYSLOG_SyslogProtocol23Format template",
    ),
    Form(
        "RFC 5424, spaced after the priority, with dmesg's stamp",
        "<6> 1 2020-11-20T18:14:19.159536+01:00 LABNBS5B kernel - - - [65818.378296] ",
        "a bonding report on lore.kernel.org netdev (MN2PR03MB4752..., 2020-11)",
    ),
    Form(
        "journalctl short-precise",
        "Nov 22 18:30:01.123456 ip-10-0-1-23 kernel: ",
        "systemd journalctl(1) --output short-precise",
    ),
    Form(
        "journalctl short-iso",
        "2026-11-22T18:30:01+0000 ip-10-0-1-23 kernel: ",
        "systemd journalctl(1) --output short-iso",
    ),
    Form(
        "journalctl short-full",
        "Sun 2026-11-22 18:30:01 UTC ip-10-0-1-23 kernel: ",
        "systemd journalctl(1) --output short-full",
    ),
    Form(
        "journalctl short-monotonic",
        "[ 3947.590120] ip-10-0-1-23 kernel: ",
        "systemd journalctl(1) --output short-monotonic",
    ),
    Form(
        "Talos",
        "k3s-node5.lab: kern: warning: [2023-08-18T13:36:47.378241465Z]: ",
        "siderolabs/pkgs issue #792 (talosctl dmesg)",
    ),
    Form(
        "Talos, padded level, IP node",
        "172.20.0.5: kern:    info: [2025-09-13T20:46:45.810476849Z]: ",
        "siderolabs/pkgs issue #792, talos-rpi5/talos-builder issue #11 (talosctl dmesg)",
    ),
    Form(
        "Talos, no node",
        " kern: warning: [2024-10-29T13:44:17.655294812Z]: ",
        "openebs/mayastor issue #1330 (talosctl dmesg)",
    ),
    Form(
        "indented paste", "    [ 3947.590120] ", "NVIDIA Developer Forums posts (pasted, indented)"
    ),
)
"""Every form the grammar reads, with a real head of it and where that head is seen."""

UNSPELLED = (
    Form(
        "docker compose logs",
        "dmesg-tail-1  | [ 3947.590120] ",
        "docker compose logs: the service's name and a bar before each line it printed",
    ),
    Form(
        "kubectl logs --prefix",
        "[pod/dmesg-tail-7xk2p/dmesg] [ 3947.590120] ",
        "kubectl logs --prefix: the pod and container in brackets before each line",
    ),
    Form(
        "syslog with a field before the tag",
        "2026-11-22T18:30:01+00:00 gpu-17 relay kernel: ",
        "a relay's own field between the host and the tag (rsyslog templates of sites)",
    ),
    Form(
        "the tag without its space",
        "kernel:",
        "syslog's tag run into the message, as some relays and installers write it",
    ),
)
"""Heads the grammar does not spell out, each read by ``inner_message`` from dmesg's stamp
or syslog's tag within it: the class of heads no one showed us."""
