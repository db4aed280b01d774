"""A warm Lambda worker process (``lambdaworkers``): one function's invocations, one at a
time, as one container of that function runs them.

Each request is a JSON line on standard input: the handler, the event, the context and the
whole environment the function sees. Each reply is a JSON line on the process's original
standard output: the body, whether it is an error, what the handler logged and printed, and
the seconds the call took. File descriptor 1 is pointed at standard error first, so that
nothing a handler or a library writes there can break a reply.

    python -m world.aws.lambdaworker
"""

from __future__ import annotations

import json
import os
import sys
import time

from world.aws.lambdacall import Context, ThreadOutput, call


def main() -> None:
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # In place before any handler is imported: Powertools' logger writes to the stream that
    # is ``sys.stdout`` when it is made, and Lambda ships what a function prints to its logs.
    output = ThreadOutput(sys.stdout)
    sys.stdout = output
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
