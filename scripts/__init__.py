"""Generators run by hand (``make xid-rules``); not part of any bundle or image."""
