"""The node agent: the only nodemedic code on a training node.

It reads the kernel log (``/dev/kmsg``) and runs hardware health checks, and ships both to
CloudWatch Logs without losing or inventing a line. It shares the node with a job that
costs thousands of dollars an hour, so it blocks instead of polling and keeps its memory
bounded: a burst goes to a bounded on-disk spool, never to an unbounded queue.
"""
