"""One QObject per feature: state, its item models, and the worker calls that feed them."""
