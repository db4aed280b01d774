"""Where the repository and its recorded real payloads are."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "events"
