"""The environment config: schema, cross-field rules and the loader. Imports no CDK."""

from hubspoke.config.loader import ConfigError, LoadedConfig, format_problem, load, load_environments
from hubspoke.config.schema import HubSpokeConfig, RegionConfig, SpokeConfig
from hubspoke.config.sections import Problem

__all__ = [
    "ConfigError",
    "HubSpokeConfig",
    "LoadedConfig",
    "Problem",
    "RegionConfig",
    "SpokeConfig",
    "format_problem",
    "load",
    "load_environments",
]
