"""Repeated passes on a thread of their own, as the simulated kubelet and the training job's
controllers run against the local kube-apiserver."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kubernetes import client
from urllib3.exceptions import HTTPError

_log = logging.getLogger(__name__)


class Passes:
    """Runs a pass every ``interval`` seconds between ``start`` and ``stop``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, one_pass: Callable[[], None], interval: float) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(one_pass, interval), name=self.name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self, one_pass: Callable[[], None], interval: float) -> None:
        while not self._stopping.wait(interval):
            try:
                one_pass()
            except (client.ApiException, HTTPError) as exc:
                # A pass lost to a conflict or a restarting API server is redone next pass.
                _log.debug("%s pass failed: %s", self.name, exc)
