"""A warm Lambda worker process (``lambdaworkers``): one function's invocations, one at a
time, as one container of that function runs them.

It starts as Lambda's init phase does, apart from any invocation: with the function's
environment, it imports the handler named by its one argument, then writes one line, ``{}``,
to say it is ready; the parent times each invocation from its request, so a start on a busy
machine never counts against the function's timeout. An import that fails is retried by the
first invocation, which answers the error as Lambda does.

Each request is a JSON line on standard input: the handler, the event, the context and the
whole environment the function sees. Each reply is a JSON line on the process's original
standard output: the body, whether it is an error, what the handler logged and printed, and
the seconds the call took. File descriptor 1 is pointed at standard error first, so that
nothing a handler or a library writes there can break a reply.

    python -m world.aws.lambdaworker HANDLER
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from world.aws.lambdacall import Context, ThreadOutput, call, resolve_handler


def main() -> None:
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # In place before any handler is imported: Powertools' logger writes to the stream that
    # is ``sys.stdout`` when it is made, and Lambda ships what a function prints to its logs.
    output = ThreadOutput(sys.stdout)
    sys.stdout = output
    with contextlib.suppress(Exception):  # the first invocation answers the error
        resolve_handler(sys.argv[1])
    replies.write("{}\n")
    replies.flush()
    for line in sys.stdin:
        request = json.loads(line)
        os.environ.clear()
        os.environ.update(request["environment"])
        began = time.perf_counter()
        with output.captured() as printed:
            body, is_error, logged = call(
                request["handler"], request["event"], Context(**request["context"])
            )
        reply = {
            "body": body,
            "is_error": is_error,
            "logged": logged,
            "printed": printed.getvalue(),
            "seconds": time.perf_counter() - began,
        }
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
