"""Helpers the tests import: fixtures live in conftest modules, everything else here."""
