"""The heads that tools write before a kernel message, as one grammar, each from a source.

The kernel prints a message. Whatever writes it down puts a head before it: ``dmesg``'s
stamp, a syslog daemon's time, host and tag, ``/dev/kmsg``'s record head, Talos' facility
and RFC 3339 time, a serial console's name. Rules match the bare message from its start, so
the head must go, whatever its form; a head left on hides the fault (the same Xid line
detected bare is missed behind a head the grammar does not know).

Tools stack a few kinds of pieces: a time, a host and the ``kernel:`` tag, a facility and
level, dmesg's bracketed stamp, a caller id. ``HEAD`` strips them in one regex match, each
piece an optional slot tried once in the order tools stack them, so a line costs about the
same whatever its form. Each piece is spelled tightly enough (a level from syslog's list, a
stamp of digits, a zone's name) that a kernel message's own start is never taken for one:
``[Hardware Error]: ``, ``[drm] ``, ``audit: ``, ``nfs: server`` and ``EDAC MC0:`` stay.

What is not a head is the matcher's: trailing whitespace (a rule must not demand the end of
the line right after its text), the capitals the kernel or a peer's data spell differently
(a rule's character class, ``Kernel [Pp]anic``), and a line continuing another (SXid's
``Data {...}``, judged by its head line's rule).

``FORMS`` lists each form with a head as its source shows it; the tests strip every one of
them before every catalog example. A head no slot spells is read from dmesg's stamp or
syslog's tag within it (``inner_message``); ``UNSPELLED`` lists some such heads.
"""

from __future__ import annotations

import re
from typing import NamedTuple

KMSG_PREFIX = r"^(?P<pri>\d+),(?P<seq>\d+),(?P<ts>\d+),[^;]*;"
"""The ``priority,sequence,timestamp_us,flags;`` head of a /dev/kmsg record (the agent
matches it on raw bytes, before the ``\\xNN`` escapes are decoded)."""

FACILITIES = {
    name: number
    for number, name in enumerate(
        [
            "kern",
            "user",
            "mail",
            "daemon",
            "auth",
            "syslog",
            "lpr",
            "news",
            "uucp",
            "cron",
            "authpriv",
            "ftp",
        ]
    )
} | {f"local{n}": 16 + n for n in range(8)}
"""Syslog's facility names (RFC 5424 table 1, as syslog(3) spells them)."""
_FACILITY = "|".join(FACILITIES)
_LEVEL = "emerg|alert|crit|err|warning|warn|notice|info|debug"
"""Syslog's level names, and ``warning`` as logread and Talos spell ``warn``."""
_HOST = r"[\w.-]++"
_MONTH_DAY = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d"
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_CLOCK = r"\d\d:\d\d:\d\d"
_ZONE = r"(?:UTC|[A-Z]{1,4}T)"
"""A zone's name (``UTC``, ``CEST``): a word in capitals that is not one would be a message's
first (``EDAC``)."""
_ISO = rf"\d{{4}}-\d\d-\d\d[T ]{_CLOCK}(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"

_TAG = rf"(?:{_HOST} )?kernel(?::(?: |(?=\[ *\d))| - - (?:-|\[[^\]]*\]) )"
"""The syslog tag, with the host before it or not; in RFC 5424's form, the app name and
the nil process id, message id and structured data (or one element of it). syslogd's wall
message and some relays write dmesg's stamp right after the tag (``kernel:[ 12.345678]``)."""

_STAMP_NEXT = r"(?=\[ *\d+\.\d+\])"
"""dmesg's stamp in seconds comes next: what a word before it must be followed by."""
_RELAY = rf"[\w.-]++ [\w.-]++\[\d++\]: (?:\w++: )?{_STAMP_NEXT}"
"""A host and a program's syslog tag (and a word of its own) before dmesg's stamp."""

