"""Per-cluster settings, read from the CDK context key ``nodemedic:clusters``.

Every setting is declared once, in ``nodemedic/settings/cluster.py`` (its type, default,
bounds and doc); ``declare`` reads the declarations, ``checks`` says what a bound cannot,
``parse`` reads cdk.json's JSON, ``groups`` judges the cluster's and its groups' settings
together. Everything a caller needs is importable from here.
"""

from nodemedic.settings.checks import LOG_RETENTION_DAYS
from nodemedic.settings.cluster import GROUP_SETTINGS, ClusterSettings
from nodemedic.settings.declare import SettingsError
from nodemedic.settings.parse import CONTEXT_KEY, parse_cluster, parse_clusters

__all__ = [
    "CONTEXT_KEY",
    "GROUP_SETTINGS",
    "LOG_RETENTION_DAYS",
    "ClusterSettings",
    "SettingsError",
    "parse_cluster",
    "parse_clusters",
]
