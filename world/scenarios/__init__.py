"""The demo's scenarios (``registry``), one module each with its plans, and the
verdicts they share."""