_SLOTS = (
    # Indentation of a pasted log, or grep -n's line number before a syslog line.
    rf"[ \t]++|\d++:(?={_MONTH_DAY} )",
    # dmesg -r's <priority> (RFC 5424's, with its version, which a paste may space off), and
    # a /dev/kmsg record's head.
    r"<(?P<pri>\d{1,3})> ?(?:1 )?",
    KMSG_PREFIX[1:].replace("?P<pri>", "?P<kpri>"),
    # dmesg --decode's facility and level by name ("kern  :warn  : ").
    rf"(?P<decoded>{_FACILITY}) *:(?:{_LEVEL}) *: ",
    # Talos' "<node>: kern: warning: [<RFC 3339>]: ".
    rf"[\w.-]++: (?P<talos>{_FACILITY}): *(?:{_LEVEL}): \[(?P<talos_iso>{_ISO})\]: ",
    # A time: syslog's (RFC 3164, journalctl short and short-precise), ISO 8601 (rsyslog's
    # file format, journalctl short-iso and short-full, dmesg --time-format=iso, Go's time
    # format with its zone's name), ctime (OpenWrt's logread), or a serial console
    # capture's time since it began and the milliseconds since its line before
    # ("00h 02m 10.478s( 227ms): "): the capture's clock, not the node's, so no group keeps
    # it; dmesg's stamp after it times the line. After syslog's time, a host and a program
    # that relays a serial console under its own tag may come before dmesg's stamp
    # ("pi run.sh[75]: UART: "): tried there only, as a bare message's first words would
    # cost every line the try.
    rf"(?P<short>{_MONTH_DAY} {_CLOCK}(?:\.\d+)?) (?:{_RELAY})?"
    rf"|(?:{_WEEKDAY} )?(?P<iso>{_ISO})(?: (?P<offset>[+-]\d{{4}}))?(?: {_ZONE})? "
    rf"|(?P<ctime>{_WEEKDAY} {_MONTH_DAY} {_CLOCK} \d{{4}}) "
    r"|\d\d+h \d\dm \d\d\.\d{3}s\( *\d+ms\): ",
    # A facility and level by name, as logread and busybox syslogd write them ("kern.warn ").
    rf"(?:{_HOST} )?(?P<facility>{_FACILITY})\.(?:{_LEVEL}) ",
    _TAG,
    # A serial console's or hypervisor's name before dmesg's stamp.
    rf"[^\s\[\]]++ {_STAMP_NEXT}",
    # dmesg's stamp (``_BRACKETED``'s first slot): seconds since boot (with -d's delta),
    # -T's ctime (in English, or another locale's names of the day and month, not kept as
    # a time), -H's relative seconds (a decimal comma in some locales) and minute, or a
    # stamp elided by hand (or its fraction cut off by a paste, "[  240.]"), where a paste
    # elided a syslog head up to its colon too ("[...]: ").
    r"\[ *(?:(?P<mono>\d+\.\d*)(?: <[ \d.]+>)?|\+\d+[.,]\d+"
    rf"|(?P<dmesg_ctime>{_WEEKDAY} {_MONTH_DAY} {_CLOCK} \d{{4}})"
    rf"|[^\W\d_]{{2,4}}\.? [^\W\d_]{{3,5}}\.? [ \d]\d {_CLOCK} \d{{4}}"
    r"|[A-Z][a-z]{2}\d\d \d\d:\d\d|\.{3,}) *\]:? ?",
    # The tag again: dmesg -T's lines as GPUd's data and journalctl -o short-monotonic
    # write them put the host and tag after the stamp.
    _TAG,
    # The caller id of a kernel built with CONFIG_PRINTK_CALLER.
    r"\[ *[TC]\d+\] ?",
)


def _slots(slots: tuple[str, ...]) -> re.Pattern[str]:
    """Each slot optional, as an alternation with nothing: ``re`` tries it as it would an
    optional group (the slot first), without the repeat an optional group compiles to,
    which cost a fifth of a head's match."""
    return re.compile("".join(f"(?:{slot}|)" for slot in slots))


HEAD = _slots(_SLOTS)
"""The head at the start of a line: each slot, in the order tools stack them, is tried
once. It always matches (an empty head for a bare message), and ``end()`` is where the
message starts. Its times (``stamp``) are in groups: ``iso`` (with ``offset`` where the
zone follows apart) or ``talos_iso``, ``ctime`` or ``dmesg_ctime``, syslog's ``short``
(no year), seconds since boot in ``mono`` or microseconds in ``ts``."""
_STAMP = next(n for n, slot in enumerate(_SLOTS) if slot.startswith(r"\[ *(?:(?P<mono>"))
_BRACKETED = _slots(_SLOTS[_STAMP:])
"""``HEAD`` for a line that starts with ``[`` (dmesg's lines): no slot before dmesg's stamp
can start with one (each starts with whitespace, ``<``, a digit, a word character or, the
console's name, anything but a bracket), and as every slot is optional, ``HEAD`` takes
each slot's first match in turn. So the slots from the stamp on match alike, without a try
of each slot before it, which would cost more than the rest of reading the line."""


