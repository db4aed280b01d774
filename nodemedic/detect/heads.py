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

``headforms.FORMS`` lists each form with a head as its source shows it; the tests strip
every one of them before every catalog example. A head no slot spells is read from dmesg's
stamp or syslog's tag within it (``inner_message``); ``headforms.UNSPELLED`` lists some such
heads.
"""

from __future__ import annotations

import re

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
_MONTH_DAY = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?:[ \d]\d|\d)"
"""A day is padded to two places; a web page collapses the padding (``Feb 2``)."""
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
    r"<(?P<pri>\d{1,3})>(?: ?1 (?=\d{4}-\d\d-\d\dT|- ))?",
    KMSG_PREFIX[1:].replace("?P<pri>", "?P<kpri>"),
    # dmesg --decode's facility and level by name ("kern  :warn  : ").
    rf"(?P<decoded>{_FACILITY}) *:(?:{_LEVEL}) *: ",
    # Talos' "<node>: kern: warning: [<RFC 3339>]: ", the node left out where talosctl
    # asked one node only.
    rf"(?:[\w.-]++: )?(?P<talos>{_FACILITY}): *(?:{_LEVEL}): \[(?P<talos_iso>{_ISO})\]: ",
    # A time: syslog's (RFC 3164, journalctl short and short-precise), ISO 8601 (rsyslog's
    # file format, journalctl short-iso and short-full, dmesg --time-format=iso, Go's time
    # format with its zone's name), ctime (OpenWrt's logread), or a serial console
    # capture's time since it began and the milliseconds since its line before
    # ("00h 02m 10.478s( 227ms): "): the capture's clock, not the node's, so no group keeps
    # it; dmesg's stamp after it times the line. After syslog's time, a host and a program
    # that relays a serial console under its own tag may come before dmesg's stamp
    # ("pi run.sh[75]: UART: "): tried there only, as a bare message's first words would
    # cost every line the try. A relay that leaves the host empty writes two spaces before
    # dmesg's stamp.
    rf"(?P<short>{_MONTH_DAY} {_CLOCK}(?:\.\d+)?) (?: {_STAMP_NEXT})?(?:{_RELAY})?"
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
    # stamp elided or redacted by hand ("[...]", "[xxxxxx]"; or its fraction cut off by a
    # paste, "[  240.]"), where a paste elided a syslog head up to its colon too ("[...]: ").
    r"\[ *(?:(?P<mono>\d+\.\d*)(?: <[ \d.]+>)?|\+\d+[.,]\d+"
    rf"|(?P<dmesg_ctime>{_WEEKDAY} {_MONTH_DAY} {_CLOCK} \d{{4}})"
    rf"|[^\W\d_]{{2,4}}\.? [^\W\d_]{{3,5}}\.? [ \d]\d {_CLOCK} \d{{4}}"
    r"|[A-Z][a-z]{2}\d\d \d\d:\d\d|\.{3,}|x{3,}) *\]:? ?",
    # A second stamp, -T's ctime after -H's relative one: dmesg prints each time format it
    # is given, each in its brackets (``dmesg -x`` with two formats, longhorn issue #12470).
    rf"\[{_WEEKDAY} {_MONTH_DAY} {_CLOCK} \d{{4}}\] ?",
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
