"""Fleet correlation in the flow: sight, gate, and judge before the irreversible step.

The rules and the arithmetic are ``nodemedic.remediate.fleet``'s. Here they become states,
four phases of the flow and two branches they share:

- ``sight`` (acting plans, right after planning, before the lock and the breaker): one
  conditional update adds the node to its fault's window in its group, or opens a new
  window. No wait: the cordon is as quick as before.
- ``gate`` (once the node lock is taken, before the breaker): a window already declared
  a fleet event, or one that this sighting makes one (judged at once, no settle), makes
  this decision monitor-only from the start (``hold``), never cordoned.
- ``recheck`` (once admitted, for a decision the breaker held): the event may have been
  declared while it waited.
- ``judge`` (drained, right before reboot or replace): wait until ``fleet_settle`` has
  passed since the window opened, then judge; a fleet event is declared (``declare``) by
  one conditional write, whose winner sends the one notification listing the nodes.
- ``hold``: the node is given back marked (``kube hold``: condition, health label, the
  fleet label and condition; taint and cordon off), and the report ends the remediation
  with the outcome ``fleet`` (no mail of its own), releasing its slot and lock.

``window`` reads and judges a fault's window for the gate, the judgement and the
declaration's mail.
"""