INNER_REACH = 96
"""How far into a line a head the grammar does not know may end (``inner_message``)."""
_STAMP_ALONE = re.compile(r"\[ *\+?\d+[.,]\d*\] ?")
_TAG_TEXT = "kernel:"
_FOLD = "message repeated "
_DRIVER_TAG = " NVRM: "
"""The NVIDIA driver's own tag: a monitor that quotes its line without the kernel's head
(``[gpu-health] [CRITICAL] GPU-1234: XID: NVRM: Xid ...``) still quotes the tag, which
only the driver prints."""
_ENDS = frozenset("]:;>")
"""The last characters of a head that ends where the message starts: dmesg's stamp or a
caller id, a syslog or Talos tag, a kmsg record's head, a priority. A head that ends with
a time or an indentation may have more before the message that the grammar does not know."""


def inner_message(text: str) -> str:
    """``text`` from after dmesg's stamp or syslog's ``kernel:`` tag, whichever ends later,
    in its first ``INNER_REACH`` characters; where it holds neither, from the NVIDIA
    driver's tag (``_DRIVER_TAG``); ``text`` itself where it holds none.

    A head the grammar does not know (a relay's tag, a container log's prefix, a paste's
    own) is left on the message, and a rule, which matches from the message's start,
    misses the fault behind it. Whatever wrote such a head, the kernel's message follows
    dmesg's stamp or syslog's tag: every form carries one of them. Each is found at C
    speed (``str.find``, a search that starts with a literal), so a line without either
    costs two finds."""
    end = text.find(_TAG_TEXT, 0, INNER_REACH)
    end = end + len(_TAG_TEXT) if end == 0 or (end > 0 and text[end - 1] in " \t|") else 0
    bracket = text.find("[", end, INNER_REACH)
    if bracket >= 0 and (stamp := _STAMP_ALONE.search(text, bracket, INNER_REACH)) is not None:
        end = stamp.end()
    elif end and text[end : end + 1] == " ":
        end += 1
    elif not end and (driver := text.find(_DRIVER_TAG, 0, INNER_REACH)) >= 0:
        end = driver + 1
    return text[end:] if 0 < end < len(text) else text


def _unknown(text: str) -> str:
    """``inner_message``'s, tried only where the text holds a bracket or one of the tags
    anywhere (three ``in`` tests at C speed): most bare messages hold none. rsyslog's fold
    of a run of one line is left whole: ``logformat`` reads the line inside it."""
    held = "[" in text or _TAG_TEXT in text or _DRIVER_TAG in text
    return inner_message(text) if held and not text.startswith(_FOLD) else text


def strip_head(line: str) -> tuple[str, int | None]:
    """``line`` without its head, and the syslog facility the head names (a priority's, or
    a facility by name); None where it names none. Where the head is none the grammar
    knows, or ends before the message (``_ENDS``), the rest is read by ``inner_message``."""
    if line[:1] == "[":  # dmesg's: its head names no facility
        bracketed = _BRACKETED.match(line)
        if bracketed is None or not bracketed.end():
            return _unknown(line), None
        return line[bracketed.end() :], None
    head = HEAD.match(line)
    if head is None or not head.end():  # a bare message: one failed try per piece
        return _unknown(line), None
    end = head.end()
    known = line[end - 1] in _ENDS or (end > 1 and line[end - 2] in _ENDS)
    rest = line[end:] if known else _unknown(line[end:])
    pri, kpri, facility, decoded, talos = head.group("pri", "kpri", "facility", "decoded", "talos")
    priority = pri or kpri
    if priority is not None:
        return rest, int(priority) >> 3
    named = facility or decoded or talos
    return rest, None if named is None else FACILITIES[named]


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
        "elided stamp",
        "[...] ",
        "leptonai/gpud components/accelerator/nvidia/infiniband/kmsg_matcher.go comments",
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
