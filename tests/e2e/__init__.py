"""End-to-end: the demo's whole local world, one per package (see ``conftest.py``)."""
