"""See the package docs."""
