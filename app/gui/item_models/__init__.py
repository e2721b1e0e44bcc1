"""Thin ``QAbstractItemModel`` adapters over the Qt-free state."""
