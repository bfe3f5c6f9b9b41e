"""The package version, recorded in every result file."""
__version__ = "0.1.0"
