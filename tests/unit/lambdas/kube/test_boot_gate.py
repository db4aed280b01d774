"""A held node's pass must be of its current boot: the previous boot's key still proves
lines between the reboot and the new boot's registration."""

from __future__ import annotations

from lambdas.kube.gate import not_its_boot

OLD, NEW = "8f7c0b1e-old", "3d2a9c44-new"


def test_a_pass_of_the_current_boot_may_admit() -> None:
    assert not_its_boot(NEW, NEW, NEW) is None
    assert not_its_boot(NEW, None, NEW) is None


def test_a_pass_of_the_boot_before_the_reboot_may_not() -> None:
    why = not_its_boot(OLD, NEW, NEW)

    assert why == f"the pass is signed with the key of boot {OLD}, the node's boot is {NEW}"


def test_every_source_of_the_current_boot_must_agree_with_the_key() -> None:
    """The watch saw the new boot come back; a bootID the node wrote back since does not
    make the old key's pass its own."""
    assert not_its_boot(OLD, NEW, OLD) is not None
    assert not_its_boot(NEW, NEW, OLD) is not None


def test_a_pass_naming_a_boot_of_a_node_whose_boot_is_unknown_may_not_admit() -> None:
    assert not_its_boot(NEW, None, None) == (
        f"the pass is signed with the key of boot {NEW}, the node's boot is unknown"
    )


def test_a_pass_naming_no_boot_is_judged_on_its_time_only() -> None:
    """An older classifier's decision (docs/upgrade.md)."""
    assert not_its_boot(None, NEW, NEW) is None
