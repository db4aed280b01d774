"""Which lines of a log triage reads whole (``Classifier.suspects``): those holding a
needle, or a literal several groups share. A filter term one rule alone names, a common
word there, must not make every chatter line holding it a suspect."""

from __future__ import annotations

from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier


def test_a_term_one_rule_names_is_the_filter_s_not_the_suspects() -> None:
    catalog = load_catalog()
    (ipoib,) = [rule for rule in catalog.rules if rule.id == "nic-driver-tx-timeout"]
    assert ipoib.term == "timeout"
    lines = [
        "[    3.0] ib0: transmit timeout handler armed",
        "[    4.0] ib0: transmit timeout: latency 20428 msecs",
        "[    5.0] sd 0:0:0:0: [sda] timeout set to 30 seconds",
    ]
    suspects = Classifier(catalog).suspects(lines)
    assert suspects is not None and sorted(suspects) == [1]
