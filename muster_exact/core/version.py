"""The library's version, in a leaf module: the store's key and the servers' answers read it
without importing the package's front door (which imports the store: a circle)."""

__version__ = "0.1.0"
