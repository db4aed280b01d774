"""What in-process Lambdas print goes to their log streams, and nothing else the world
prints is lost or fails: a test's output capture may close while a Lambda still runs."""

from __future__ import annotations

import gc
import io
import sys
import threading
import weakref

import pytest

from world.aws.inprocess import _printed
from world.aws.lambdacall import ThreadOutput


def test_the_invoking_threads_writes_are_its_own_and_the_others_pass_through() -> None:
    stream = io.StringIO()
    output = ThreadOutput(stream)
    with output.captured() as printed:
        output.write("metric line\n")
        other = threading.Thread(target=output.write, args=("world line\n",))
        other.start()
        other.join()

    assert printed.getvalue() == "metric line\n"
    assert stream.getvalue() == "world line\n"


def test_a_closed_capture_sends_the_worlds_lines_to_the_process_output(
    capfd: pytest.CaptureFixture[str],
) -> None:
    ended = io.StringIO()
    ended.close()
    output = ThreadOutput(ThreadOutput(ended))  # a Lambda's wrapper around an older one

    output.write("AWS: stack deployed\n")
    output.flush()

    assert "AWS: stack deployed" in capfd.readouterr().out


def test_a_stand_in_outlives_its_turn_in_sys_stdout() -> None:
    # Another thread's print may still be writing through it (python/cpython#130163).
    with _printed():
        stand_in = weakref.ref(sys.stdout)
    gc.collect()

    assert stand_in() is not None
    assert sys.stdout is not stand_in()
